#include "units/module_stats.h"

#include <gtest/gtest.h>

#include "trace_builder.h"

namespace gcprof::advisor {
namespace {

using testing::TraceBuilder;

const ModuleStats& find(const std::vector<ModuleStats>& v, const std::string& name) {
  for (const ModuleStats& m : v)
    if (m.name == name) return m;
  throw std::runtime_error("no module " + name);
}

// Two steps of modules a (with child a.b) and c; every number below is
// worked out from the allocations listed.
Trace twoSteps() {
  TraceBuilder b;
  for (int s = 0; s < 2; ++s) {
    Ns o = 100 * s;
    b.step(s, o, o + 99);
    b.range("a", Phase::Forward, o + 10, o + 20, s, -1, 64, 32);
    b.range("a.b", Phase::Forward, o + 12, o + 18, s);
    b.range("c", Phase::Forward, o + 21, o + 30, s, s == 0 ? 4 : 6);
    b.range("c", Phase::Backward, o + 40, o + 50, s);
    b.range("a.b", Phase::Backward, o + 52, o + 58, s);
    if (s == 0) {
      b.range("a", Phase::Backward, o + 51, o + 60, s);
    } else {  // two overlapping backward ranges: their union counts once
      b.range("a", Phase::Backward, o + 51, o + 55, s);
      b.range("a", Phase::Backward, o + 53, o + 60, s);
    }
    b.alloc(o + 13, o + 55, 100, -1, s);  // a.b saved (and so a's)
    b.alloc(o + 11, o + 59, 40, -1, s);   // a saved, outside a.b
    b.alloc(o + 15, o + 16, 7, -1, s);    // transient: saved by nobody
    b.alloc(o + 22, o + 45, s == 0 ? 60 : 80, -1, s);  // c saved
    b.alloc(o + 25, o + 55, 10, -1, s);   // freed in a's backward, not c's
  }
  b.alloc(0, -1, 5000);  // parameters: nobody's
  return b.build();
}

// Many steps, several forward calls a step and rows between them in
// numbers that vary: each call's rows are found wherever they are.
TEST(ModuleStats, SavedBytesOfEveryCallOfManySteps) {
  TraceBuilder b;
  Bytes total = 0;
  const int steps = 300;
  for (int s = 0; s < steps; ++s) {
    const Ns o = 10000 * s;
    b.step(s, o, o + 9999);
    for (int k = 0; k < (s * 7) % 13 * 40; ++k) b.alloc(o + 1 + k % 90, o + 95, 3, -1, s);  // before any call
    for (int call = 0; call < 3; ++call) {
      const Ns f = o + 100 + 1000 * call;
      b.range("m", Phase::Forward, f, f + 10, s);
      for (int k = 0; k <= (s + call) % 5; ++k) {
        b.alloc(f + k, o + 8500, 10 + k, -1, s);  // saved: freed in the backward
        total += 10 + k;
      }
      b.alloc(f + 1, f + 5, 1000, -1, s);  // transient
      for (int k = 0; k < (s * call) % 17 * 30; ++k) b.alloc(f + 20 + k % 500, f + 600, 5, -1, s);  // between calls
    }
    b.range("m", Phase::Backward, o + 8000, o + 9000, s);
  }
  std::vector<ModuleStats> all = moduleStats(b.build());
  const ModuleStats& m = find(all, "m");
  EXPECT_EQ(m.steps, steps);
  EXPECT_EQ(m.saved_bytes, total / steps);
}

TEST(ModuleStats, SavedBytesTimesAndOrder) {
  std::vector<ModuleStats> v = moduleStats(twoSteps());
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].name, "a");
  EXPECT_EQ(v[1].name, "a.b");
  EXPECT_EQ(v[2].name, "c");
  const ModuleStats& a = find(v, "a");
  EXPECT_EQ(a.depth, 1);
  EXPECT_EQ(a.saved_bytes, 140);
  EXPECT_EQ(a.forward_ns, 10);
  EXPECT_EQ(a.backward_ns, 9);
  EXPECT_EQ(a.input_bytes, 64);
  EXPECT_EQ(a.output_bytes, 32);
  EXPECT_DOUBLE_EQ(a.calls, 1.0);
  EXPECT_EQ(a.steps, 2);
  const ModuleStats& ab = find(v, "a.b");
  EXPECT_EQ(ab.depth, 2);
  EXPECT_EQ(ab.saved_bytes, 100);
  const ModuleStats& c = find(v, "c");
  EXPECT_EQ(c.saved_bytes, 70);   // (60 + 80) / 2
  EXPECT_EQ(c.forward_ns, 5);     // device time (4 + 6) / 2, not the host 9
  EXPECT_EQ(c.backward_ns, 10);
}

TEST(ModuleStats, RepeatedCallsAreCountedPerStep) {
  TraceBuilder b;
  b.step(0, 0, 100);
  b.range("shared", Phase::Forward, 10, 20, 0);
  b.range("shared", Phase::Forward, 30, 40, 0);
  b.range("shared", Phase::Backward, 50, 60, 0);
  b.range("shared", Phase::Backward, 70, 80, 0);
  b.alloc(12, 55, 10);
  b.alloc(32, 75, 20);
  std::vector<ModuleStats> v = moduleStats(b.build());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_DOUBLE_EQ(v[0].calls, 2.0);
  EXPECT_EQ(v[0].forward_ns, 20);
  EXPECT_EQ(v[0].backward_ns, 20);
  EXPECT_EQ(v[0].saved_bytes, 30);
}

TEST(ModuleStats, LayersSkippedInTheFirstStepKeepTheirPlaceInForwardOrder) {
  // LayerDrop (HF Wav2Vec2): step 0 skipped layers.0 and layers.1, step 1
  // skipped layers.2, step 2 ran all four. Ordered by the run's first
  // forward, layers.0 and .1 came after .2 and .3, and no step was a chain.
  TraceBuilder b;
  const std::vector<std::vector<int>> ran = {{2, 3}, {0, 1, 3}, {0, 1, 2, 3}};
  for (int s = 0; s < 3; ++s) {
    Ns o = 1000 * s;
    b.step(s, o, o + 999);
    Ns t = o + 10;
    for (int k : ran[s]) {
      b.range("layers." + std::to_string(k), Phase::Forward, t, t + 10, s);
      b.range("layers." + std::to_string(k), Phase::Backward, o + 500 - t % 1000, o + 505 - t % 1000, s);
      t += 20;
    }
  }
  std::vector<ModuleStats> v = moduleStats(b.build());
  ASSERT_EQ(v.size(), 4u);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(v[k].name, "layers." + std::to_string(k));
}

TEST(ModuleStats, StepsThatDisagreeKeepTheFirstForwardOrder) {
  TraceBuilder b;
  b.range("x", Phase::Forward, 10, 20, 0);
  b.range("y", Phase::Forward, 30, 40, 0);
  b.range("y", Phase::Forward, 110, 120, 1);
  b.range("x", Phase::Forward, 130, 140, 1);
  b.step(0, 0, 99);
  b.step(1, 100, 199);
  std::vector<ModuleStats> v = moduleStats(b.build());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].name, "x");
  EXPECT_EQ(v[1].name, "y");
}

TEST(ModuleStats, RunWithoutStepsIsOneStep) {
  TraceBuilder b;
  b.range("m", Phase::Forward, 10, 20, -1);
  b.range("m", Phase::Backward, 30, 40, -1);
  b.alloc(15, 35, 8, -1, -1);
  std::vector<ModuleStats> v = moduleStats(b.build());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].saved_bytes, 8);
  EXPECT_EQ(v[0].steps, 1);
}

}  // namespace
}  // namespace gcprof::advisor
