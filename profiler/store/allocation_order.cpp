#include "allocation_order.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace gcprof {
namespace {

int bitWidth(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

// MSD radix sort in place (American flag sort) of 64-bit keys, a byte at a
// time from bit `bits` down (the bits above are zero): no second buffer of
// keys, which an LSD sort's passes need (82 MB more of a 10M-row load, at
// its peak). Comparison sorts met the recorder's free order as a bad case:
// libstdc++'s introsort fell back to heapsort on it; here only runs of at
// most 64 keys are compared.
void radixSort(uint64_t* first, uint64_t* last, int bits) {
  if (last - first <= 64 || bits <= 0) {
    std::sort(first, last);
    return;
  }
  const int shift = std::max(0, bits - 8);
  const uint64_t mask = (uint64_t{1} << (bits - shift)) - 1;
  auto digit = [&](uint64_t k) { return static_cast<size_t>((k >> shift) & mask); };
  size_t head[256] = {}, tail[256] = {};
  for (uint64_t* p = first; p != last; ++p) ++tail[digit(*p)];
  for (size_t b = 0, at = 0; b <= mask; ++b) {
    head[b] = at;
    at += tail[b];
    tail[b] = at;
  }
  // Each key goes to the next free place of its digit's bucket; the key it
  // displaces goes on in its place, until one of this bucket comes back.
  for (size_t b = 0; b <= mask; ++b) {
    while (head[b] < tail[b]) {
      uint64_t k = first[head[b]];
      for (size_t d = digit(k); d != b; d = digit(k)) std::swap(k, first[head[d]++]);
      first[head[b]++] = k;
    }
  }
  // Only buckets of two keys or more: at 10M keys the third level's
  // buckets hold one key or none, 16.7M calls for nothing.
  for (size_t b = 0, from = 0; b <= mask; from = tail[b], ++b)
    if (tail[b] - from > 1) radixSort(first + from, first + tail[b], shift);
}

// The rows in (alloc, row) order, as row numbers.
std::vector<uint64_t> rowsByAllocation(const AllocationBlocks& a) {
  const size_t n = a.size();
  Ns lo = a[0].alloc, hi = lo;
  for (size_t i = 1; i < n; ++i) {
    lo = std::min(lo, a[i].alloc);
    hi = std::max(hi, a[i].alloc);
  }
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  const int row_bits = bitWidth(n - 1);
  std::vector<uint64_t> keys(n);
  if (row_bits + bitWidth(span) <= 64) {
    // One word a row: the time since the first allocation above the row
    // number, so that equal times keep the rows' order.
    const uint64_t base = static_cast<uint64_t>(lo);
    for (size_t i = 0; i < n; ++i) keys[i] = ((static_cast<uint64_t>(a[i].alloc) - base) << row_bits) | i;
    radixSort(keys.data(), keys.data() + n, row_bits + bitWidth(span));
    const uint64_t mask = row_bits == 64 ? ~uint64_t{0} : (uint64_t{1} << row_bits) - 1;
    for (uint64_t& k : keys) k &= mask;
    return keys;
  }
  // A run too long for one word (times spanning centuries of nanoseconds).
  for (size_t i = 0; i < n; ++i) keys[i] = i;
  std::sort(keys.begin(), keys.end(), [&](uint64_t x, uint64_t y) {
    return a[x].alloc != a[y].alloc ? a[x].alloc < a[y].alloc : x < y;
  });
  return keys;
}

// Where the rows copied out go next, ahead of the last one written: a
// released block's pages are moved there rather than unmapped, so that the
// copy writes to pages already faulted in instead of fresh ones the kernel
// must map and zero (the 740 MB of a 10M-row load: ~0.3 s of system time).
// Only in a vector of its own mapping (glibc maps any allocation above 32 MB
// by itself), not among the heap's chunks.
class SpareCapacity {
 public:
  explicit SpareCapacity(std::vector<Allocation>& out) : out_(out) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    mask_ = ~(uintptr_t{page} - 1);
    const size_t bytes = out.capacity() * sizeof(Allocation);
    if (bytes >= (size_t{64} << 20)) end_ = (address(out.data()) + bytes) & mask_;
  }
  void take(AllocationBlocks& read, size_t b) {
    const uintptr_t written = address(out_.data() + out_.size());
    const uintptr_t at = std::max(next_, (written + ~mask_) & mask_);
    if (at + AllocationBlocks::kBytes <= end_ && read.releaseTo(b, reinterpret_cast<void*>(at)))
      next_ = at + AllocationBlocks::kBytes;
    else
      read.release(b);
  }

 private:
  static uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }
  std::vector<Allocation>& out_;
  uintptr_t mask_ = 0;
  uintptr_t end_ = 0;   // the last whole page of the capacity ends here (0: none to give)
  uintptr_t next_ = 0;  // not given a block yet from here on
};

// Rows at one instant go by id (a row's place in the file is not its id).
void orderTiesById(Allocation* first, Allocation* last) {
  for (Allocation* i = first; i != last;) {
    Allocation* j = i + 1;
    while (j != last && j->alloc == i->alloc) ++j;
    if (j - i > 1) std::sort(i, j, [](const Allocation& x, const Allocation& y) { return x.id < y.id; });
    i = j;
  }
}

}  // namespace

void moveByAllocation(AllocationBlocks& read, std::vector<Allocation>& out) {
  const size_t n = read.size();
  if (n == 0) return;
  const std::vector<uint64_t> rows = rowsByAllocation(read);
  std::vector<uint32_t> left(read.blocks());
  for (size_t b = 0; b < left.size(); ++b) left[b] = static_cast<uint32_t>(read.rowsIn(b));
  const size_t from = out.size();
  out.reserve(from + n);
  SpareCapacity spare(out);
  // The loads are independent: asked for a few rows ahead, their misses
  // overlap (a row spans two cache lines at most).
  constexpr size_t kAhead = 16;
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) {
      const char* next = reinterpret_cast<const char*>(&read[rows[i + kAhead]]);
      __builtin_prefetch(next);
      __builtin_prefetch(next + sizeof(Allocation) - 1);
    }
    out.push_back(read[rows[i]]);
    const size_t b = rows[i] >> AllocationBlocks::kShift;
    if (--left[b] == 0) spare.take(read, b);
  }
  read = AllocationBlocks();
  orderTiesById(out.data() + from, out.data() + out.size());
}

void sortByAllocation(std::vector<Allocation>& a) {
  AllocationBlocks read;
  read.append(a.data(), a.size());
  a.clear();
  moveByAllocation(read, a);
}

}  // namespace gcprof
