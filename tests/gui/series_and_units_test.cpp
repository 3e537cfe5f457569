// Series assignment, unit detection, the units table and the live set on a
// fabricated 8-layer training run whose every number is known.
#include <gtest/gtest.h>

#include <algorithm>

#include "fabricated_training.h"
#include "byte_text.h"
#include "live_set.h"
#include "run_view.h"
#include "series_assignment.h"
#include "unit_table.h"

namespace gcprof::view {
namespace {

using testing::TrainingShape;

TEST(SeriesAssignment, DetectsTheRepeatedLayersInForwardOrder) {
  Trace t = testing::fabricateTraining(TrainingShape{});
  std::vector<std::string> units = SeriesAssignment::detectUnits(t);
  ASSERT_EQ(units.size(), 8u);
  EXPECT_EQ(units.front(), "layers.0");
  EXPECT_EQ(units.back(), "layers.7");
}

TEST(SeriesAssignment, PersistentActivationsAndTheRest) {
  TrainingShape shape;
  Trace t = testing::fabricateTraining(shape);
  SeriesAssignment s(t);
  ASSERT_EQ(s.seriesCount(), 10u);
  // Parameters (before step 0), grads and Adam state (step 0, kept): persistent.
  Bytes persistent = 0;
  std::vector<Bytes> by_series(s.seriesCount(), 0);
  for (size_t i = 0; i < t.allocations.size(); ++i) {
    by_series[s.seriesOf(i)] += t.allocations[i].bytes;
    if (s.seriesOf(i) == kSeriesPersistent) persistent += t.allocations[i].bytes;
  }
  EXPECT_EQ(persistent, shape.layers * shape.param_bytes * 4);
  // Each layer's saved and transient activations, every step, are its own.
  Bytes per_layer_step = shape.saved_per_layer * shape.activation_bytes +
                         shape.transient_per_layer * (shape.activation_bytes / 2);
  for (int l = 0; l < shape.layers; ++l)
    EXPECT_EQ(by_series[kFirstUnitSeries + l], per_layer_step * shape.steps) << "layer " << l;
  // Backward temporaries are "other".
  EXPECT_EQ(by_series[kSeriesOther], shape.layers * shape.activation_bytes * shape.steps);
  EXPECT_FALSE(s.seriesColour(kFirstUnitSeries) == s.seriesColour(kFirstUnitSeries + 1));
}

TEST(SeriesAssignment, RowsInAnyOrderKeepTheirSeries) {
  // Three steps; one row alive from step 0 into step 1 (persistent), one
  // within step 2, one within step 0 (neither).
  Trace t;
  for (int64_t k = 0; k < 3; ++k) t.steps.push_back({k, 100 * k, 100 * k + 90});
  auto row = [](Ns alloc, Ns free) {
    Allocation a;
    a.bytes = 64;
    a.alloc = alloc;
    a.free = free;
    return a;
  };
  const std::vector<Allocation> rows = {row(10, 150), row(20, 30), row(210, 220)};
  const std::vector<uint16_t> want = {kSeriesPersistent, kSeriesOther, kSeriesOther};
  std::vector<size_t> order = {0, 1, 2};
  do {  // every order, the later rows first among them
    t.allocations.clear();
    for (size_t i : order) t.allocations.push_back(rows[i]);
    SeriesAssignment s(t);
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(s.seriesOf(i), want[order[i]]) << "row " << order[i];
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(SeriesAssignment, NestedRangesBelongToTheirUnit) {
  Trace t = testing::fabricateTraining(TrainingShape{});
  SeriesAssignment s(t);
  for (size_t i = 0; i < t.ranges.size(); ++i) {
    if (t.ranges[i].name == "layers.3.mlp") {
      EXPECT_EQ(s.unitOfRange(i), 3);
    }
    if (t.ranges[i].name == "layers.5") {
      EXPECT_EQ(s.unitOfRange(i), 5);
    }
  }
}

TEST(SeriesAssignment, PlanUnitsOverrideDetection) {
  Trace t = testing::fabricateTraining(TrainingShape{});
  SeriesAssignment s(t, {"layers.2", "layers.1"});
  ASSERT_EQ(s.units().size(), 2u);
  EXPECT_EQ(s.unitIndex("layers.1"), 1);
}

TEST(UnitTable, ForwardTimeAndSavedBytesPerSteadyStep) {
  TrainingShape shape;
  Trace t = testing::fabricateTraining(shape);
  SeriesAssignment s(t);
  std::vector<UnitStats> stats = unitStats(t, s);
  ASSERT_EQ(stats.size(), 8u);
  for (const UnitStats& u : stats) {
    EXPECT_EQ(u.saved_bytes, static_cast<double>(shape.saved_per_layer * shape.activation_bytes))
        << u.name;
    EXPECT_GT(u.forward_ns, 0.9 * shape.layer_forward_ns) << u.name;
    EXPECT_LT(u.forward_ns, 1.1 * shape.layer_forward_ns) << u.name;
  }
  PlanRecord rec{1, 1, 0, "optimal", 1 << 30, testing::planJson(1, 8, {2, 5}, 1 << 30)};
  PlanView plan = PlanView::fromRecord(rec);
  ASSERT_TRUE(plan.error.empty()) << plan.error;
  applyPlan(stats, &plan);
  EXPECT_TRUE(stats[2].checkpointed);
  EXPECT_FALSE(stats[3].checkpointed);
  EXPECT_EQ(stats[5].predicted_saving, stats[5].saved_bytes);
  EXPECT_EQ(stats[4].predicted_saving, 0);
}

TEST(UnitTable, CheckpointedLayersSaveNothingMeasured) {
  TrainingShape shape;
  shape.checkpointed = {0, 1};
  Trace t = testing::fabricateTraining(shape);
  SeriesAssignment s(t);
  std::vector<UnitStats> stats = unitStats(t, s);
  EXPECT_EQ(stats[0].saved_bytes, 0);
  EXPECT_GT(stats[2].saved_bytes, 0);
}

TEST(LiveSet, LargestFirstAndOnlyWhatIsLive) {
  TrainingShape shape;
  Trace t = testing::fabricateTraining(shape);
  SeriesAssignment s(t);
  // The end of step 1's forward: params, grads, Adam state, every saved activation.
  Ns t_fwd_end = 0;
  for (const Range& r : t.ranges)
    if (r.step == 1 && r.phase == Phase::Forward && r.name == "layers.7") t_fwd_end = r.end - 1;
  std::vector<size_t> live = liveAllocations(t, s, t_fwd_end);
  // 3 persistent allocations a layer: parameter, .grad, Adam state (one buffer).
  size_t expected = shape.layers * 3 + shape.layers * shape.saved_per_layer;
  ASSERT_EQ(live.size(), expected);
  for (size_t i = 1; i < live.size(); ++i)
    EXPECT_GE(t.allocations[live[i - 1]].bytes, t.allocations[live[i]].bytes);
  RunView view(t, {});
  Bytes sum = 0;
  for (size_t i : live) sum += t.allocations[i].bytes;
  EXPECT_EQ(sum, view.memory.totalAt(t_fwd_end));
}

TEST(PlanView, TreePlansMarkSubModulesAndTheBlocksWrappedWhole) {
  // gcprof.plan/2 over the module tree: layers.0 whole, only layers.1's mlp.
  PlanRecord rec{5, 1, 0, "optimal", 1 << 20, R"({"format":"gcprof.plan/2","budget_bytes":1048576,
    "blocks":["layers.0","layers.1"],
    "units":["layers.0.attn","layers.0.mlp","layers.1.attn","layers.1.mlp"],
    "checkpoint":[["layers.0"],["layers.1.mlp"]],
    "segments":[{"kind":"module","module":"layers.0","units":["layers.0.attn","layers.0.mlp"]},
                {"kind":"module","module":"layers.1.mlp","units":["layers.1.mlp"]}]})"};
  PlanView plan = PlanView::fromRecord(rec);
  ASSERT_TRUE(plan.error.empty()) << plan.error;
  EXPECT_EQ(plan.modules, (std::vector<std::string>{"layers.0", "layers.1.mlp"}));
  EXPECT_EQ(plan.blocks, (std::vector<std::string>{"layers.0", "layers.1"}));
  EXPECT_TRUE(plan.checkpointed("layers.0.attn"));
  EXPECT_EQ(plan.checkpointedAs("layers.0.attn"), "layers.0");
  EXPECT_EQ(plan.checkpointedAs("layers.1.mlp"), "layers.1.mlp");
  EXPECT_FALSE(plan.checkpointed("layers.1.attn"));
  EXPECT_EQ(plan.checkpointedAs("layers.1.attn"), "");
  // A v1 plan still reads: its names are the modules.
  rec.json = R"({"format":"gcprof.plan/1","units":["a","b"],"checkpoint":[["b"]]})";
  PlanView old = PlanView::fromRecord(rec);
  ASSERT_TRUE(old.error.empty()) << old.error;
  EXPECT_EQ(old.checkpointedAs("b"), "b");
}

TEST(PlanView, ForeignJsonIsAnErrorNotACrash) {
  PlanRecord rec{4, 1, 0, "optimal", 0, "{\"format\": \"something/2\"}"};
  EXPECT_FALSE(PlanView::fromRecord(rec).error.empty());
  rec.json = "not json at all {";
  EXPECT_FALSE(PlanView::fromRecord(rec).error.empty());
  rec.json = "{\"format\":\"gcprof.plan/1\",\"units\":[1,2]}";  // wrong types
  EXPECT_FALSE(PlanView::fromRecord(rec).error.empty());
}

TEST(PlanView, SelectiveSegmentsOfAV2Plan) {
  PlanRecord rec{5, 1, 0, "optimal", 0,
                 R"({"format":"gcprof.plan/2","units":["a","b"],"checkpoint":[["a"],["b"]],)"
                 R"("segments":[{"module":"a","policy":"selective","save":["aten.mm.default#0"],"kept_bytes":64},)"
                 R"({"module":"b","policy":"whole"}]})"};
  PlanView p = PlanView::fromRecord(rec);
  ASSERT_TRUE(p.error.empty()) << p.error;
  ASSERT_NE(p.saveList("a"), nullptr);
  EXPECT_EQ(*p.saveList("a"), std::vector<std::string>{"aten.mm.default#0"});
  EXPECT_EQ(p.kept[0], 64);
  EXPECT_EQ(p.saveList("b"), nullptr);  // whole
  EXPECT_TRUE(p.checkpointed("b"));
}

TEST(Format, BytesAndDurations) {
  EXPECT_EQ(formatBytes(17), "17 B");
  EXPECT_EQ(formatBytes(3ll << 30), "3.00 GiB");
  EXPECT_EQ(formatBytes(1536), "1.50 KiB");
  EXPECT_EQ(formatDuration(12'300'000), "12.3 ms");
  EXPECT_EQ(formatDuration(2'100'000'000), "2.10 s");
}

}  // namespace
}  // namespace gcprof::view

namespace gcprof::view {
namespace {

// Twelve numbered heads inside each of four blocks: the blocks are the units.
TEST(SeriesAssignment, NestedRepeatsAreNotUnits) {
  Trace t;
  t.steps = {{0, 0, 1'000'000}};
  int64_t id = 0;
  Ns now = 10;
  auto add = [&](const std::string& name, Phase phase, int64_t parent) {
    Range r;
    r.id = ++id;
    r.name = name;
    r.domain = RangeDomain::Module;
    r.phase = phase;
    r.depth = 1 + static_cast<int>(std::count(name.begin(), name.end(), '.'));
    r.parent = parent;
    r.start = now;
    now += 100;
    r.end = now;
    r.step = 0;
    t.ranges.push_back(r);
    return r.id;
  };
  for (int b = 0; b < 4; ++b) {
    int64_t block = add("blocks." + std::to_string(b), Phase::Forward, 0);
    for (int h = 0; h < 12; ++h)
      add("blocks." + std::to_string(b) + ".attn.heads." + std::to_string(h), Phase::Forward, block);
    t.ranges[block - 1].end = now;
  }
  for (int b = 3; b >= 0; --b) add("blocks." + std::to_string(b), Phase::Backward, 0);
  std::vector<std::string> units = SeriesAssignment::detectUnits(t);
  ASSERT_EQ(units.size(), 4u);
  EXPECT_EQ(units[0], "blocks.0");
  EXPECT_EQ(units[3], "blocks.3");
}

}  // namespace
}  // namespace gcprof::view
