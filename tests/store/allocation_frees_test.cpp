// allocation_frees.h: applyFrees gives each named block its free time
// wherever it is among the rows (a free for a few rows, for every row, for
// none), whatever order the frees come in.
#include "allocation_frees.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace gcprof {
namespace {

TEST(AllocationFrees, AppliedFreesReachTheirBlocksAmongAnyNumberOfRows) {
  std::mt19937_64 rng(5);
  for (size_t rows : {size_t{0}, size_t{1}, size_t{10}, size_t{5000}}) {
    for (int every : {1, 3, 1000}) {
      SCOPED_TRACE(std::to_string(rows) + " rows, a free for one in " + std::to_string(every));
      std::vector<Allocation> by_alloc(rows);
      for (size_t i = 0; i < rows; ++i) {
        by_alloc[i].id = static_cast<int64_t>(rng() % 1000) * 10000 + static_cast<int64_t>(i);  // unique
        by_alloc[i].alloc = static_cast<Ns>(rng() % (rows / 4 + 1));  // ties on alloc_ns
      }
      std::sort(by_alloc.begin(), by_alloc.end(), [](const Allocation& a, const Allocation& b) {
        return a.alloc != b.alloc ? a.alloc < b.alloc : a.id < b.id;
      });
      std::vector<Allocation> want = by_alloc;
      std::vector<Free> frees;
      for (size_t i = 0; i < rows; ++i) {
        if (rng() % every) continue;
        want[i].free = want[i].alloc + 1 + static_cast<Ns>(i);
        frees.push_back(Free{want[i].id, want[i].alloc, want[i].free});
      }
      frees.push_back(Free{-5, 3, 9});  // names no block: passed over
      std::shuffle(frees.begin(), frees.end(), rng);  // in the order of the frees, not the allocations
      applyFrees(frees, by_alloc);
      for (size_t i = 0; i < rows; ++i) ASSERT_EQ(by_alloc[i].free, want[i].free) << i;
    }
  }
}

}  // namespace
}  // namespace gcprof
