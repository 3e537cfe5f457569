// A model of PyTorch's native CUDA caching allocator (c10/cuda/
// CUDACachingAllocator.cpp, DeviceCachingAllocator) that answers one
// question: given a sequence of tensor allocations and frees on one device,
// how much memory does the allocator reserve from the driver? It follows the
// allocator's policy, not its code:
//   - sizes are rounded to 512-byte blocks, or to power-of-two divisions
//     (round_size, roundup_power2_divisions);
//   - requests of 1 MiB and less use the small pool, larger ones the large
//     pool; free blocks are reused per stream and pool, best fit (smallest
//     block that fits, lowest address among equals);
//   - a new segment is 2 MiB for the small pool, 20 MiB for large requests
//     under 10 MiB, else the request rounded up to 2 MiB
//     (get_allocation_size);
//   - a block is split when the rest is worth keeping (should_split) and
//     merged with free neighbours when freed (free_block);
//   - max_split_size: blocks that large are neither split nor handed to
//     smaller requests, and only to requests within max_non_split_rounding
//     of their size (get_free_block);
//   - expandable_segments: one segment per stream and pool that grows by
//     2 MiB (small) or 20 MiB (large) pages mapped at its end
//     (try_allocate_expandable_block).
// Not modelled (docs/cuda.md): out-of-memory retries that release cached
// segments, empty_cache(), garbage_collection_threshold, memory fractions,
// record_stream's deferred frees, CUDA graph private pools, and the real
// addresses cudaMalloc returns (segments are laid out in creation order).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "simulate/allocator_settings.h"

namespace gcprof::advisor {

class CachingAllocatorModel {
 public:
  using BlockId = int32_t;

  explicit CachingAllocatorModel(AllocatorSettings settings = {});

  BlockId malloc(Bytes size, int64_t stream);
  void free(BlockId block);

  Bytes reserved() const { return reserved_; }    // torch.cuda.memory_reserved
  Bytes allocated() const { return allocated_; }  // torch.cuda.memory_allocated (rounded blocks)
  Bytes peakReserved() const { return peak_reserved_; }
  Bytes peakAllocated() const { return peak_allocated_; }
  int64_t segmentsCreated() const { return segments_; }  // cudaMalloc calls or page mappings
  Bytes blockSize(BlockId block) const { return blocks_[static_cast<size_t>(block)].size; }

  // c10's round_size and get_allocation_size.
  static Bytes roundSize(Bytes size, const AllocatorSettings& settings);
  static Bytes segmentSize(Bytes rounded);

 private:
  struct Block {
    int64_t stream = 0;
    Bytes addr = 0;
    Bytes size = 0;
    BlockId prev = -1, next = -1;
    bool small = false;
    bool allocated = false;
    bool mapped = true;  // false only for an expandable segment's unmapped tail
  };
  // The pools' order (BlockComparatorSize): stream, then size, then address.
  struct FreeKey {
    int64_t stream;
    Bytes size;
    Bytes addr;
    BlockId id;
    bool operator<(const FreeKey& o) const {
      if (stream != o.stream) return stream < o.stream;
      if (size != o.size) return size < o.size;
      if (addr != o.addr) return addr < o.addr;
      return id < o.id;
    }
  };

  BlockId newBlock(const Block& b);
  void insertFree(BlockId id);
  void eraseFree(BlockId id);
  BlockId findFree(Bytes size, int64_t stream, bool small);
  BlockId newSegment(Bytes size, int64_t stream, bool small);
  BlockId growExpandable(Bytes size, int64_t stream, bool small);
  BlockId mapPages(BlockId tail, Bytes bytes);
  bool shouldSplit(const Block& b, Bytes size) const;
  BlockId split(BlockId id, Bytes size);
  void merge(BlockId dst, BlockId src);
  Bytes expandableSize(BlockId id) const;
  void grew(Bytes bytes);

  AllocatorSettings s_;
  std::vector<Block> blocks_;
  std::vector<BlockId> spare_;
  std::set<FreeKey> free_[2];                          // [small]
  std::map<std::pair<int64_t, bool>, BlockId> tails_;  // expandable: (stream, small) -> unmapped tail
  Bytes next_addr_ = 0;
  Bytes reserved_ = 0, allocated_ = 0, peak_reserved_ = 0, peak_allocated_ = 0;
  int64_t segments_ = 0;
};

}  // namespace gcprof::advisor
