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

// Rows read into several blocks, in the recorder's order (a step's blocks
// freed last-allocated first, a few kept to the end, ties): each block is
// given back as its rows are placed, and the rows come out as by sorting.
std::vector<Allocation> recordersOrder(Ns steps) {
  std::vector<Allocation> written;
  int64_t id = 1;
  for (Ns step = 0; step < steps; ++step) {
    std::vector<Allocation> live;
    for (int i = 0; i < 1000; ++i) live.push_back(row(0, step * 100000 + (i / 2) * 10));  // in pairs
    for (auto it = live.rbegin(); it != live.rend(); ++it) {
      it->id = id++;
      written.push_back(*it);
    }
    written.push_back(row(0, step * 100000 + 3));  // kept: written at the end
  }
  for (Allocation& a : written)
    if (a.id == 0) a.id = id++;
  for (Allocation& a : written) a.bytes = a.id * 10;
  std::stable_partition(written.begin(), written.end(), [](const Allocation& a) { return a.alloc % 10 != 3; });
  return written;
}

std::vector<Allocation> sortedRows(std::vector<Allocation> rows) {
  std::sort(rows.begin(), rows.end(), [](const Allocation& a, const Allocation& b) {
    return a.alloc != b.alloc ? a.alloc < b.alloc : a.id < b.id;
  });
  return rows;
}

TEST(AllocationOrder, RowsFromManyBlocksComeOutInOrder) {
  const std::vector<Allocation> written = recordersOrder(150);
  AllocationBlocks read;
  read.append(written.data(), 100);
  read.append(written.data() + 100, written.size() - 100);
  ASSERT_GT(read.blocks(), 2u);
  const std::vector<Allocation> expected = sortedRows(written);
  std::vector<Allocation> out{row(0, -1)};  // appended after what is there
  moveByAllocation(read, out);
  EXPECT_TRUE(read.empty());
  ASSERT_EQ(out.size(), expected.size() + 1);
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(out[i + 1].id, expected[i].id) << i;
    ASSERT_EQ(out[i + 1].bytes, out[i + 1].id * 10) << i;
  }
}

// Over 64 MB of rows: the blocks' pages move into the rows' vector ahead
// of the copy. The rows already there and every row copied stay as written.
TEST(AllocationOrder, BlocksGivenToTheCopyKeepEveryRow) {
  const std::vector<Allocation> written = recordersOrder(1200);
  ASSERT_GT(written.size() * sizeof(Allocation), size_t{64} << 20);
  const std::vector<Allocation> expected = sortedRows(written);
  for (size_t before : {size_t{0}, size_t{3}}) {
    AllocationBlocks read;
    read.append(written.data(), written.size());
    std::vector<Allocation> out;
    for (size_t i = 0; i < before; ++i) out.push_back(row(-1 - static_cast<int64_t>(i), -1));
    moveByAllocation(read, out);
    ASSERT_EQ(out.size(), expected.size() + before);
    for (size_t i = 0; i < before; ++i) ASSERT_EQ(out[i].id, -1 - static_cast<int64_t>(i));
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(out[i + before].id, expected[i].id) << i;
      ASSERT_EQ(out[i + before].bytes, expected[i].bytes) << i;
    }
  }
}

}  // namespace
}  // namespace gcprof
