// The saved-bytes sweep (units/saved_bytes_sweep.h) against the definition
// searched range by range over every row, as moduleStats computed it before
// the sweep: per module and step, the bytes allocated inside each of its
// forward ranges and freed inside its backward span, of the filter's memory.
#include "units/saved_bytes_sweep.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "advice_error.h"
#include "trace_builder.h"
#include "units/module_stats.h"

namespace gcprof::advisor {
namespace {

using testing::TraceBuilder;

// name -> saved bytes per step, searched per forward range over every row.
std::map<std::string, Bytes> savedByDefinition(const Trace& t, const AllocationFilter& filter) {
  std::map<std::string, std::map<int64_t, std::pair<std::vector<const Range*>, std::vector<const Range*>>>> by;
  for (const Range& r : t.ranges) {
    if (r.domain != RangeDomain::Module || r.phase == Phase::User) continue;
    auto& sr = by[r.name][r.step];
    (r.phase == Phase::Forward ? sr.first : sr.second).push_back(&r);
  }
  std::map<std::string, Bytes> out;
  for (const auto& [name, steps] : by) {
    Bytes saved = 0;
    int64_t n = 0;
    for (const auto& [step, sr] : steps) {
      if (sr.first.empty()) continue;
      ++n;
      if (sr.second.empty()) continue;
      Ns bs = INT64_MAX, be = INT64_MIN;
      for (const Range* b : sr.second) {
        bs = std::min(bs, b->start);
        be = std::max(be, b->end);
      }
      for (const Range* f : sr.first)
        for (const Allocation& a : t.allocations)
          if (a.alloc >= f->start && a.alloc <= f->end && filter.matches(a) && a.freed() && a.free >= bs &&
              a.free <= be)
            saved += a.bytes;
    }
    if (n) out[name] = saved / n;
  }
  return out;
}

std::map<std::string, Bytes> savedBySweep(const Trace& t, const AllocationFilter& filter) {
  std::map<std::string, Bytes> out;
  for (const ModuleStats& m : moduleStats(t, filter)) out[m.name] = m.saved_bytes;
  return out;
}

// The sweep and the definition agree, and give `expected`.
void expectSaved(const Trace& t, const AllocationFilter& filter, const std::map<std::string, Bytes>& expected) {
  EXPECT_EQ(savedByDefinition(t, filter), expected) << "the test's own numbers";
  EXPECT_EQ(savedBySweep(t, filter), expected);
}

TEST(SavedBytesSweep, NestedModulesEachCountWhatTheirOwnBackwardFrees) {
  TraceBuilder b;
  b.step(0, 0, 999);
  b.range("enc", Phase::Forward, 10, 100);
  b.range("enc.l0", Phase::Forward, 20, 50);
  b.range("enc.l0.mlp", Phase::Forward, 30, 40);
  b.range("enc.l1", Phase::Forward, 60, 90);
  b.range("enc.l1", Phase::Backward, 300, 330);
  b.range("enc.l0", Phase::Backward, 340, 400);
  b.range("enc.l0.mlp", Phase::Backward, 350, 360);
  b.range("enc", Phase::Backward, 300, 400);
  b.alloc(35, 355, 8);    // all three of enc, l0, mlp
  b.alloc(25, 345, 16);   // enc and l0
  b.alloc(45, 320, 32);   // enc: freed before l0's backward
  b.alloc(70, 310, 64);   // enc and l1
  b.alloc(95, 310, 128);  // enc: l1's forward ended at 90
  b.alloc(5, 310, 256);   // before every forward
  b.alloc(105, 310, 512); // after
  expectSaved(b.build(), hostFilter(), {{"enc", 248}, {"enc.l0", 24}, {"enc.l0.mlp", 8}, {"enc.l1", 64}});
}

TEST(SavedBytesSweep, EveryCallOfAModuleInAStepCountsAndStepsStayApart) {
  TraceBuilder b;
  b.step(0, 0, 999);
  b.step(1, 1000, 1999);
  b.range("block", Phase::Forward, 10, 20, 0);
  b.range("block", Phase::Forward, 30, 40, 0);
  b.range("block", Phase::Forward, 32, 38, 0);  // called inside itself: a call of its own
  b.range("block", Phase::Backward, 100, 200, 0);
  b.range("block", Phase::Forward, 1010, 1020, 1);
  b.range("block", Phase::Backward, 1100, 1200, 1);
  b.alloc(15, 150, 10, -1, 0);     // the first call
  b.alloc(35, 150, 20, -1, 0);     // inside two calls: counted by each
  b.alloc(25, 150, 1000, -1, 0);   // between calls
  b.alloc(15, 1150, 3000, -1, 0);  // made in step 0, freed in step 1's backward
  b.alloc(1015, 1150, 6, -1, 1);
  // (10 + 2 * 20 + 6) / 2 steps
  expectSaved(b.build(), hostFilter(), {{"block", 28}});
}

TEST(SavedBytesSweep, ForwardRangesOfTwoThreadsOverlapWithoutNesting) {
  TraceBuilder b;
  b.step(0, 0, 999);
  b.range("x", Phase::Forward, 10, 50);
  b.range("y", Phase::Forward, 20, 80);
  b.range("z", Phase::Forward, 55, 58);
  b.range("y", Phase::Backward, 100, 190);
  b.range("x", Phase::Backward, 200, 300);
  b.range("z", Phase::Backward, 200, 300);
  Trace t = b.build();
  for (Range& r : t.ranges) r.thread = r.name == "y" ? 2 : 1;
  testing::appendAllocation(t, 15, 250, 1);   // x
  testing::appendAllocation(t, 30, 250, 2);   // x (y's backward is over by then)
  testing::appendAllocation(t, 30, 150, 4);   // y
  testing::appendAllocation(t, 60, 250, 8);   // nobody: x ended at 50, z at 58
  testing::appendAllocation(t, 60, 150, 16);  // y
  testing::appendAllocation(t, 56, 250, 32);  // z
  testing::sortAsLoaded(t);
  expectSaved(t, hostFilter(), {{"x", 3}, {"y", 20}, {"z", 32}});
}

TEST(SavedBytesSweep, OnlyFreesInsideTheBackwardSpanCount) {
  TraceBuilder b;
  b.step(0, 0, 999);
  b.range("m", Phase::Forward, 10, 20);
  b.range("m", Phase::Backward, 100, 150);
  b.range("m", Phase::Backward, 170, 200);
  b.alloc(12, 160, 1);   // between its backward ranges: inside the span
  b.alloc(12, 200, 2);   // at the span's end
  b.alloc(12, 201, 4);   // the span ended before the free
  b.alloc(12, 99, 8);    // before it
  b.alloc(12, 100, 16);  // at its start
  b.alloc(12, -1, 32);   // never freed
  b.alloc(20, 150, 64);  // made at the forward's end
  b.alloc(21, 150, 128); // after it
  expectSaved(b.build(), hostFilter(), {{"m", 83}});
}

TEST(SavedBytesSweep, TheFilterPicksTheMemory) {
  TraceBuilder b;
  b.step(0, 0, 999);
  b.range("m", Phase::Forward, 10, 20);
  b.range("m", Phase::Backward, 100, 200);
  b.alloc(12, 150, 1);                                 // host
  b.alloc(12, 150, 2, 0);                              // device 0 tensor
  b.alloc(13, 150, 4, 0, 0, AllocKind::Segment);       // device 0 segment
  b.alloc(14, 150, 8, 1);                              // device 1 tensor
  Trace t = b.build();
  t.allocations[1].api = static_cast<uint8_t>(AllocApi::C10CachingAllocator);
  expectSaved(t, hostFilter(), {{"m", 1}});
  expectSaved(t, primaryFilter(t), {{"m", 10}});
  expectSaved(t, AllocationFilter{true, AllocKind::Segment, -1}, {{"m", 4}});
  expectSaved(t, AllocationFilter{true, AllocKind::Tensor, static_cast<int>(AllocApi::C10CachingAllocator)},
              {{"m", 2}});
}

// Random nested calls on two threads over many steps, rows everywhere.
TEST(SavedBytesSweep, RandomRunsAgreeWithTheDefinition) {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&](Ns lo, Ns hi) { return lo + static_cast<Ns>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
    TraceBuilder b;
    for (int s = 0; s < 4; ++s) {
      const Ns o = 10000 * s;
      b.step(s, o, o + 9999);
      for (int m = 0; m < 6; ++m) {
        const std::string name = "layers." + std::to_string(m % 3) + (m >= 3 ? ".mlp" : "");
        for (int call = 0; call < 1 + static_cast<int>(rng() % 3); ++call) {
          const Ns f = pick(o, o + 4000);
          b.range(name, Phase::Forward, f, f + pick(0, 1500), s);
        }
        for (int k = 0; k < static_cast<int>(rng() % 3); ++k) {
          const Ns bw = pick(o + 5000, o + 9000);
          b.range(name, Phase::Backward, bw, bw + pick(0, 800), s);
        }
      }
      for (int k = 0; k < 300; ++k) {
        const Ns at = pick(o, o + 6000);
        const Ns free = rng() % 10 == 0 ? -1 : pick(at, o + 12000);
        b.alloc(at, free, pick(1, 1000), rng() % 4 == 0 ? 0 : -1, s);
      }
    }
    Trace t = b.build();
    for (Range& r : t.ranges) r.thread = static_cast<int64_t>(rng() % 2);
    for (const AllocationFilter& f : {hostFilter(), primaryFilter(t)})
      EXPECT_EQ(savedBySweep(t, f), savedByDefinition(t, f)) << "seed " << seed;
  }
}

TEST(SavedBytesSweep, RowsOutOfTimeOrderAreRefused) {
  TraceBuilder b;
  b.range("m", Phase::Forward, 10, 20);
  b.range("m", Phase::Backward, 30, 40);
  const Trace t = b.build();
  const ModuleRanges ranges = moduleRanges(t.ranges);
  SavedBytesSweep sweep(ranges, hostFilter());
  Allocation a;
  a.alloc = 15;
  a.free = 35;
  a.bytes = 1;
  sweep.add(a);
  a.alloc = 14;
  EXPECT_THROW(sweep.add(a), AdviceError);
}

}  // namespace
}  // namespace gcprof::advisor
