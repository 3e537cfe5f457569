// The LOD memory curve against a brute-force replay of the raw events.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "stacked_memory.h"

namespace gcprof::view {
namespace {

struct Fixture {
  std::vector<Allocation> allocs;
  std::vector<uint16_t> series;
  size_t series_count = 4;
};

Fixture randomAllocations(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  Fixture f;
  Ns t = 0;
  for (size_t i = 0; i < n; ++i) {
    t += static_cast<Ns>(rng() % 40);  // collisions on purpose
    Allocation a;
    a.alloc = t;
    a.bytes = 1 + static_cast<Bytes>(rng() % 5000);
    a.free = (rng() % 10 == 0) ? -1 : t + static_cast<Ns>(rng() % 20000);
    f.allocs.push_back(a);
    f.series.push_back(static_cast<uint16_t>(rng() % f.series_count));
  }
  return f;
}

// Per-series live bytes after every event at or before each distinct time.
struct BruteForce {
  std::map<Ns, std::vector<Bytes>> after;  // time -> state after all events at that time
  explicit BruteForce(const Fixture& f) {
    std::map<Ns, std::vector<Bytes>> deltas;
    for (size_t i = 0; i < f.allocs.size(); ++i) {
      const Allocation& a = f.allocs[i];
      if (a.freed() && a.free <= a.alloc) continue;
      auto& d = deltas.try_emplace(a.alloc, f.series_count, 0).first->second;
      d[f.series[i]] += a.bytes;
      if (a.freed()) deltas.try_emplace(a.free, f.series_count, 0).first->second[f.series[i]] -= a.bytes;
    }
    std::vector<Bytes> state(f.series_count, 0);
    for (auto& [t, d] : deltas) {
      for (size_t s = 0; s < state.size(); ++s) state[s] += d[s];
      after[t] = state;
    }
  }
  std::vector<Bytes> at(Ns t) const {
    auto it = after.upper_bound(t);
    if (it == after.begin()) return std::vector<Bytes>(after.begin()->second.size(), 0);
    return std::prev(it)->second;
  }
  static Bytes sum(const std::vector<Bytes>& v) {
    Bytes s = 0;
    for (Bytes b : v) s += b;
    return s;
  }
};

TEST(StackedMemory, PointQueriesMatchReplay) {
  Fixture f = randomAllocations(20000, 1);
  StackedMemory m(f.allocs, f.series, f.series_count);
  BruteForce bf(f);
  std::mt19937_64 rng(2);
  std::vector<Bytes> got;
  for (int k = 0; k < 500; ++k) {
    Ns t = static_cast<Ns>(rng() % static_cast<uint64_t>(m.lastTime() + 100));
    m.seriesAt(t, got);
    EXPECT_EQ(got, bf.at(t)) << "t=" << t;
    EXPECT_EQ(m.totalAt(t), BruteForce::sum(bf.at(t)));
  }
  Bytes peak = 0;
  for (auto& [t, s] : bf.after) peak = std::max(peak, BruteForce::sum(s));
  EXPECT_EQ(m.peak(), peak);
  EXPECT_EQ(BruteForce::sum(bf.at(m.peakTime())), peak);
}

// The level-of-detail promise: a column's top is the highest total inside
// it, and its stack is the breakdown at a moment that reaches that total.
void checkColumns(const StackedMemory& m, const BruteForce& bf, double t0, double t1, int n) {
  CurveColumns c;
  m.columns(t0, t1, n, c);
  ASSERT_EQ(c.count, n);
  for (int col = 0; col < n; ++col) {
    double a = t0 + col * c.dt, b = a + c.dt;
    // Moments in [a, b): entering state, then after each event time inside.
    Bytes best = BruteForce::sum(bf.at(static_cast<Ns>(std::ceil(a)) - 1));
    std::vector<std::vector<Bytes>> reaching;
    for (auto it = bf.after.lower_bound(static_cast<Ns>(std::ceil(a)));
         it != bf.after.end() && static_cast<double>(it->first) < b; ++it)
      best = std::max(best, BruteForce::sum(it->second));
    ASSERT_EQ(c.max_total[col], best) << "column " << col << " [" << a << ", " << b << ")";
    Bytes stacked = 0;
    for (size_t s = 0; s < c.series; ++s) stacked += c.stackAt(col, s);
    ASSERT_EQ(stacked, best) << "column " << col;
  }
}

TEST(StackedMemory, RowsOutOfTimeOrderGiveTheSameCurve) {
  Fixture sorted = randomAllocations(5000, 3);
  Fixture f = sorted;
  std::vector<size_t> from(f.allocs.size());
  for (size_t i = 0; i < from.size(); ++i) from[i] = i;
  std::shuffle(from.begin(), from.end(), std::mt19937_64(4));
  for (size_t i = 0; i < from.size(); ++i) {
    f.allocs[i] = sorted.allocs[from[i]];
    f.series[i] = sorted.series[from[i]];
  }
  StackedMemory m(f.allocs, f.series, f.series_count);
  BruteForce bf(sorted);
  std::vector<Bytes> got;
  for (Ns t = 0; t <= m.lastTime() + 10; t += 97) {
    m.seriesAt(t, got);
    ASSERT_EQ(got, bf.at(t)) << "t=" << t;
  }
}

TEST(StackedMemory, ColumnsAtEveryZoomEqualRawMaxima) {
  Fixture f = randomAllocations(30000, 3);
  StackedMemory m(f.allocs, f.series, f.series_count);
  BruteForce bf(f);
  double end = static_cast<double>(m.lastTime());
  checkColumns(m, bf, -100, end + 100, 1600);  // zoomed out: ~40 events a column
  checkColumns(m, bf, -100, end + 100, 7);     // thousands of events a column
  checkColumns(m, bf, end * 0.4, end * 0.4 + 3000, 800);  // zoomed in: most columns empty
  checkColumns(m, bf, end * 0.9, end * 1.2, 333);
}

TEST(StackedMemory, ColumnsWithoutSeriesStillGiveTotals) {
  Fixture f = randomAllocations(5000, 4);
  StackedMemory m(f.allocs, f.series, f.series_count);
  CurveColumns with, without;
  m.columns(0, static_cast<double>(m.lastTime()), 300, with);
  m.columns(0, static_cast<double>(m.lastTime()), 300, without, false);
  EXPECT_EQ(with.max_total, without.max_total);
  EXPECT_TRUE(without.stack.empty());
}

TEST(StackedMemory, LeavesOutIgnoredSeriesAndInstantFrees) {
  std::vector<Allocation> a(3);
  a[0].alloc = 10; a[0].free = 20; a[0].bytes = 100;
  a[1].alloc = 12; a[1].free = 12; a[1].bytes = 1000;  // freed the instant it was made
  a[2].alloc = 14; a[2].free = -1; a[2].bytes = 7;
  std::vector<uint16_t> s = {0, 0, 0xFFFF};
  StackedMemory m(a, s, 1);
  EXPECT_EQ(m.peak(), 100);
  EXPECT_EQ(m.totalAt(15), 100);
  EXPECT_EQ(m.totalAt(25), 0);
  EXPECT_EQ(m.maxIn(0, 100), 100);
  EXPECT_EQ(m.maxIn(21, 100), 0);
}

TEST(StackedMemory, FromPointsFollowsThePoints) {
  StackedMemory m = StackedMemory::fromPoints({{10, 5}, {20, 50}, {30, 8}});
  EXPECT_EQ(m.totalAt(5), 0);
  EXPECT_EQ(m.totalAt(25), 50);
  EXPECT_EQ(m.totalAt(35), 8);
  EXPECT_EQ(m.peak(), 50);
  EXPECT_EQ(m.peakTime(), 20);
}

TEST(StackedMemory, EmptyCurveAnswersZero) {
  StackedMemory m({}, {}, 3);
  CurveColumns c;
  m.columns(0, 100, 10, c);
  EXPECT_EQ(c.max_total, std::vector<Bytes>(10, 0));
  EXPECT_EQ(m.peak(), 0);
}

}  // namespace
}  // namespace gcprof::view
