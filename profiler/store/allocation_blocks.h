// Allocation rows as they are read (in the recorder's order), kept in
// fixed blocks of pages that can each be given back to the system as soon
// as its rows have been moved on. Putting ten million rows in time order
// out of one vector meant either moving them in place along the
// permutation's cycles (one cache miss after another, each waiting for the
// last: a quarter of opening a trace) or a second copy of all of them.
// From blocks, the rows are copied out in order, independent loads the
// processor overlaps, and the copy grows as the blocks go.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "trace.h"

namespace gcprof {

class AllocationBlocks {
 public:
  static constexpr int kShift = 16;  // 65,536 rows (3.5 MiB) a block
  static constexpr size_t kRows = size_t{1} << kShift;
  static constexpr size_t kBytes = kRows * sizeof(Allocation);  // a whole number of pages

  void append(const Allocation* rows, size_t n);
  void append(const Allocation& row) {
    const size_t at = size_ & (kRows - 1);
    if (at == 0) addBlock();
    blocks_.back().rows[at] = row;
    ++size_;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const Allocation& operator[](size_t i) const { return blocks_[i >> kShift].rows[i & (kRows - 1)]; }
  size_t blocks() const { return blocks_.size(); }
  size_t rowsIn(size_t block) const;
  // Unmaps block `b` (its rows must not be read again).
  void release(size_t b) { blocks_[b].pages.reset(); }
  // Moves block `b`'s pages to [to, to + kBytes) instead (page aligned,
  // memory of the caller's whose contents do not matter): pages already
  // there, where a first write would cost a fault and the kernel's zeroing.
  // False, the block unmapped, where the system refuses.
  bool releaseTo(size_t b, void* to);

 private:
  struct Unmap {
    void operator()(Allocation* p) const;
  };
  struct Block {
    std::unique_ptr<Allocation, Unmap> pages;
    Allocation* rows = nullptr;
  };
  void addBlock();
  std::vector<Block> blocks_;
  size_t size_ = 0;
};

}  // namespace gcprof
