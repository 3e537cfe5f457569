#include "model/in_place_outputs.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>

#include "chain_traces.h"
#include "model/unit_chain.h"
#include "simulate/replay_simulator.h"

namespace gcprof::advisor {
namespace {

using testing::chainTrace;
using testing::ChainSpec;
using testing::unitName;

const Allocation& madeAt(const Trace& t, Ns at, Bytes bytes) {
  for (const Allocation& a : t.allocations)
    if (a.alloc == at && a.bytes == bytes) return a;
  throw std::runtime_error("no such allocation");
}

// layers.0 (forward [110, 150], backward from 810) ends in an in-place
// activation (ReLU(inplace=True) over its output, made at 140). A decoy of
// the same size, made earlier (120) and freed first in the backward (810),
// is what the old guess by size took; the shim's "inplace output 0x<addr>"
// range inside the activation's call names the output itself.
struct EndsInPlace {
  Trace trace;
  AllocationFilter filter;
  RunLayout layout;

  explicit EndsInPlace(bool address_marked) {
    trace = chainTrace(ChainSpec{});
    for (Allocation& a : trace.allocations)
      if (a.alloc == 140 && a.bytes == 100) a.free = 811;
    Allocation decoy = madeAt(trace, 140, 100);
    decoy.id = 999;
    decoy.addr = 0x999000;
    decoy.alloc = 120;
    decoy.free = 810;
    trace.allocations.push_back(decoy);
    Range act;
    act.id = 1000;
    act.name = "layers.0.act";
    act.domain = RangeDomain::Module;
    act.phase = Phase::Forward;
    act.depth = 3;
    act.start = 145;
    act.end = 148;
    act.input_bytes = act.output_bytes = 100;
    trace.ranges.push_back(act);
    if (address_marked) {
      Range mark;
      mark.id = 1001;
      mark.name = "inplace output 0x" + hex(madeAt(trace, 140, 100).addr);
      mark.domain = RangeDomain::User;
      mark.phase = Phase::User;
      mark.parent = act.id;
      mark.start = mark.end = 147;
      trace.ranges.push_back(mark);
    }
    std::stable_sort(trace.ranges.begin(), trace.ranges.end(),
                     [](const Range& a, const Range& b) { return a.start < b.start; });
    std::stable_sort(trace.allocations.begin(), trace.allocations.end(),
                     [](const Allocation& a, const Allocation& b) { return a.alloc < b.alloc; });
    trace.scalars.push_back(Scalar{0, "inplace layers.0.act", 1.0});
    filter = primaryFilter(trace);
    layout = stepLayouts(trace, {unitName(0), unitName(1), unitName(2)});
  }
  static std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
  }
  const Allocation* output(int k, bool* exact) const {
    InPlaceOutputs outputs(trace, filter);
    StepRegions reg(layout.steps[0]);
    return outputs.output(layout.steps[0], reg, k, exact);
  }
};

TEST(InPlaceOutputs, TheMarkedAddressNamesTheOutputNotTheFirstFreedOfItsSize) {
  bool exact = false;
  // The fixtures outlive the pointers they return (they point into their traces).
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
    if (r.id == 1001) r.name = "inplace output 0xdead0";
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
  EXPECT_EQ(simulate(f.trace, f.filter, f.layout, {}).peak, 2000);
  // Checkpointing layers.0 frees its 200 saved bytes and the decoy; the output stays.
  EXPECT_EQ(simulate(f.trace, f.filter, f.layout, {{0, 0}}).peak, 1700);
}

}  // namespace
}  // namespace gcprof::advisor
