// Selective segments on a hand-built trace with operator ranges: what the
// operator table measures, and what the replay simulator keeps and replays.
#include <gtest/gtest.h>

#include "model/op_table.h"
#include "model/selective_options.h"
#include "model/unit_chain.h"
#include "simulate/replay_simulator.h"
#include "trace_builder.h"

namespace gcprof::advisor {
namespace {

// One unit "a": forward [100, 200], backward [400, 500], over 10000 bytes of
// parameters. Inside the forward three operator calls:
//   mm   [110, 130] makes X = 1000 (freed at 450, in a's backward: kept)
//   gelu [140, 170] makes Y = 500  (freed at 460: kept)
//   add  [175, 190] makes Z = 300  (freed at 195, before the backward: lingering)
Trace opTrace() {
  testing::TraceBuilder b;
  b.runtime("python");
  b.step(0, 0, 600);
  b.range("a", Phase::Forward, 100, 200);
  b.range("a", Phase::Backward, 400, 500);
  b.alloc(1, -1, 10000);
  Trace t = b.build();
  auto op = [&](const std::string& name, Ns s, Ns e) {
    Range r;
    r.id = static_cast<int64_t>(t.ranges.size()) + 100;
    r.name = "op " + name;
    r.domain = RangeDomain::User;
    r.phase = Phase::User;
    r.start = s;
    r.end = e;
    t.ranges.push_back(r);
  };
  op("aten.mm.default", 110, 130);
  op("aten.gelu.default", 140, 170);
  op("aten.add.Tensor", 175, 190);
  auto alloc = [&](Ns at, Ns free, Bytes bytes) {
    Allocation a;
    a.id = static_cast<int64_t>(t.allocations.size()) + 1;
    a.addr = 0x1000 * static_cast<uint64_t>(a.id);
    a.bytes = bytes;
    a.alloc = at;
    a.free = free;
    a.step = 0;
    t.allocations.push_back(a);
  };
  alloc(120, 450, 1000);
  alloc(150, 460, 500);
  alloc(180, 195, 300);
  std::stable_sort(t.ranges.begin(), t.ranges.end(), [](const Range& x, const Range& y) { return x.start < y.start; });
  std::stable_sort(t.allocations.begin(), t.allocations.end(),
                   [](const Allocation& x, const Allocation& y) { return x.alloc < y.alloc; });
  return t;
}

Bytes liveAt(const Simulation& sim, Ns t) {
  Bytes live = 0;
  for (const MemoryPoint& p : sim.curve)
    if (p.time <= t) live = p.live;
  return live;
}

TEST(SelectiveReplay, OperatorTableKeptAndLingeringBytes) {
  Trace t = opTrace();
  RunLayout layout = stepLayouts(t, {"a"});
  std::vector<std::vector<UnitOp>> ops = unitOps(t, primaryFilter(t), layout);
  ASSERT_EQ(ops.size(), 1u);
  ASSERT_EQ(ops[0].size(), 3u);
  EXPECT_EQ(ops[0][0].key, "aten.mm.default#0");
  EXPECT_EQ(ops[0][0].kept, 1000);
  EXPECT_EQ(ops[0][0].ns, 20);
  EXPECT_EQ(ops[0][1].kept, 500);
  EXPECT_EQ(ops[0][2].key, "aten.add.Tensor#0");
  EXPECT_EQ(ops[0][2].kept, 0);
  EXPECT_EQ(ops[0][2].lingering, 300);
  UnitChain chain = buildUnitChain(t, primaryFilter(t), layout, {"a"});
  addSelectiveOptions(chain, t, primaryFilter(t), layout);
  ASSERT_EQ(chain.selective.size(), 1u);
  EXPECT_EQ(chain.saved[0], 1500);
  for (const SelectiveOption& o : chain.selective[0])
    for (const std::string& k : o.save) EXPECT_NE(k, "aten.add.Tensor#0");  // lingering
}

TEST(SelectiveReplay, SavedCallsStayAliveAndAreNotReplayed) {
  Trace t = opTrace();
  AllocationFilter filter = primaryFilter(t);
  RunLayout layout = stepLayouts(t, {"a"});
  SimulationOptions curve;
  curve.want_curve = true;
  Simulation none = simulate(t, filter, layout, {}, curve);
  Simulation whole = simulate(t, filter, layout, {{0, 0}}, curve);
  Simulation keep_mm = simulate(t, filter, layout, {{0, 0, 1, {"aten.mm.default#0"}}}, curve);
  // Between the forward and the backward: everything kept / nothing / X kept.
  EXPECT_EQ(liveAt(none, 300), 11500);
  EXPECT_EQ(liveAt(whole, 300), 10000);
  EXPECT_EQ(liveAt(keep_mm, 300), 11000);
  // The replay re-makes Y and Z (not X) in the selective case: its peak is
  // 10000 + X kept + Y + Z = 11800, the same as the whole replay's 11800.
  EXPECT_EQ(whole.peak, 11800);
  EXPECT_EQ(keep_mm.peak, 11800);
  // Recompute: the forward's 100 ns, less the saved call's 20 ns.
  EXPECT_EQ(whole.recompute_ns, 100);
  EXPECT_EQ(keep_mm.recompute_ns, 80);
  // A save-list naming a call that is not there keeps nothing.
  Simulation stale = simulate(t, filter, layout, {{0, 0, 1, {"aten.mm.default#7"}}}, curve);
  EXPECT_EQ(liveAt(stale, 300), 10000);
}

}  // namespace
}  // namespace gcprof::advisor
