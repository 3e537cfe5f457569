// The free hook's size test reads glibc's chunk header instead of calling
// malloc_usable_size: it must never read a block as smaller than it is (its
// free would be dropped), for every way glibc hands blocks out.
#include <gtest/gtest.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "allocation_reports.h"

using gcprof::inject::RealAllocator;

namespace {

RealAllocator glibc() {
  RealAllocator r{};
  r.malloc = &::malloc;
  r.free = &::free;
  r.calloc = &::calloc;
  r.realloc = &::realloc;
  r.usable_size = &::malloc_usable_size;
  return r;
}

// Whether the bound holds for `p`, which it frees; prints what is wrong (in a
// child process: no gtest assertions there).
bool boundHolds(const RealAllocator& real, void* p, const char* how, size_t n) {
  if (!p) return false;
  size_t usable = malloc_usable_size(p);
  size_t bound = gcprof::inject::usableSizeBound(real, p);
  free(p);
  // Never below the usable size, and tight enough to skip small blocks.
  if (bound >= usable && bound <= usable + 16) return true;
  std::fprintf(stderr, "%s(%zu): usable %zu, read as %zu\n", how, n, usable, bound);
  return false;
}

void* aligned(size_t align, size_t n) {
  void* p = nullptr;
  return posix_memalign(&p, align, n) == 0 ? p : nullptr;
}

void* sized(int how, size_t n) {
  switch (how) {
    case 0: return malloc(n);
    case 1: return calloc(1, n);
    case 2: return aligned(64, n);
    case 3: return memalign(4096, n);
    default: return realloc(malloc(16), n);
  }
}

}  // namespace

// AddressSanitizer replaces malloc: there is no glibc header to read. Known
// at compile time, so that glibc's own malloc not being recognised fails.
#if defined(__SANITIZE_ADDRESS__)
#define SKIP_WITHOUT_GLIBC_MALLOC() GTEST_SKIP() << "malloc here is AddressSanitizer's"
#else
#define SKIP_WITHOUT_GLIBC_MALLOC() (void)0
#endif

TEST(AllocationReports, GlibcIsRecognisedAndAnotherAllocatorIsNot) {
  SKIP_WITHOUT_GLIBC_MALLOC();
  RealAllocator real = glibc();
  EXPECT_TRUE(gcprof::inject::glibcChunks(real));
  real.free = [](void* p) { ::free(p); };  // an allocator glibc does not know
  EXPECT_FALSE(gcprof::inject::glibcChunks(real));
  // Neither glibc's headers nor malloc_usable_size: no block is read as small.
  real.usable_size = nullptr;
  int block;
  EXPECT_EQ(gcprof::inject::usableSizeBound(real, &block), size_t{INT64_MAX});
}

// In a child process: freeing an mmap'ed block raises glibc's mmap threshold
// for the rest of the process, and the heap walk's tests expect the default.
TEST(AllocationReports, TheHeaderNeverReadsABlockAsSmallerThanItIs) {
  SKIP_WITHOUT_GLIBC_MALLOC();
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RealAllocator real = glibc();
    real.glibc_chunks = true;
    const char* names[] = {"malloc", "calloc", "posix_memalign", "memalign", "realloc"};
    int wrong = 0;
    // Around the default --min-bytes, then larger, up to blocks glibc maps
    // with mmap of their own (over 128 KiB by default).
    for (int how = 0; how < 5; ++how) {
      for (size_t n = 960; n <= 1100; ++n) wrong += !boundHolds(real, sized(how, n), names[how], n);
      for (size_t n : {size_t{4096}, size_t{65536}, size_t{131072}, size_t{200000}, size_t{4} << 20})
        wrong += !boundHolds(real, sized(how, n), names[how], n);
    }
    _exit(wrong == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "see the blocks printed above";
}
