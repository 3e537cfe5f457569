// The blocks glibc's malloc holds for a process, read from its heaps: what a
// job allocated before `gcprof attach` came (parameters, gradients, optimizer
// state, the python heap, the libraries' own), which no hook saw. Recorded as
// the attached run's baseline, it makes the run's host peaks absolute.
//
// What is walked (glibc's layout on 64-bit Linux, checked as it is read):
// - the main arena, the `[heap]` mapping: chunk after chunk up to its top;
// - the other arenas' heaps (64 MiB-aligned anonymous mappings that start
//   with glibc's heap_info), from their first chunk up to heap_info.size;
// - mmapped chunks (large blocks), found at the start of pages of anonymous
//   mappings by their header (IS_MMAPPED, a size that fills whole pages).
// The job's threads keep allocating while it is read: where the chain of
// chunk sizes breaks, the last chunks are read again and the walk goes on;
// a region whose chunks still do not lead, size by size, exactly to its end
// is read again from its start, a few times, and then not taken (another
// allocator, or a heap changing too fast): `regions_skipped` counts them.
// Memory is read with process_vm_readv, so a mapping unmapped meanwhile
// fails the read instead of faulting.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gcprof::inject {

struct HeapBlock {
  uint64_t addr = 0;  // what malloc returned
  int64_t bytes = 0;  // its usable size: the request rounded up by less than 32 B
};

// One walk, taken when constructed. Its list lives in pages of its own, not
// in malloc's heap, so that a walk never finds its own bookkeeping.
class HeapWalk {
 public:
  // In-use blocks of at least `min_bytes` usable bytes (a launched recording
  // keeps blocks of at least --min-bytes requested).
  explicit HeapWalk(int64_t min_bytes);
  ~HeapWalk();
  HeapWalk(const HeapWalk&) = delete;
  HeapWalk& operator=(const HeapWalk&) = delete;

  const HeapBlock* begin() const { return blocks_; }
  const HeapBlock* end() const { return blocks_ + size_; }
  size_t size() const { return size_; }
  // The same address with the same size (the list is sorted by address).
  bool contains(const HeapBlock& b) const;
  // A block at that address, of any size.
  bool containsAddress(uint64_t addr) const;

  int regions_walked = 0;   // the main arena, other arenas' heaps
  int regions_skipped = 0;  // heaps that did not walk consistently
  int mmapped = 0;          // mmapped chunks found

 private:
  friend struct HeapWalkBuilder;
  void push(uint64_t addr, int64_t bytes);

  HeapBlock* blocks_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// Whether the block is still in use with that size, as its chunk header (and
// the next chunk's) says now: one found by a walk and freed since reads
// otherwise (an unmapped one cannot be read at all).
bool stillHeld(const HeapBlock& b);

}  // namespace gcprof::inject
