// Selective segments on a hand-built trace with operator ranges: what the
// operator table measures, and what the replay simulator keeps and replays.
#include <gtest/gtest.h>

#include "chain/chain_peak.h"
#include "chain/recording_cost.h"
#include "units/op_table.h"
#include "chain/selective_options.h"
#include "chain/selective_replay_peak.h"
#include "chain/unit_chain.h"
#include "simulate/replay_simulator.h"
#include "chain_run.h"

namespace gcprof::advisor {
namespace {

// One unit "a": forward [100, 200], backward [400, 500], over 10000 bytes of
// parameters. Inside the forward three operator calls:
//   mm   [110, 130] makes X = 1000 (freed at 450, in a's backward: kept)
//   gelu [140, 170] makes Y = 500  (freed at 460: kept)
//   add  [175, 190] makes Z = 300  (freed at 195, before the backward: lingering)
// Unit "a" in its step, with the mm its forward starts with.
testing::TraceBuilder unitWithMatmul() {
  testing::TraceBuilder b;
  b.runtime("python");
  b.step(0, 0, 600);
  b.range("a", Phase::Forward, 100, 200);
  b.range("a", Phase::Backward, 400, 500);
  b.op("aten.mm.default", 110, 130);
  return b;
}

Trace opTrace(const std::string& third = "aten.add.Tensor") {
  testing::TraceBuilder b = unitWithMatmul();
  b.op("aten.gelu.default", 140, 170);
  b.op(third, 175, 190);
  b.alloc(1, -1, 10000);
  b.alloc(120, 450, 1000);
  b.alloc(150, 460, 500);
  b.alloc(180, 195, 300);
  return b.build();
}

// The trace with its one unit "a" as advise derives it.
struct OpRun : testing::ChainRun {
  explicit OpRun(const std::string& third = "aten.add.Tensor") : ChainRun(opTrace(third), {"a"}) {
    addSelectiveOptions(chain, trace, filter, layout);
  }
};

using testing::liveAt;

TEST(SelectiveReplay, OperatorTableKeptAndLingeringBytes) {
  OpRun run;
  std::vector<std::vector<UnitOp>> ops = unitOps(run.trace, run.filter, run.layout);
  ASSERT_EQ(ops.size(), 1u);
  ASSERT_EQ(ops[0].size(), 3u);
  EXPECT_EQ(ops[0][0].key, "aten.mm.default#0");
  EXPECT_EQ(ops[0][0].kept, 1000);
  EXPECT_EQ(ops[0][0].ns, 20);
  EXPECT_EQ(ops[0][1].kept, 500);
  EXPECT_EQ(ops[0][2].key, "aten.add.Tensor#0");
  EXPECT_EQ(ops[0][2].kept, 0);
  EXPECT_EQ(ops[0][2].lingering, 300);
  ASSERT_EQ(run.chain.selective.size(), 1u);
  EXPECT_EQ(run.chain.saved[0], 1500);
  for (const SelectiveOption& o : run.chain.selective[0])
    for (const std::string& k : o.save) EXPECT_NE(k, "aten.add.Tensor#0");  // lingering
}

TEST(SelectiveReplay, SavedCallsStayAliveAndAreNotReplayed) {
  OpRun run;
  Simulation none = run.curve({});
  Simulation whole = run.curve({{0, 0}});
  Simulation keep_mm = run.curve({{0, 0, 1, {"aten.mm.default#0"}}});
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
  Simulation stale = run.curve({{0, 0, 1, {"aten.mm.default#7"}}});
  EXPECT_EQ(liveAt(stale, 300), 10000);
}

// PyTorch's selective checkpointing runs each of the unit's 3 operator
// calls through its policy, forward and recomputation: measured at 7 ns a
// call in the job, a save-list costs 3 x 7 ns more than its recompute, in
// the simulator and in the chain alike, and a save-list whose calls save
// less than that is slower than recomputing the whole unit.
TEST(SelectiveReplay, ASaveListPaysSelectiveCheckpointingsDispatchPerCall) {
  Trace t = opTrace();
  t.scalars.push_back(Scalar{0, "selective_ns_per_op", 7});
  testing::ChainRun run(std::move(t), {"a"});
  addSelectiveOptions(run.chain, run.trace, run.filter, run.layout);
  EXPECT_EQ(run.curve({{0, 0}}).recompute_ns, 100);  // a whole checkpoint dispatches nothing
  EXPECT_EQ(run.curve({{0, 0, 1, {"aten.mm.default#0"}}}).recompute_ns, 100 - 20 + 3 * 7);
  ASSERT_FALSE(run.chain.selective.empty());
  for (const SelectiveOption& o : run.chain.selective[0]) {
    Simulation sim = run.curve({{0, 0, 1, o.save}});
    EXPECT_EQ(run.chain.forward_ns[0] - o.saved_ns, sim.recompute_ns);
  }
}

// What `record --ops` costs an operator call is the mode's own time (each
// step) and PyTorch's dispatch into Python around it (measured once): the
// unit's 3 calls take 3 x (3 + 4) ns off its recorded forward.
TEST(SelectiveReplay, AnOperatorCallsRecordingCostIsTheModesOwnTimeAndPyTorchsDispatch) {
  Trace t = opTrace();
  t.scalars.push_back(Scalar{0, "op_hook_ns_per_call", 3});
  t.scalars.push_back(Scalar{0, "op_dispatch_ns_per_call", 4});
  RecordingCost cost = recordingCost(t);
  EXPECT_EQ(cost.op_ns_per_call, 7);
  RunLayout layout = stepLayouts(t, {"a"});
  ASSERT_FALSE(layout.steps.empty());
  const Ns recorded = layout.steps[0].units[0].forward_ns;
  subtractRecordingCost(layout, t, cost);
  EXPECT_EQ(layout.steps[0].units[0].forward_ns, recorded - 3 * 7);
}

TEST(SelectiveReplay, ChainPeakOfASaveListIsTheSimulatorsNotTheBound) {
  OpRun run;
  const UnitChain& chain = run.chain;
  ASSERT_EQ(chain.selective.size(), 1u);
  const SelectiveOption* keep_mm = nullptr;
  for (const SelectiveOption& o : chain.selective[0])
    if (o.save == std::vector<std::string>{"aten.mm.default#0"}) keep_mm = &o;
  ASSERT_NE(keep_mm, nullptr);
  // The replay re-makes Y and Z, not X: 800 bytes at most.
  EXPECT_EQ(keep_mm->replay_peak, 800);
  Segments plan = {{0, 0, static_cast<int>(keep_mm - chain.selective[0].data()) + 1, keep_mm->save}};
  // 11500 live when the backward begins, Y (500) dropped, 800 re-made: the
  // simulator's 11800, where the bound said 11800 + X = 12800.
  EXPECT_EQ(evaluateChain(chain, plan).peak, 11800);
  EXPECT_EQ(run.simPeak(plan), 11800);
  UnitChain unmeasured = chain;
  for (SelectiveOption& o : unmeasured.selective[0]) o.replay_peak = -1;
  EXPECT_EQ(evaluateChain(unmeasured, plan).peak, 12800);
}

TEST(SelectiveReplay, ASavedOutputAutogradDoesNotKeepIsHeldUntilTheReplay) {
  // The third call is an addmm whose output Z (300, freed at 195) only the
  // next operator used: torchtitan's rule saves it anyway.
  OpRun run("aten.addmm.default");
  const UnitChain& chain = run.chain;
  ASSERT_FALSE(chain.selective.empty());
  const SelectiveOption& matmuls = chain.selective[0][0];
  EXPECT_EQ(matmuls.label, "matmuls");
  EXPECT_EQ(matmuls.save, (std::vector<std::string>{"aten.mm.default#0", "aten.addmm.default#0"}));
  EXPECT_EQ(matmuls.kept, 1000);
  EXPECT_EQ(matmuls.lingering, 300);
  Segments plan = {{0, 0, 1, matmuls.save}};
  Simulation sim = run.curve(plan);
  // Until the backward: parameters, X and Z held (Y dropped).
  EXPECT_EQ(liveAt(sim, 300), 11300);
  // The replay re-makes Y (11800); Z, born after the last tensor autograd
  // keeps (Y), is not reached by it (SelectiveReplay.AReplayStopsAt...).
  EXPECT_EQ(sim.peak, 11800);
  EXPECT_EQ(sim.recompute_ns, 100 - 20 - 15);
  // The chain model agrees here; but Z is held through the backward, which
  // it does not price: the solver never picks this option.
  EXPECT_EQ(evaluateChain(chain, plan).peak, 11800);
  EXPECT_TRUE(matmuls.lingers());
  EXPECT_FALSE(matmuls.lingering_priced);
}

TEST(SelectiveReplay, AReplayStopsAtTheLastTensorAutogradKeeps) {
  // PyTorch's recomputation stops once autograd has again every tensor it
  // keeps: Z (addmm [175, 190], after Y, the last of them) is never reached,
  // and the checkpoint's cache holds it until the backward ends (500).
  OpRun run("aten.addmm.default");
  Simulation sim = run.curve({{0, 0, 1, run.chain.selective[0][0].save}});
  // The replay's time shifts the backward (X freed at 450, Y at 460, its
  // end at 500, as recorded).
  Ns at = sim.recompute_ns;
  EXPECT_EQ(liveAt(sim, at + 455), 10000 + 500 + 300);
  EXPECT_EQ(liveAt(sim, at + 470), 10000 + 300);
  EXPECT_EQ(liveAt(sim, at + 550), 10000);
}

// The addmm first, then gelu: X (kept) at 120, the addmm's Z (lingering,
// freed at 155) at 140, gelu's Y (kept) at 160.
testing::TraceBuilder addmmBeforeGelu() {
  testing::TraceBuilder b = unitWithMatmul();
  b.op("aten.addmm.default", 135, 145);
  b.op("aten.gelu.default", 150, 170);
  b.alloc(1, -1, 10000);
  b.alloc(120, 450, 1000);  // X, kept
  b.alloc(140, 155, 300);   // Z, lingering
  b.alloc(160, 460, 500);   // Y, kept
  return b;
}

TEST(SelectiveReplay, ASavedOutputBeforeTheLastKeptTensorIsFreedInTheReplay) {
  // The addmm comes first this time; gelu's Y (kept) is born after it, so
  // the replay takes Z from the cache and frees it where the forward did.
  testing::TraceBuilder b = addmmBeforeGelu();
  testing::ChainRun run(b.build(), {"a"});
  addSelectiveOptions(run.chain, run.trace, run.filter, run.layout);
  ASSERT_FALSE(run.chain.selective.empty());
  const SelectiveOption& matmuls = run.chain.selective[0][0];
  ASSERT_EQ(matmuls.label, "matmuls");
  ASSERT_EQ(matmuls.lingering, 300);
  Simulation sim = run.curve({{0, 0, 1, matmuls.save}});
  EXPECT_EQ(liveAt(sim, 300), 10000 + 1000 + 300);
  EXPECT_EQ(liveAt(sim, sim.recompute_ns + 455), 10000 + 500);  // X freed at 450, Y at 460
}

TEST(SelectiveReplay, ALingeringOutputTheReplayReachesIsPricedByTheChainAsSimulated) {
  // As above, and gelu makes a 2000-byte workspace at 165, after Z's
  // recorded free (155): the forward's highest moment, which a saved Z
  // raises by its 300 bytes.
  testing::TraceBuilder b = addmmBeforeGelu();
  b.alloc(165, 168, 2000);  // gelu's workspace
  testing::ChainRun run(b.build(), {"a"});
  addSelectiveOptions(run.chain, run.trace, run.filter, run.layout);
  std::vector<std::vector<UnitOp>> ops = unitOps(run.trace, run.filter, run.layout);
  ASSERT_EQ(ops[0][1].key, "aten.addmm.default#0");
  EXPECT_EQ(ops[0][1].lingering, 300);
  EXPECT_FALSE(ops[0][1].lingering_unpriced);  // freed in the forward, born before Y
  ASSERT_FALSE(run.chain.selective.empty());
  const SelectiveOption& matmuls = run.chain.selective[0][0];
  ASSERT_EQ(matmuls.label, "matmuls");
  EXPECT_TRUE(matmuls.lingering_priced);
  EXPECT_EQ(matmuls.forward_peak, 10000 + 1000 + 300 + 500 + 2000);
  Segments plan = {{0, 0, 1, matmuls.save}};
  EXPECT_EQ(run.simPeak(plan), 13800);
  EXPECT_EQ(evaluateChain(run.chain, plan).peak, 13800);
  // Every option the solver may pick is priced as simulated.
  for (size_t i = 0; i < run.chain.selective[0].size(); ++i) {
    const SelectiveOption& o = run.chain.selective[0][i];
    if (!o.lingering_priced) continue;
    Segments p = {{0, 0, static_cast<int>(i) + 1, o.save}};
    EXPECT_EQ(evaluateChain(run.chain, p).peak, run.simPeak(p)) << o.label;
  }
}

TEST(SelectiveReplay, AnOutputChangedInPlaceLaterIsNeverSaved) {
  // relu_ (in place, after a view) changes mm's X, which autograd keeps:
  // cached, X would fail PyTorch's check in the replay (the job would stop
  // in its backward).
  testing::TraceBuilder b = unitWithMatmul();
  b.op("aten._unsafe_view.default", 131, 132);
  b.op("aten.relu_.default", 135, 140);
  b.op("aten.gelu.default", 150, 170);
  b.alloc(1, -1, 10000);
  b.alloc(120, 450, 1000);  // X
  b.alloc(160, 460, 500);   // Y
  testing::ChainRun run(b.build(), {"a"});
  addSelectiveOptions(run.chain, run.trace, run.filter, run.layout);
  std::vector<std::vector<UnitOp>> ops = unitOps(run.trace, run.filter, run.layout);
  ASSERT_EQ(ops[0].size(), 4u);
  EXPECT_TRUE(ops[0][0].mutated_later);
  EXPECT_FALSE(ops[0][3].mutated_later);
  ASSERT_FALSE(run.chain.selective.empty());
  bool gelu = false;
  for (const SelectiveOption& o : run.chain.selective[0])
    for (const std::string& k : o.save) {
      EXPECT_NE(k, "aten.mm.default#0") << o.label;
      gelu = gelu || k == "aten.gelu.default#0";
    }
  EXPECT_TRUE(gelu);
}

TEST(SelectiveReplay, CallsBeforeTheReplaysPeakAreTheOnesItsPeakHoldsAnyway) {
  // The whole replay makes X (120), Y (150) and Z (180, freed at 195): it
  // is highest at 180 (1800). mm and gelu end before; add ends after.
  OpRun run;
  std::vector<std::vector<std::string>> calls = callsBeforeReplayPeak(
      unitOps(run.trace, run.filter, run.layout), run.chain.saved, run.trace, run.filter, run.layout);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], (std::vector<std::string>{"aten.mm.default#0", "aten.gelu.default#0"}));
}

}  // namespace
}  // namespace gcprof::advisor
