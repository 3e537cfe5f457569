// Parameter copies autocast's cache holds in a checkpointed forward
// (chain/autocast_casts.h): HF Whisper's 85% plan under bf16 autocast was
// predicted 4.7 MB (1.6%) below the run, the replay dropping at each
// segment's forward end the bf16 weights the cache kept until autocast exited.
#include "chain/autocast_casts.h"

#include <gtest/gtest.h>

#include "chain_run.h"

namespace gcprof::advisor {
namespace {

using testing::ChainSpec;
using testing::unitName;

constexpr Bytes kCopy = 64;        // layers.0's weight in bf16
constexpr Bytes kCastInput = 24;   // layers.0's input in bf16
constexpr Ns kClear = 450;         // autocast exits in the gap (400..600)
constexpr Ns kBeforeClear = 440, kAfterClear = 460;

int64_t rangeId(const Trace& t, const std::string& name, Phase phase) {
  for (const Range& r : t.ranges)
    if (r.name == name && r.phase == phase) return r.id;
  return 0;
}

// The default chain of three units (chain_traces.h: forwards at 110, 210,
// 310, the gap 400..600, backwards at 810, 710, 610) as python records it
// under autocast. layers.0's forward casts its weight (kept by autograd to
// its backward, which makes the weight's fp32 gradient, twice the copy,
// alive after the step) and its input (whose fp32 gradient, also twice the
// copy, is freed within the backward).
Trace autocastTrace(bool clear_recorded) {
  ChainSpec spec;
  spec.runtime = "python";
  Trace t = testing::chainTrace(spec);
  const int64_t forward = rangeId(t, unitName(0), Phase::Forward);
  const int64_t backward = rangeId(t, unitName(0), Phase::Backward);
  auto add = [&](Ns at, Ns free, Bytes bytes, int64_t range) {
    testing::appendAllocation(t, at, free, bytes);
    t.allocations.back().range = static_cast<int32_t>(range);
  };
  add(125, 840, kCopy, forward);
  add(126, 840, kCastInput, forward);
  add(835, -1, 2 * kCopy, backward);       // the weight's gradient
  add(836, 845, 2 * kCastInput, backward);  // the input's gradient, used and freed
  if (clear_recorded) {
    Range r;
    r.id = 999;
    r.name = "autocast.clear_cache";
    r.domain = RangeDomain::User;
    r.phase = Phase::User;
    r.start = kClear;
    r.end = kClear + 1;
    t.ranges.push_back(r);
  }
  testing::sortAsLoaded(t);
  return t;
}

TEST(AutocastCasts, TheCacheHoldsAParametersCopyUntilItIsCleared) {
  testing::ChainRun run(autocastTrace(true), 3);
  const Simulation sim = run.curve({{0, 0}});
  testing::ChainRun before(autocastTrace(false), 3);  // no clear recorded: dropped at the forward's end
  const Simulation dropped = before.curve({{0, 0}});
  // Until the clear the copy is alive where it was dropped before; the
  // cast input is dropped in both, its gradient being no parameter's.
  EXPECT_EQ(testing::liveAt(sim, kBeforeClear), testing::liveAt(dropped, kBeforeClear) + kCopy);
  EXPECT_EQ(testing::liveAt(sim, kAfterClear), testing::liveAt(dropped, kAfterClear));
  // Without the plan the recorded run stands: autograd holds the copy anyway.
  EXPECT_EQ(run.simPeak({}), before.simPeak({}));
}

TEST(AutocastCasts, OnlyCopiesWhoseModuleMadeAGradientTwiceTheirSize) {
  testing::ChainRun run(autocastTrace(true), 3);
  const AutocastCasts casts(run.trace, run.filter, run.layout);
  for (const Allocation& a : run.trace.allocations) {
    if (a.bytes == kCopy) {
      EXPECT_EQ(casts.clearedAt(a, 810), kClear);
      EXPECT_EQ(casts.clearedAt(a, kClear), -1);  // its backward (the recomputation) comes first
    }
    if (a.bytes == kCastInput) {
      EXPECT_EQ(casts.clearedAt(a, 810), -1);
    }
  }
}

}  // namespace
}  // namespace gcprof::advisor
