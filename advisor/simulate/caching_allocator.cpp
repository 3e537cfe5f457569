#include "simulate/caching_allocator.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gcprof::advisor {
namespace {

// c10/cuda/CUDACachingAllocator.cpp's constants.
constexpr Bytes kMinBlockSize = 512;         // every size is rounded to 512 bytes
constexpr Bytes kSmallSize = 1 << 20;        // the largest request of the small pool
constexpr Bytes kSmallBuffer = 2 << 20;      // small-pool segments
constexpr Bytes kMinLargeAlloc = 10 << 20;   // large requests under this share a kLargeBuffer segment
constexpr Bytes kLargeBuffer = 20 << 20;
constexpr Bytes kRoundLarge = 2 << 20;       // larger segments are rounded to this
// An expandable segment reserves address space for the whole device; the
// model lays each one out this far apart.
constexpr Bytes kExpandableSpace = Bytes{1} << 44;

Bytes roundUp(Bytes v, Bytes to) { return (v + to - 1) / to * to; }

bool isPowerOfTwo(Bytes v) { return v > 0 && (v & (v - 1)) == 0; }

Bytes powerOfTwoFloor(Bytes v) {
  Bytes p = 1;
  while (p <= v / 2) p <<= 1;
  return p;
}

// roundup_power2_next_division: the next of `divisions` equal steps between
// the powers of two around `size` (1200 in 4 divisions: 1280).
Bytes nextDivision(Bytes size, size_t divisions) {
  if (isPowerOfTwo(size)) return size;
  Bytes floor = powerOfTwoFloor(size);
  Bytes step = floor / static_cast<Bytes>(powerOfTwoFloor(static_cast<Bytes>(divisions)));
  if (step == 0) return floor * 2;
  Bytes down = size & ~(step - 1);
  return down == size ? size : down + step;
}

}  // namespace

CachingAllocatorModel::CachingAllocatorModel(AllocatorSettings settings) : s_(std::move(settings)) {}

Bytes CachingAllocatorModel::roundSize(Bytes size, const AllocatorSettings& s) {
  if (size < kMinBlockSize) return kMinBlockSize;
  size_t divisions = s.divisionsFor(size);
  if (divisions > 1 && size > kMinBlockSize * static_cast<Bytes>(divisions)) return nextDivision(size, divisions);
  return roundUp(size, kMinBlockSize);
}

Bytes CachingAllocatorModel::segmentSize(Bytes rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return roundUp(rounded, kRoundLarge);
}

CachingAllocatorModel::BlockId CachingAllocatorModel::newBlock(const Block& b) {
  if (!spare_.empty()) {
    BlockId id = spare_.back();
    spare_.pop_back();
    blocks_[static_cast<size_t>(id)] = b;
    return id;
  }
  blocks_.push_back(b);
  return static_cast<BlockId>(blocks_.size() - 1);
}

void CachingAllocatorModel::insertFree(BlockId id) {
  const Block& b = blocks_[static_cast<size_t>(id)];
  free_[b.small].insert({b.stream, b.size, b.addr, id});
}

void CachingAllocatorModel::eraseFree(BlockId id) {
  const Block& b = blocks_[static_cast<size_t>(id)];
  free_[b.small].erase({b.stream, b.size, b.addr, id});
}

// What a block next to the unmapped tail could grow to: with expandable
// segments, best fit prefers any other block to one it could extend.
Bytes CachingAllocatorModel::expandableSize(BlockId id) const {
  const Block& b = blocks_[static_cast<size_t>(id)];
  if (b.next >= 0 && !blocks_[static_cast<size_t>(b.next)].mapped) return b.size + blocks_[static_cast<size_t>(b.next)].size;
  return b.size;
}

// get_free_block: the smallest free block of the stream's pool that fits,
// unless max_split_size rules it out.
CachingAllocatorModel::BlockId CachingAllocatorModel::findFree(Bytes size, int64_t stream, bool small) {
  std::set<FreeKey>& pool = free_[small];
  auto it = pool.lower_bound({stream, size, 0, -1});
  if (it == pool.end() || it->stream != stream) return -1;
  if (s_.expandable_segments) {
    for (auto next = std::next(it); next != pool.end() && next->stream == stream &&
                                    expandableSize(next->id) < expandableSize(it->id);
         ++next)
      it = next;
  }
  if (size < s_.max_split_size && it->size >= s_.max_split_size) return -1;
  if (size >= s_.max_split_size && it->size >= size + s_.max_non_split_rounding) return -1;
  BlockId id = it->id;
  pool.erase(it);
  return id;
}

void CachingAllocatorModel::grew(Bytes bytes) {
  reserved_ += bytes;
  peak_reserved_ = std::max(peak_reserved_, reserved_);
  ++segments_;
}

// alloc_block: a cudaMalloc of the pool's segment size.
CachingAllocatorModel::BlockId CachingAllocatorModel::newSegment(Bytes size, int64_t stream, bool small) {
  Bytes bytes = segmentSize(size);
  Block b;
  b.stream = stream;
  b.addr = next_addr_;
  b.size = bytes;
  b.small = small;
  next_addr_ += roundUp(bytes, kRoundLarge);
  grew(bytes);
  return newBlock(b);
}

// map_block: maps whole pages at the start of the unmapped tail; returns
// the new mapped block, linked in before the tail.
CachingAllocatorModel::BlockId CachingAllocatorModel::mapPages(BlockId tail, Bytes bytes) {
  Block t = blocks_[static_cast<size_t>(tail)];
  Bytes page = t.small ? kSmallBuffer : kLargeBuffer;
  Bytes mapped = roundUp(bytes, page);
  Block m = t;
  m.mapped = true;
  m.size = mapped;
  m.next = tail;
  BlockId id = newBlock(m);
  if (t.prev >= 0) blocks_[static_cast<size_t>(t.prev)].next = id;
  Block& tb = blocks_[static_cast<size_t>(tail)];
  tb.prev = id;
  tb.addr += mapped;
  tb.size -= mapped;
  grew(mapped);
  return id;
}

// try_allocate_expandable_block: the stream's segment for this pool grows
// at its end, extending the free block before the tail when there is one.
CachingAllocatorModel::BlockId CachingAllocatorModel::growExpandable(Bytes size, int64_t stream, bool small) {
  auto key = std::make_pair(stream, small);
  auto found = tails_.find(key);
  if (found == tails_.end()) {
    Block t;
    t.stream = stream;
    t.addr = next_addr_;
    t.size = kExpandableSpace;
    t.small = small;
    t.mapped = false;
    next_addr_ += kExpandableSpace;
    found = tails_.emplace(key, newBlock(t)).first;
  }
  BlockId tail = found->second;
  BlockId before = blocks_[static_cast<size_t>(tail)].prev;
  if (before < 0 || blocks_[static_cast<size_t>(before)].allocated) return mapPages(tail, size);
  eraseFree(before);
  BlockId more = mapPages(tail, size - blocks_[static_cast<size_t>(before)].size);
  merge(before, more);
  return before;
}

// should_split: small pools and expandable segments keep any remainder of
// a block; large blocks only a remainder over 1 MiB, and never when the
// request reaches max_split_size.
bool CachingAllocatorModel::shouldSplit(const Block& b, Bytes size) const {
  Bytes rest = b.size - size;
  if (b.small || s_.expandable_segments) return rest >= kMinBlockSize;
  return size < s_.max_split_size && rest > kSmallSize;
}

// alloc_found_block: the request takes the block's start, the rest stays free.
CachingAllocatorModel::BlockId CachingAllocatorModel::split(BlockId id, Bytes size) {
  Block rest = blocks_[static_cast<size_t>(id)];
  rest.addr += size;
  rest.size -= size;
  rest.prev = id;
  BlockId rid = newBlock(rest);
  Block& b = blocks_[static_cast<size_t>(id)];
  if (b.next >= 0) blocks_[static_cast<size_t>(b.next)].prev = rid;
  b.next = rid;
  b.size = size;
  insertFree(rid);
  return id;
}

// try_merge_blocks: `src`, a free neighbour of `dst` (mapped alike), joins it.
void CachingAllocatorModel::merge(BlockId dst, BlockId src) {
  if (src < 0) return;
  Block& s = blocks_[static_cast<size_t>(src)];
  Block& d = blocks_[static_cast<size_t>(dst)];
  if (s.allocated || s.mapped != d.mapped) return;
  if (s.mapped) eraseFree(src);
  if (d.prev == src) {
    d.addr = s.addr;
    d.prev = s.prev;
    if (d.prev >= 0) blocks_[static_cast<size_t>(d.prev)].next = dst;
  } else {
    d.next = s.next;
    if (d.next >= 0) blocks_[static_cast<size_t>(d.next)].prev = dst;
  }
  d.size += s.size;
  spare_.push_back(src);
}

CachingAllocatorModel::BlockId CachingAllocatorModel::malloc(Bytes size, int64_t stream) {
  if (size < 0) throw std::invalid_argument("caching allocator model: negative size " + std::to_string(size));
  Bytes rounded = roundSize(size, s_);
  bool small = rounded <= kSmallSize;
  BlockId id = findFree(rounded, stream, small);
  if (id < 0)
    id = s_.expandable_segments ? growExpandable(rounded, stream, small) : newSegment(rounded, stream, small);
  if (shouldSplit(blocks_[static_cast<size_t>(id)], rounded)) id = split(id, rounded);
  Block& b = blocks_[static_cast<size_t>(id)];
  b.allocated = true;
  allocated_ += b.size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return id;
}

// free_block: the block returns to its pool, merged with free neighbours.
// The segment stays reserved: only empty_cache() or an out-of-memory retry
// gives memory back, and neither is modelled.
void CachingAllocatorModel::free(BlockId id) {
  if (id < 0 || static_cast<size_t>(id) >= blocks_.size() || !blocks_[static_cast<size_t>(id)].allocated)
    throw std::invalid_argument("caching allocator model: free of block " + std::to_string(id) +
                                ", which is not allocated");
  Block& b = blocks_[static_cast<size_t>(id)];
  b.allocated = false;
  allocated_ -= b.size;
  merge(id, b.prev);
  merge(id, blocks_[static_cast<size_t>(id)].next);
  insertFree(id);
}

}  // namespace gcprof::advisor
