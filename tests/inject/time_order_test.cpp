// The writer's merge of a round's already ordered runs (time_order.h): the
// same order as a stable sort by time, ties included.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "time_order.h"

using namespace gcprof;
using namespace gcprof::inject;

namespace {

// Events whose `tid` numbers them in input order, so that a comparison of
// whole sequences also checks the order of equal times.
std::vector<Stamped> numbered(const std::vector<Ns>& times) {
  std::vector<Stamped> v(times.size());
  for (size_t i = 0; i < times.size(); ++i) {
    v[i].e.time = times[i];
    v[i].tid = static_cast<int64_t>(i);
  }
  return v;
}

std::vector<int64_t> order(const std::vector<Stamped>& v) {
  std::vector<int64_t> ids;
  for (const Stamped& s : v) ids.push_back(s.tid);
  return ids;
}

std::vector<int64_t> stableSorted(std::vector<Stamped> v) {
  std::stable_sort(v.begin(), v.end(),
                   [](const Stamped& x, const Stamped& y) { return x.e.time < y.e.time; });
  return order(v);
}

}  // namespace

TEST(TimeOrder, MergesThreadRunsKeepingTheOrderOfEqualTimes) {
  // Kept back from the last round, then three threads' rings, with ties
  // across runs (5, 7) and within one (9, 9).
  std::vector<Stamped> v = numbered({1, 5, 7, 2, 5, 9, 9, 3, 7, 8, 4, 5});
  std::vector<int64_t> want = stableSorted(v);
  std::vector<Stamped> scratch;
  sortByTime(v, scratch);
  EXPECT_EQ(order(v), want);
}

TEST(TimeOrder, AnOrderedRoundIsLeftAsItIs) {
  std::vector<Stamped> v = numbered({1, 1, 2, 3, 3, 3, 10});
  std::vector<Stamped> scratch;
  sortByTime(v, scratch);
  EXPECT_EQ(order(v), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  std::vector<Stamped> empty;
  sortByTime(empty, scratch);
  EXPECT_TRUE(empty.empty());
}

TEST(TimeOrder, AnyInputComesOutAsAStableSortWould) {
  // Not only runs: a clock that went back anywhere, an odd number of runs,
  // many ties (times drawn from a small range), and a scratch buffer reused.
  std::mt19937 rng(7);
  std::vector<Stamped> scratch;
  for (int round = 0; round < 200; ++round) {
    std::vector<Ns> times(rng() % 300);
    for (Ns& t : times) t = static_cast<Ns>(rng() % 40);
    std::vector<Stamped> v = numbered(times);
    std::vector<int64_t> want = stableSorted(v);
    sortByTime(v, scratch);
    ASSERT_EQ(order(v), want) << "round " << round;
  }
}
