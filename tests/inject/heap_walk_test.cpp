// The heap walk that finds the memory a job held before `gcprof attach` came
// (profiler/inject/heap_walk.h), run on this process's own
// heaps: blocks of every kind malloc hands out are found at their address
// with their size, freed ones are not.
#include "heap_walk.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <stdlib.h>

#include <atomic>
#include <thread>
#include <vector>

using gcprof::inject::HeapBlock;
using gcprof::inject::HeapWalk;
using gcprof::inject::stillHeld;

namespace {

struct Block {
  void* p;
  size_t requested;
};

Block allocate(size_t bytes, size_t align = 0) {
  void* p = nullptr;
  if (align) {
    if (posix_memalign(&p, align, bytes) != 0) p = nullptr;
  } else {
    p = malloc(bytes);
  }
  return {p, bytes};
}

// Found at its address, with the usable size malloc reports.
void expectFound(const HeapWalk& w, const Block& b) {
  HeapBlock want{reinterpret_cast<uint64_t>(b.p), static_cast<int64_t>(malloc_usable_size(b.p))};
  EXPECT_TRUE(w.contains(want)) << b.requested << " bytes at " << b.p << " (usable "
                                << want.bytes << ")";
  // Arena chunks round the request up to 16 B (plus the size word); mmapped
  // ones to whole pages.
  int64_t rounding = b.requested >= (128 << 10) ? 4096 + 16 : 48;
  EXPECT_LT(want.bytes - static_cast<int64_t>(b.requested), rounding) << b.requested;
}

uint64_t address(const void* p) { return reinterpret_cast<uint64_t>(p); }

// glibc's IS_MMAPPED bit, in the size word before the block.
bool isMmapped(const Block& b) { return (static_cast<const size_t*>(b.p)[-1] & 2) != 0; }

bool foundAt(const HeapWalk& w, uint64_t addr) {
  for (const HeapBlock& b : w)
    if (b.addr == addr) return true;
  return false;
}

}  // namespace

#if defined(__SANITIZE_ADDRESS__)
#define GCPROF_FOREIGN_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GCPROF_FOREIGN_MALLOC 1
#endif
#endif

TEST(HeapWalk, FindsEveryKindOfBlockAtItsAddressAndSize) {
#ifdef GCPROF_FOREIGN_MALLOC
  GTEST_SKIP() << "ASan's malloc is not glibc's";
#endif
  // glibc raises its mmap threshold to the size of each mmapped block freed
  // (up to 32 MiB): after earlier tests of this process, the large blocks
  // below came from the arenas. Setting the threshold (glibc's initial 128
  // KiB) turns that off; a block an arena's free space can hold still comes
  // from there, so which blocks are mmapped is read from their headers.
  ASSERT_EQ(mallopt(M_MMAP_THRESHOLD, 128 << 10), 1);
  std::vector<Block> main_thread = {
      allocate(1500),                // a small chunk of the main arena
      allocate(60000),               // a larger one
      allocate(50000, 64),           // c10's alignment
      allocate(3 << 20),             // mmapped (in a fresh process)
      allocate((5 << 20) + 100, 64), // mmapped through memalign (a lead before the chunk)
      allocate(1 << 20, 4096),
      allocate(96 << 20),            // mmapped always: more than an arena's free space can be
  };
  // Another thread allocates from an arena of its own (a heap of 64 MiB).
  std::vector<Block> other_thread;
  std::thread t([&] {
    other_thread = {allocate(2000), allocate(70000, 64), allocate(4 << 20)};
  });
  t.join();
  void* small = malloc(200);
  void* freed_block = malloc(40000);
  uint64_t freed = address(freed_block);
  free(freed_block);

  HeapWalk w(1024);
  EXPECT_EQ(w.regions_skipped, 0);
  EXPECT_GE(w.regions_walked, 2);  // the main arena and the thread's
  int mmapped = 0;
  for (const auto* blocks : {&main_thread, &other_thread})
    for (const Block& b : *blocks) mmapped += isMmapped(b);
  EXPECT_TRUE(isMmapped(main_thread.back())) << "larger than any arena's free space";
  EXPECT_GE(w.mmapped, mmapped);
  for (const Block& b : main_thread) expectFound(w, b);
  for (const Block& b : other_thread) expectFound(w, b);
  EXPECT_FALSE(foundAt(w, freed));
  EXPECT_FALSE(foundAt(w, address(small)));  // below min_bytes
  // Nothing is found twice, and the memalign'd mmapped block only at its address.
  for (const HeapBlock* b = w.begin(); b + 1 < w.end(); ++b) EXPECT_LT(b->addr, (b + 1)->addr);
  EXPECT_FALSE(foundAt(w, address(main_thread[4].p) - 4096 + 16));

  std::vector<uint64_t> gone;
  for (Block& b : main_thread) {
    gone.push_back(address(b.p));
    free(b.p);
  }
  HeapWalk after(1024);
  for (uint64_t addr : gone) EXPECT_FALSE(foundAt(after, addr)) << addr;
  for (Block& b : other_thread) free(b.p);
  free(small);
}

// A job's threads keep allocating while gcprof attaches: a walk that reads a
// heap mid-change reads it again. One that says it walked every region found
// every block that stayed; and even against this thread's malloc at full
// speed on a loaded machine, the walks get through (13-19 of 20 did, at load
// 3.5, before the main arena's walk followed the break as it moved: 20 of 20
// in 15 runs since).
TEST(HeapWalk, WalksHeapsThatChangeWhileTheyAreRead) {
#ifdef GCPROF_FOREIGN_MALLOC
  GTEST_SKIP() << "ASan's malloc is not glibc's";
#endif
  std::vector<Block> stable;
  for (int i = 0; i < 200; ++i) stable.push_back(allocate(1024 + 48 * i));
  std::atomic<bool> done{false};
  int whole = 0, missing = 0;
  // The walk from a thread of its own, as gcprof's attach thread; this one
  // churns the main arena meanwhile.
  std::thread walker([&] {
    for (int round = 0; round < 20; ++round) {
      HeapWalk w(1024);
      if (w.regions_skipped > 0) continue;
      ++whole;
      for (const Block& b : stable)
        if (!w.contains({address(b.p), static_cast<int64_t>(malloc_usable_size(b.p))})) ++missing;
    }
    done = true;
  });
  std::vector<void*> churn(256, nullptr);
  for (unsigned i = 0; !done; ++i) {
    void*& slot = churn[(i * 2654435761u) % churn.size()];
    free(slot);
    // Under the mmap threshold, so the break moves; as fast as malloc goes.
    slot = malloc(512 + (i * 40503u) % 120000);
  }
  walker.join();
  for (void* p : churn) free(p);
  for (Block& b : stable) free(b.p);
  EXPECT_GE(whole, 18);
  EXPECT_EQ(missing, 0);
}

// A block the walk found and the job freed before it was recorded reads as
// gone, also where malloc merged it into free chunks on both sides and left
// its header, and the next one's in-use bit, as they were.
TEST(HeapWalk, ABlockFreedBetweenTwoFreeChunksIsNotStillHeld) {
#ifdef GCPROF_FOREIGN_MALLOC
  GTEST_SKIP() << "ASan's malloc is not glibc's";
#endif
  // Four neighbours in the main arena: below the mmap threshold, above the
  // sizes malloc keeps in per-thread caches (which it never merges).
  constexpr size_t kBytes = 60000;
  std::vector<char*> run;
  char* a = nullptr;
  for (int tries = 0; tries < 64 && !a; ++tries) {
    run.push_back(static_cast<char*>(malloc(kBytes)));
    size_t n = run.size();
    if (n < 4) continue;
    ptrdiff_t step = run[n - 3] - run[n - 4];
    if (step > 0 && run[n - 2] - run[n - 3] == step && run[n - 1] - run[n - 2] == step)
      a = run[n - 4];
  }
  ASSERT_NE(a, nullptr) << "no four neighbouring chunks";
  size_t n = run.size();
  char* x = run[n - 3];
  char* c = run[n - 2];
  HeapBlock block{address(x), static_cast<int64_t>(malloc_usable_size(x))};
  bool held_at_first = stillHeld(block);
  free(a);
  free(c);
  bool held_between_free_chunks = stillHeld(block);
  free(x);  // merged with a and c
  bool held_after_free = stillHeld(block);
  for (size_t i = 0; i < n; ++i)
    if (run[i] != a && run[i] != x && run[i] != c) free(run[i]);
  EXPECT_TRUE(held_at_first);
  EXPECT_TRUE(held_between_free_chunks);
  EXPECT_FALSE(held_after_free);
}
