#include "memory/memory_curve.h"
#include "memory/free_queue.h"
#include "memory/live_sweep.h"
#include "memory/memory_events.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>

#include "trace_builder.h"

namespace gcprof::advisor {
namespace {

using testing::TraceBuilder;

TEST(MemoryCurve, FreesBeforeAllocationsAtTheSameInstant) {
  TraceBuilder b;
  b.alloc(0, 10, 100);
  b.alloc(5, 20, 50);
  b.alloc(10, -1, 30);  // reuses a's memory at the instant a is freed
  MemoryCurve c = memoryCurve(b.build());
  EXPECT_FALSE(c.filter.device);
  EXPECT_EQ(c.peak, 150);
  EXPECT_EQ(c.peak_time, 5);
  EXPECT_EQ(liveAt(c, 10), 80);
  EXPECT_EQ(c.live_at_end, 30);
  ASSERT_EQ(c.points.size(), 4u);
  EXPECT_EQ(c.points.back().live, 30);
}

// The level before an event, asked in time order and then backwards, is the
// sum of the deltas before it either way; the curve and the peak of sorted
// events are those of the trace.
TEST(MemoryCurve, LevelBeforeAnEventInAnyOrder) {
  TraceBuilder b;
  b.alloc(0, 10, 100);
  b.alloc(5, 20, 50);
  b.alloc(10, -1, 30);
  Trace t = b.build();
  std::vector<MemoryEvent> events = memoryEvents(t.allocations, AllocationFilter{});
  ASSERT_EQ(events.size(), 5u);  // +100 +50 -100 +30 -50
  RecordedEvents recorded(t.allocations, AllocationFilter{});
  LevelBefore level(recorded);
  EXPECT_EQ(level.at(0), 0);
  EXPECT_EQ(level.at(2), 150);
  EXPECT_EQ(level.at(4), 80);
  EXPECT_EQ(level.at(1), 100);  // backwards
  EXPECT_EQ(level.at(5), 30);
  EXPECT_EQ(level.at(99), 30);  // past the end: everything
  EXPECT_EQ(sortedEventsPeak(events), 150);
  EXPECT_EQ(sortedEventsPeak(recorded), 150);
  MemoryCurve c = memoryCurveOf(events, AllocationFilter{});
  EXPECT_EQ(c.peak, memoryCurve(t).peak);
  EXPECT_EQ(c.points.size(), memoryCurve(t).points.size());
}

TEST(MemoryCurve, DeviceRunsUseDeviceTensorsOnly) {
  TraceBuilder b;
  b.alloc(0, 100, 1000);                                  // host: ignored
  b.alloc(1, 50, 4096, 0, 0, AllocKind::Segment);         // caching-allocator segment
  b.alloc(2, 10, 300, 0);
  b.alloc(3, 20, 200, 0);
  Trace t = b.build();
  MemoryCurve c = memoryCurve(t);
  EXPECT_TRUE(c.filter.device);
  EXPECT_EQ(c.filter.describe(), "device tensors");
  EXPECT_EQ(c.peak, 500);
  EXPECT_EQ(memoryCurve(t, hostFilter()).peak, 1000);
}

TEST(MemoryCurve, DeviceSegmentsWhenNoTensorsWereReported) {
  TraceBuilder b;
  b.alloc(1, 50, 4096, 0, 0, AllocKind::Segment);
  b.alloc(2, 60, 1024, 0, 0, AllocKind::Segment);
  MemoryCurve c = memoryCurve(b.build());
  EXPECT_EQ(c.filter.describe(), "device segments");
  EXPECT_EQ(c.peak, 5120);
}

TEST(MemoryCurve, PeakPerStepCountsMemoryHeldAcrossSteps) {
  TraceBuilder b;
  b.alloc(0, -1, 1000);   // parameters
  b.alloc(10, 15, 500);   // step 0
  b.alloc(25, 28, 200);   // step 1
  b.step(0, 5, 20);
  b.step(1, 21, 30);
  Trace t = b.build();
  MemoryCurve c = memoryCurve(t);
  std::vector<StepPeak> p = stepPeaks(t, c);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].peak, 1500);
  EXPECT_EQ(p[0].peak_time, 10);
  EXPECT_EQ(p[1].peak, 1200);
  EXPECT_EQ(p[1].live_at_start, 1000);
}

// The step peaks from the sorted events (advise's headroom) are those of
// the curve, steps in time order or not.
TEST(MemoryCurve, StepPeaksFromTheEventsAreTheCurves) {
  TraceBuilder b;
  b.alloc(0, -1, 1000);
  b.alloc(10, 15, 500);
  b.alloc(15, 22, 300);  // frees and allocations at one instant
  b.alloc(25, 28, 200);
  b.alloc(40, 45, 50);   // after every step
  b.step(0, 5, 20);
  b.step(1, 21, 30);
  b.step(2, 30, 30);
  Trace t = b.build();
  RecordedEvents events(t.allocations, AllocationFilter{});
  for (int reversed = 0; reversed < 2; ++reversed) {
    if (reversed) std::reverse(t.steps.begin(), t.steps.end());
    std::vector<StepPeak> want = stepPeaks(t, memoryCurve(t));
    std::vector<StepPeak> got = stepPeaksOf(events, t.steps);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].step, want[i].step);
      EXPECT_EQ(got[i].live_at_start, want[i].live_at_start) << i;
      EXPECT_EQ(got[i].peak, want[i].peak) << i;
      EXPECT_EQ(got[i].peak_time, want[i].peak_time) << i;
    }
  }
}

// Steps of many events, most of them passed block by block
// (RecordedEvents::kBlock): the same peaks, also where a step's peak is in
// a block passed whole, at an instant that spans two blocks, and where a
// step ends inside a block.
TEST(MemoryCurve, StepPeaksPassedBlockByBlockAreTheCurves) {
  TraceBuilder b;
  b.alloc(0, -1, 1000);
  Ns t0 = 10;
  for (int step = 0; step < 5; ++step) {
    const Ns start = t0;
    for (int k = 0; k < 300; ++k, t0 += 2) {
      // Rising, then freed in the step; three allocations share each
      // tenth instant.
      b.alloc(t0, t0 + 400 - k, 100 + (k * 37 + step) % 50);
      if (k % 10 == 0) {
        b.alloc(t0, t0 + 1, 7);
        b.alloc(t0, t0 + 3, 9);
      }
    }
    b.step(step, start, t0 + 450 - 37 * step);
    t0 += 500;
  }
  Trace t = b.build();
  RecordedEvents events(t.allocations, AllocationFilter{});
  ASSERT_GT(events.size(), 8 * RecordedEvents::kBlock);
  std::vector<StepPeak> want = stepPeaks(t, memoryCurve(t));
  std::vector<StepPeak> got = stepPeaksOf(events, t.steps);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].live_at_start, want[i].live_at_start) << i;
    EXPECT_EQ(got[i].peak, want[i].peak) << i;
    EXPECT_EQ(got[i].peak_time, want[i].peak_time) << i;
  }
}

// The peak swept from the allocations (show) is the sorted events' peak:
// ties of frees and allocations, frees at the instant of the allocation,
// blocks never freed, and allocations the filter leaves out.
TEST(MemoryCurve, PeakSweptFromAllocationsIsTheEventsPeak) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 20; ++round) {
    std::vector<Allocation> rows;
    for (int64_t id = 1; id <= 400; ++id) {
      Allocation a;
      a.id = id;
      a.alloc = static_cast<Ns>(rng() % 200);
      a.free = rng() % 7 == 0 ? -1 : a.alloc + static_cast<Ns>(rng() % 30) - 2;  // some at or before alloc
      if (a.free < -1) a.free = 0;
      a.bytes = static_cast<Bytes>(rng() % 1000) - 50;
      a.device = rng() % 5 == 0 ? 0 : -1;
      rows.push_back(a);
    }
    std::sort(rows.begin(), rows.end(), [](const Allocation& x, const Allocation& y) { return x.alloc < y.alloc; });
    for (const AllocationFilter& f : {AllocationFilter{}, AllocationFilter{true, AllocKind::Tensor}})
      EXPECT_EQ(allocationsPeak(rows, f), sortedEventsPeak(memoryEvents(rows, f))) << round;
    std::reverse(rows.begin(), rows.end());  // not in time order: still the same
    EXPECT_EQ(allocationsPeak(rows, AllocationFilter{}), sortedEventsPeak(memoryEvents(rows, AllocationFilter{})));
  }
}

// The sweep's queue of frees gives the soonest first, as a sorted map would,
// with times pushed at or after the last popped: equal times, times close
// together and far apart (nanoseconds since 1970, a free hours later),
// negative ones and spans across zero (damaged traces).
TEST(MemoryCurve, FreeQueueGivesTheSoonestFirst) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 60; ++round) {
    FreeQueue<Bytes> got;
    std::multimap<Ns, Bytes> want;
    const Ns starts[] = {0, Ns{1'733'000'000'000'000'000}, INT64_MIN, -5'000};
    Ns now = starts[round % 4];
    for (int op = 0; op < 2000; ++op) {
      if (want.empty() || rng() % 3 != 0) {
        const uint64_t spans[] = {0, 3, 1'000, 1'000'000'000, uint64_t{1} << 42, uint64_t{1} << 62};
        const uint64_t room = static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(now);
        const uint64_t span = std::min(spans[rng() % 6], room);
        const Ns t = static_cast<Ns>(static_cast<uint64_t>(now) + rng() % (span + 1));
        // Sizes follow the time: of equal times any may come first.
        got.push(t, t % 1000);
        want.emplace(t, t % 1000);
        continue;
      }
      ASSERT_FALSE(got.empty());
      ASSERT_EQ(got.topTime(), want.begin()->first) << round << " " << op;
      now = want.begin()->first;
      EXPECT_EQ(got.pop(), want.begin()->second);
      want.erase(want.begin());
    }
    for (; !want.empty(); want.erase(want.begin())) {
      ASSERT_EQ(got.topTime(), want.begin()->first) << round;
      EXPECT_EQ(got.pop(), want.begin()->second);
    }
    EXPECT_TRUE(got.empty());
  }
}

// The recorded events as row references (advise's) are memoryEvents, event
// for event: ties of frees and allocations at one instant, equal times of
// several allocations, frees at the instant of the allocation, blocks never
// freed, rows the filter leaves out, rows in time order and not; and the
// first event at or after a time; the peak and the level before an event,
// which pass whole blocks by their sums (sizes past 2^61 in some rounds:
// those blocks are summed event by event, saturating).
TEST(MemoryCurve, RecordedEventsAreTheMemoryEvents) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::vector<Allocation> rows;
    for (int64_t id = 1; id <= 400; ++id) {
      Allocation a;
      a.id = id;
      a.alloc = static_cast<Ns>(rng() % 100);
      a.free = rng() % 7 == 0 ? -1 : a.alloc + static_cast<Ns>(rng() % 30) - 2;
      if (a.free < -1) a.free = 0;
      a.bytes = static_cast<Bytes>(rng() % 20) * 50 - 50;
      if (round % 5 == 4 && id % 3 == 0) a.bytes = static_cast<Bytes>(rng() % 4) << 61;
      a.device = rng() % 5 == 0 ? 0 : -1;
      rows.push_back(a);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Allocation& x, const Allocation& y) { return x.alloc < y.alloc; });
    if (round % 4 == 3) std::reverse(rows.begin(), rows.end());
    for (const AllocationFilter& f : {AllocationFilter{}, AllocationFilter{true, AllocKind::Tensor}}) {
      std::vector<MemoryEvent> want = memoryEvents(rows, f);
      RecordedEvents got(rows, f);
      ASSERT_EQ(got.size(), want.size()) << round;
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i].time, want[i].time) << round << " " << i;
        ASSERT_EQ(got[i].delta, want[i].delta) << round << " " << i;
      }
      EXPECT_EQ(got.peak(), sortedEventsPeak(want)) << round;
      std::vector<Bytes> before(want.size() + 1, 0);  // before[i]: the level before event i
      for (size_t i = 0; i < want.size(); ++i) before[i + 1] = sat::add(before[i], want[i].delta);
      LevelBefore level(got);
      for (size_t i : {size_t{0}, size_t{5}, size_t{128}, size_t{300}, size_t{256}, want.size(), want.size() + 9, size_t{130}})
        EXPECT_EQ(level.at(i), before[std::min(i, want.size())]) << round << " " << i;
      for (Ns t : {Ns{-5}, Ns{0}, Ns{17}, Ns{99}, Ns{500}, Ns{INT64_MAX}}) {
        auto at = std::lower_bound(want.begin(), want.end(), t, [](const MemoryEvent& e, Ns v) { return e.time < v; });
        auto after = std::upper_bound(want.begin(), want.end(), t, [](Ns v, const MemoryEvent& e) { return v < e.time; });
        EXPECT_EQ(got.firstAt(t), static_cast<size_t>(at - want.begin())) << t;
        EXPECT_EQ(got.firstAfter(t), static_cast<size_t>(after - want.begin())) << t;
      }
    }
  }
}

// The downsampled curve swept from the allocations (export) is the full
// curve downsampled, for bucket sizes that divide the points and do not.
TEST(MemoryCurve, SweptDownsampledCurveIsTheCurveDownsampled) {
  std::mt19937_64 rng(5);
  std::vector<Allocation> rows;
  for (int64_t id = 1; id <= 500; ++id) {
    Allocation a;
    a.id = id;
    a.alloc = static_cast<Ns>(rng() % 300);
    a.free = rng() % 9 == 0 ? -1 : a.alloc + static_cast<Ns>(rng() % 40);
    a.bytes = static_cast<Bytes>(rng() % 1000) + 1;
    rows.push_back(a);
  }
  std::sort(rows.begin(), rows.end(), [](const Allocation& x, const Allocation& y) { return x.alloc < y.alloc; });
  const MemoryCurve full = memoryCurveOf(memoryEvents(rows, AllocationFilter{}), AllocationFilter{});
  for (size_t max_points : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{50}, full.points.size(), size_t{100000}}) {
    for (bool sorted : {true, false}) {
      std::vector<Allocation> in = rows;
      if (!sorted) std::reverse(in.begin(), in.end());
      MemoryCurve got = downsampledCurve(in, AllocationFilter{}, max_points);
      std::vector<MemoryPoint> want = downsample(full.points, max_points);
      ASSERT_EQ(got.points.size(), want.size()) << max_points;
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got.points[i].time, want[i].time) << max_points << " " << i;
        EXPECT_EQ(got.points[i].live, want[i].live) << max_points << " " << i;
      }
      EXPECT_EQ(got.peak, full.peak);
      EXPECT_EQ(got.peak_time, full.peak_time);
      EXPECT_EQ(got.live_at_end, full.live_at_end);
    }
  }
  EXPECT_TRUE(downsampledCurve({}, AllocationFilter{}, 10).points.empty());
}

TEST(MemoryCurve, DownsampleKeepsThePeak) {
  std::vector<MemoryPoint> pts;
  for (int i = 0; i < 1000; ++i) pts.push_back({i, i == 537 ? 99999 : i % 7});
  std::vector<MemoryPoint> d = downsample(pts, 50);
  EXPECT_LE(d.size(), 51u);
  Bytes best = 0;
  for (const MemoryPoint& p : d) best = std::max(best, p.live);
  EXPECT_EQ(best, 99999);
  EXPECT_EQ(d.back().time, 999);
}

}  // namespace
}  // namespace gcprof::advisor
