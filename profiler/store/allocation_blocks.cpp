#include "allocation_blocks.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <type_traits>

namespace gcprof {
namespace {

static_assert(std::is_trivially_copyable_v<Allocation>, "blocks copy rows as bytes");
constexpr size_t kBlockBytes = AllocationBlocks::kBytes;

}  // namespace

// The pages are mapped and unmapped here, not through malloc: glibc raises
// its mmap threshold when a large mapped chunk is freed, after which blocks
// of a second load would come from the heap and stay there once released.
void AllocationBlocks::Unmap::operator()(Allocation* p) const { munmap(p, kBlockBytes); }

bool AllocationBlocks::releaseTo(size_t b, void* to) {
  Allocation* pages = blocks_[b].pages.release();
  if (mremap(pages, kBlockBytes, kBlockBytes, MREMAP_MAYMOVE | MREMAP_FIXED, to) != MAP_FAILED) return true;
  munmap(pages, kBlockBytes);
  return false;
}

// A block is mapped with its pages (MAP_POPULATE): it is written whole, and
// faulting its 1,100 pages in one at a time was most of a load's system time.
void AllocationBlocks::addBlock() {
  void* p = mmap(nullptr, kBlockBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  Allocation* first = static_cast<Allocation*>(p);
  blocks_.push_back(Block{std::unique_ptr<Allocation, Unmap>(first), first});
}

void AllocationBlocks::append(const Allocation* rows, size_t n) {
  while (n > 0) {
    const size_t at = size_ & (kRows - 1);
    if (at == 0) addBlock();
    const size_t take = std::min(n, kRows - at);
    // Allocation is trivially copyable: whole rows at once.
    std::memcpy(static_cast<void*>(blocks_.back().rows + at), rows, take * sizeof(Allocation));
    size_ += take;
    rows += take;
    n -= take;
  }
}

size_t AllocationBlocks::rowsIn(size_t block) const {
  return block + 1 < blocks_.size() ? kRows : size_ - (blocks_.size() - 1) * kRows;
}

}  // namespace gcprof
