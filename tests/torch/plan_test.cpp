// gcprof::torch plan loader: validation, segments, near matches for missing names.
#include <gcprof/torch/plan.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

using gcprof::torch::CheckpointPlan;
using gcprof::torch::PlanError;
using gcprof::torch::SegmentRange;

std::vector<std::string> layers(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("layers." + std::to_string(i));
  return out;
}

const char* kValid = R"({
  "format": "gcprof.plan/1", "trace_run": 1, "strategy": "optimal", "budget_bytes": 1000,
  "units": ["layers.0", "layers.1", "layers.2", "layers.3"],
  "checkpoint": [["layers.2", "layers.3"], ["layers.0"]],
  "predicted": {"peak_bytes": 900, "recompute_ns": 10, "step_ns": 100}
})";

// The message of the PlanError that parsing (or resolving) `text` throws.
std::string error_of(const std::string& text, const std::vector<std::string>& model = layers(4)) {
  try {
    CheckpointPlan::parse(text, "plan.json").resolve(model);
  } catch (const PlanError& e) {
    return e.what();
  }
  return "";
}

TEST(TorchPlan, ParsesAValidPlan) {
  CheckpointPlan plan = CheckpointPlan::parse(kValid, "plan.json");
  EXPECT_EQ(plan.units().size(), 4u);
  ASSERT_EQ(plan.segments().size(), 2u);
  EXPECT_EQ(plan.segments()[0], (std::vector<std::string>{"layers.2", "layers.3"}));
  EXPECT_TRUE(plan.is_checkpointed("layers.3"));
  EXPECT_TRUE(plan.is_checkpointed("layers.0"));
  EXPECT_FALSE(plan.is_checkpointed("layers.1"));
  // Segments come back in forward order as index ranges of the model's units.
  std::vector<SegmentRange> ranges = plan.resolve(layers(4));
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0], (SegmentRange{0, 0}));
  EXPECT_EQ(ranges[1], (SegmentRange{2, 3}));
}

TEST(TorchPlan, AnEmptyPlanCheckpointsNothing) {
  CheckpointPlan plan = CheckpointPlan::parse(R"({"format":"gcprof.plan/1","units":[],"checkpoint":[]})", "p");
  EXPECT_TRUE(plan.resolve(layers(8)).empty());
}

TEST(TorchPlan, RejectsWrongFormats) {
  EXPECT_NE(error_of("not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[1,2]").find("not a gcprof plan"), std::string::npos);
  EXPECT_NE(error_of(R"({"checkpoint": []})").find("no \"format\""), std::string::npos);
  EXPECT_NE(error_of(R"({"format":"other/1","checkpoint":[]})").find("expected \"gcprof.plan/2\""), std::string::npos);
  EXPECT_NE(error_of(R"({"format":"gcprof.plan/3","checkpoint":[]})").find("upgrade gcprof"), std::string::npos);
  // Both versions this gcprof writes or wrote read the same.
  for (const char* format : {"gcprof.plan/1", "gcprof.plan/2"}) {
    CheckpointPlan plan = CheckpointPlan::parse(
        std::string(R"({"format":")") + format + R"(","checkpoint":[["layers.1"]]})", "p");
    EXPECT_EQ(plan.segments().size(), 1u) << format;
  }
  // v2 whole-module segments are read; selective ones only the python runtime applies.
  EXPECT_NO_THROW(CheckpointPlan::parse(
      R"({"format":"gcprof.plan/2","units":[],"checkpoint":[],"segments":[]})", "p"));
  EXPECT_NE(error_of(R"({"format":"gcprof.plan/2","units":["a"],"checkpoint":[["a"]],)"
                     R"("segments":[{"module":"a","policy":"selective","save":["aten.mm.default#0"]}]})")
                .find("only the python runtime"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":"gcprof.plan/1"})").find("no \"checkpoint\""), std::string::npos);
  EXPECT_NE(error_of(R"({"format":"gcprof.plan/1","checkpoint":"layers.1"})").find("list of segments"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":"gcprof.plan/1","checkpoint":[[1]]})").find("not a unit name"), std::string::npos);
  EXPECT_NE(error_of(R"({"format":"gcprof.plan/1","checkpoint":[[]]})").find("empty segment"), std::string::npos);
  // Every message names the file.
  EXPECT_EQ(error_of("not json").rfind("plan.json: ", 0), 0u);
}

TEST(TorchPlan, RejectsInconsistentSegments) {
  const std::string units = R"("units":["layers.0","layers.1","layers.2","layers.3"])";
  EXPECT_NE(error_of(R"({"format":"gcprof.plan/1",)" + units + R"(,"checkpoint":[["layers.0","layers.2"]]})")
                .find("not a run of consecutive units"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":"gcprof.plan/1",)" + units + R"(,"checkpoint":[["layers.1"],["layers.1"]]})")
                .find("checkpointed twice"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":"gcprof.plan/1",)" + units + R"(,"checkpoint":[["head"]]})")
                .find("not in the plan's \"units\""),
            std::string::npos);
  // Without a unit list, consecutiveness is checked against the model instead.
  EXPECT_NE(error_of(R"({"format":"gcprof.plan/1","checkpoint":[["layers.3","layers.1"]]})")
                .find("not a run of consecutive units in this model"),
            std::string::npos);
}

TEST(TorchPlan, MissingNamesListNearMatches) {
  const std::string plan = R"({"format":"gcprof.plan/1","checkpoint":[["layers.12"],["layer.3"],["zzz_unknown"]]})";
  std::string msg = error_of(plan, layers(8));
  EXPECT_NE(msg.find("3 checkpoint units not found"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"layers.12\": did you mean layers.1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"layer.3\": did you mean layers.3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"zzz_unknown\": no similar unit"), std::string::npos) << msg;
  EXPECT_NE(msg.find("layers.0, layers.1, ... layers.7 (8 units)"), std::string::npos) << msg;
}

TEST(TorchPlan, NearMatchesRankByEditDistance) {
  std::vector<std::string> names = {"layers.0", "layers.1", "layers.10", "encoder.layers.1", "head"};
  auto near = gcprof::torch::near_matches("layers.11", names);
  ASSERT_FALSE(near.empty());
  EXPECT_TRUE(near[0] == "layers.1" || near[0] == "layers.10") << near[0];
  EXPECT_EQ(gcprof::torch::near_matches("heads", names).front(), "head");
  EXPECT_TRUE(gcprof::torch::near_matches("optimizer", names).empty());
  EXPECT_LE(gcprof::torch::near_matches("layers.5", names, 2).size(), 2u);
}

TEST(TorchPlan, LoadsFromTheEnvironment) {
  unsetenv("GCPROF_PLAN");
  EXPECT_FALSE(gcprof::torch::plan_from_env().has_value());
  std::string path = testing::TempDir() + "gcprof_torch_plan_" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << kValid;
  setenv("GCPROF_PLAN", path.c_str(), 1);
  auto plan = gcprof::torch::plan_from_env();
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->source(), path);
  EXPECT_EQ(plan->segments().size(), 2u);
  std::remove(path.c_str());
  try {
    gcprof::torch::plan_from_env();
    ADD_FAILURE() << "a missing plan file must throw";
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos);
  }
  unsetenv("GCPROF_PLAN");
}

}  // namespace
