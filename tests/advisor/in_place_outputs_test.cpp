#include "chain/in_place_outputs.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>

#include "chain_run.h"
#include "chain/chain_peak.h"

namespace gcprof::advisor {
namespace {

using testing::ChainSpec;

// layers.0 (forward [110, 150], backward from 810) ends in an in-place
// activation (ReLU(inplace=True) over its output, made at 140). A decoy of
// the same size, made earlier (120) and freed first in the backward (810),
// is what the old guess by size took; the shim's "inplace output 0x<addr>"
// range inside the activation's call names the output itself.
constexpr int64_t kMarkId = 5000;

Trace endsInPlace(bool address_marked) {
  Trace trace = testing::chainTrace(ChainSpec{});
  testing::InPlaceActivation act = testing::inPlaceActivation(trace, ChainSpec{}, 0);
  const Allocation* out = nullptr;
  for (const Allocation& a : trace.allocations)
    if (a.id == act.output_id) out = &a;
  if (!out) throw std::runtime_error("the in-place activation found no output");
  Allocation decoy = *out;
  decoy.id = 999;
  decoy.addr = 0x999000;
  decoy.alloc = 120;
  decoy.free = 810;
  if (address_marked) {
    char addr[32];
    std::snprintf(addr, sizeof addr, "%llx", static_cast<unsigned long long>(out->addr));
    Range mark;
    mark.id = kMarkId;
    mark.name = std::string("inplace output 0x") + addr;
    mark.domain = RangeDomain::User;
    mark.phase = Phase::User;
    mark.parent = act.range_id;
    mark.start = mark.end = 147;
    trace.ranges.push_back(mark);
  }
  trace.allocations.push_back(decoy);
  testing::sortAsLoaded(trace);
  return trace;
}

// The fixtures outlive the pointers they return (they point into their traces).
struct EndsInPlace : testing::ChainRun {
  explicit EndsInPlace(bool address_marked) : ChainRun(endsInPlace(address_marked), 3) {}
  const Allocation* output(int k, bool* exact) const {
    InPlaceOutputs outputs(trace, filter);
    StepRegions reg(layout.steps[0]);
    return outputs.output(layout.steps[0], reg, k, exact);
  }
};

TEST(InPlaceOutputs, TheMarkedAddressNamesTheOutputNotTheFirstFreedOfItsSize) {
  bool exact = false;
  const EndsInPlace with_mark(true);
  const Allocation* marked = with_mark.output(0, &exact);
  ASSERT_NE(marked, nullptr);
  EXPECT_TRUE(exact);
  EXPECT_EQ(marked->alloc, 140);
  // Without the mark (runs recorded before it) the guess by size takes the
  // decoy: that is the heuristic the mark replaces.
  const EndsInPlace without_mark(false);
  const Allocation* guessed = without_mark.output(0, &exact);
  ASSERT_NE(guessed, nullptr);
  EXPECT_FALSE(exact);
  EXPECT_EQ(guessed->alloc, 120);
}

TEST(InPlaceOutputs, UnitsThatDoNotEndInPlaceHaveNone) {
  bool exact = true;
  EXPECT_EQ(EndsInPlace(true).output(1, &exact), nullptr);
  EXPECT_FALSE(exact);
  EXPECT_EQ(EndsInPlace(true).output(7, &exact), nullptr);
}

TEST(InPlaceOutputs, AMarkedAddressWithNothingLiveThereKeepsNothing) {
  EndsInPlace f(true);
  for (Range& r : f.trace.ranges)
    if (r.id == kMarkId) r.name = "inplace output 0xdead0";
  bool exact = false;
  EXPECT_EQ(f.output(0, &exact), nullptr);
  EXPECT_TRUE(exact);  // the mark is trusted: no guess by size
}

TEST(InPlaceOutputs, ReadsOnlyWellFormedMarks) {
  EXPECT_EQ(inPlaceOutputAddress("inplace output 0x7f00aa"), 0x7f00aaull);
  EXPECT_EQ(inPlaceOutputAddress("inplace output 0x"), 0u);
  EXPECT_EQ(inPlaceOutputAddress("inplace output 0x12zz"), 0u);
  EXPECT_EQ(inPlaceOutputAddress("inplace layers.0"), 0u);
  EXPECT_EQ(inPlaceOutputAddress("recompute layers.0"), 0u);
}

// The replay keeps the marked output (its consumer holds it) and drops the
// decoy with the unit's other saved bytes.
TEST(InPlaceOutputs, TheReplayKeepsTheMarkedOutput) {
  EndsInPlace f(true);
  // Baseline: parameters + 3 x (saved + output) + the decoy at the forward's end.
  EXPECT_EQ(f.simPeak({}), 2000);
  // Checkpointing layers.0 frees its 200 saved bytes and the decoy; the output stays.
  EXPECT_EQ(f.simPeak({{0, 0}}), 1700);
}

// SqueezeNet's Fire: its last module call is an in-place ReLU, but a
// torch.cat after it makes the unit's output (twice the ReLU's size here),
// and nothing holds the ReLU's output once the cat has read it. The unit's
// recorded output bytes tell: the cat's result is the output. A unit that
// returns a tuple (no one tensor of its output bytes) keeps the in-place
// output, as before.
TEST(InPlaceOutputs, AnOperationAfterTheInPlaceCallMakesTheOutputWhenTheSizesSaySo) {
  const ChainSpec c;
  const Ns f = testing::forwardStart(c, 0, 0);
  for (bool concatenated : {true, false}) {
    EndsInPlace fire(true);
    for (Range& r : fire.trace.ranges)
      if (r.name == testing::unitName(0) && r.phase == Phase::Forward && r.step == 0) r.output_bytes = 2 * c.output;
    if (concatenated) testing::addAllocation(fire.trace, f + 39, testing::backwardStart(c, 0, 1) + 35, 2 * c.output);
    testing::sortAsLoaded(fire.trace);
    fire.layout = stepLayouts(fire.trace, testing::unitNames(3));
    bool exact = true;
    const Allocation* out = fire.output(0, &exact);
    ASSERT_NE(out, nullptr) << concatenated;
    EXPECT_EQ(out->alloc, concatenated ? f + 39 : 140) << concatenated;
    EXPECT_EQ(exact, !concatenated);
  }
}

// A U-Net block (bench/robustness/probe_job.py) ends in F.relu(x,
// inplace=True), a function, not a module: nothing marks it in place, but
// the relu saves its result, so the trace frees the block's output in the
// block's own backward, like a saved tensor. Its consumers (the max-pool,
// the skip connection) hold it when the block is checkpointed. layers.0
// here: the output (100 B at +30) freed as its backward begins; a saved
// tensor of the output's size made before it (+25) and a small batch
// statistic made after it (+35), both freed in the unit's backward.
struct EndsInAFunctionInPlace : testing::ChainRun {
  static Trace build(Bytes recorded_output_bytes) {
    ChainSpec c;
    Trace t = testing::chainTrace(c);
    Ns f = testing::forwardStart(c, 0, 0), b = testing::backwardStart(c, 0, 0);
    for (Allocation& a : t.allocations)
      if (a.step == 0 && a.alloc == f + 30 && a.bytes == c.output) a.free = b + 1;
    for (Range& r : t.ranges)
      if (r.name == testing::unitName(0) && r.phase == Phase::Forward) r.output_bytes = recorded_output_bytes;
    testing::addAllocation(t, f + 25, b + 30, c.output);  // same size, saved
    testing::addAllocation(t, f + 35, b + 30, 10);        // made after the output, saved
    return t;
  }
  explicit EndsInAFunctionInPlace(Bytes recorded_output_bytes) : ChainRun(build(recorded_output_bytes), 3) {}
};

TEST(InPlaceOutputs, AUnitsOutputItSavesItselfIsFoundByItsOutputBytes) {
  EndsInAFunctionInPlace f(100);
  InPlaceOutputs outputs(f.trace, f.filter);
  StepRegions reg(f.firstStep());
  bool exact = true;
  const Allocation* out = outputs.output(f.firstStep(), reg, 0, &exact);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->alloc, testing::forwardStart(ChainSpec{}, 0, 0) + 30);  // not the earlier one of its size
  EXPECT_FALSE(exact);
  // No output bytes recorded (C++ runtime, NVTX ranges): none is told.
  EndsInAFunctionInPlace unknown(0);
  EXPECT_EQ(InPlaceOutputs(unknown.trace, unknown.filter).output(unknown.firstStep(), reg, 0), nullptr);
}

TEST(InPlaceOutputs, TheReplayAndTheChainKeepAnOutputTheUnitSavedItself) {
  EndsInAFunctionInPlace f(100);
  // Baseline: parameters + 3 x (saved + output) + 110 B more of layers.0's.
  EXPECT_EQ(f.simPeak({}), 2010);
  // Checkpointing layers.0 frees its 310 saved bytes; its output stays.
  EXPECT_EQ(f.simPeak({{0, 0}}), 1700);
  EXPECT_EQ(evaluateChain(f.chain, {{0, 0}}).peak, 1700);
  // A checkpoint that holds layers.1 too drops it (its consumer is inside).
  EXPECT_EQ(f.simPeak({{0, 1}}), evaluateChain(f.chain, {{0, 1}}).peak);
  // Without output bytes it looks saved and is dropped: 100 B under the run.
  EndsInAFunctionInPlace unknown(0);
  EXPECT_EQ(unknown.simPeak({{0, 0}}), 1600);
}

}  // namespace
}  // namespace gcprof::advisor
