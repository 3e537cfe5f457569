#include "allocation_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace gcprof {
namespace {

Allocation row(int64_t id, Ns alloc) {
  Allocation a;
  a.id = id;
  a.alloc = alloc;
  a.bytes = id * 10;  // travels with its row
  return a;
}

TEST(AllocationOrder, ByTimeThenIdWithEveryFieldMoved) {
  std::vector<Allocation> rows = {row(5, 30), row(1, 10), row(4, 20), row(2, 20), row(3, 20), row(6, 5)};
  sortByAllocation(rows);
  std::vector<int64_t> ids;
  for (const Allocation& a : rows) {
    ids.push_back(a.id);
    EXPECT_EQ(a.bytes, a.id * 10);
  }
  EXPECT_EQ(ids, (std::vector<int64_t>{6, 1, 2, 3, 4, 5}));
}

// The recorder's order (by free), many ties: the same as sorting rows.
TEST(AllocationOrder, SameAsSortingTheRows) {
  std::mt19937_64 rng(7);
  std::vector<Allocation> rows;
  for (int64_t id = 1; id <= 20000; ++id) rows.push_back(row(id, static_cast<Ns>(rng() % 3000)));
  std::shuffle(rows.begin(), rows.end(), rng);
  std::vector<Allocation> expected = rows;
  std::sort(expected.begin(), expected.end(), [](const Allocation& a, const Allocation& b) {
    return a.alloc != b.alloc ? a.alloc < b.alloc : a.id < b.id;
  });
  sortByAllocation(rows);
  ASSERT_EQ(rows.size(), expected.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].id, expected[i].id) << i;
    EXPECT_EQ(rows[i].alloc, expected[i].alloc) << i;
  }
  std::vector<Allocation> none;
  sortByAllocation(none);
  EXPECT_TRUE(none.empty());
}

// Monotonic-clock times (large, close together) and times too far apart to
// share one word with the row number: both orders as by sorting rows.
TEST(AllocationOrder, RealClockTimesAndExtremeSpans) {
  for (Ns base : {Ns{1700000000000000000}, Ns{0}}) {
    std::mt19937_64 rng(11);
    std::vector<Allocation> rows;
    for (int64_t id = 1; id <= 5000; ++id) {
      Ns t = base ? base + static_cast<Ns>(rng() % 100000) : static_cast<Ns>(rng());  // any int64
      rows.push_back(row(id, t));
    }
    rows.push_back(row(5001, rows[17].alloc));  // a tie
    std::shuffle(rows.begin(), rows.end(), rng);
    std::vector<Allocation> expected = rows;
    std::sort(expected.begin(), expected.end(), [](const Allocation& a, const Allocation& b) {
      return a.alloc != b.alloc ? a.alloc < b.alloc : a.id < b.id;
    });
    sortByAllocation(rows);
    for (size_t i = 0; i < rows.size(); ++i) {
      ASSERT_EQ(rows[i].id, expected[i].id) << i;
      ASSERT_EQ(rows[i].bytes, rows[i].id * 10) << i;
    }
  }
}

}  // namespace
}  // namespace gcprof
