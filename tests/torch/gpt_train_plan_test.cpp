// The real gpt_train binary with GCPROF_PLAN: same losses, clean errors.
//
// Runs the gpt_train sample (samples/cpp/gpt_train.cpp) with tiny flags and compares the printed losses,
// so it exercises the plan loader, the checkpoint function and the sample's
// segment wiring together, exactly as `gcprof verify` runs them.
#include "sample_process.h"

#include <string>

#ifndef GPT_TRAIN_PATH
#error "GPT_TRAIN_PATH must name the gpt_train binary"
#endif

namespace {

const std::string kTiny =
    " --layers 4 --hidden 32 --heads 2 --seq 16 --batch 2 --vocab 64 --steps 3 --seed 5";

using TrainRun = SampleRun;

TrainRun run_gpt_train(const std::string& args, const std::string& plan_json = "") {
  return run_sample(GPT_TRAIN_PATH, args, plan_json);
}

std::string plan_with(const std::string& checkpoint) {
  return R"({"format":"gcprof.plan/1","units":["layers.0","layers.1","layers.2","layers.3"],"checkpoint":)" +
         checkpoint + "}";
}

TEST(TorchGptTrain, PrintsOneDeterministicLossLinePerStep) {
  TrainRun a = run_gpt_train(kTiny), b = run_gpt_train(kTiny);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(count_lines_starting(a.out, "step "), 3) << a.out;
  EXPECT_NE(a.out.find("step 0 loss "), std::string::npos);
  EXPECT_EQ(a.out, b.out);
}

TEST(TorchGptTrain, DropoutLossesIdenticalWithAndWithoutCheckpointing) {
  const std::string args = kTiny + " --dropout 0.1";
  TrainRun plain = run_gpt_train(args);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(count_lines_starting(plain.out, "step "), 3);
  // Dropout is really on: the losses differ from a run without it.
  EXPECT_NE(plain.out, run_gpt_train(kTiny).out);

  for (const std::string segments : {R"([["layers.1","layers.2"]])", R"([["layers.0"],["layers.3"]])",
                                     R"([["layers.0","layers.1","layers.2","layers.3"]])"}) {
    TrainRun checked = run_gpt_train(args, plan_with(segments));
    ASSERT_EQ(checked.exit_code, 0) << segments << "\n" << checked.err;
    EXPECT_EQ(plain.out, checked.out) << "checkpointing " << segments << " changed the losses";
  }
}

TEST(TorchGptTrain, PlanNamingAMissingModuleExitsTwoBeforeTheFirstStep) {
  TrainRun r = run_gpt_train(kTiny, R"({"format":"gcprof.plan/1","checkpoint":[["layers.9"]]})");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines_starting(r.out, "step "), 0) << r.out;
  EXPECT_NE(r.err.find("\"layers.9\": did you mean"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("plan.json"), std::string::npos) << r.err;
}

TEST(TorchGptTrain, InvalidPlanFileExitsTwo) {
  TrainRun r = run_gpt_train(kTiny, R"({"format":"something else"})");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("gcprof.plan/2"), std::string::npos) << r.err;
}

}  // namespace
