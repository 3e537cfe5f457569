// The real resnet_train binary with GCPROF_PLAN: the BatchNorm running
// statistics, not only the losses, must be those of the run without a plan.
//
// A replay in backward runs the segment's forward again in training mode;
// unless gcprof::torch::checkpoint puts the running state back, every
// BatchNorm in a checkpointed block counts each batch twice.
#include "sample_process.h"

#include <string>

#ifndef RESNET_TRAIN_PATH
#error "RESNET_TRAIN_PATH must name the resnet_train binary"
#endif

namespace {

const std::string kShape = " --layers 4 --width 4 --image 8 --batch 4 --classes 5 --steps 3";
const std::string kTiny = kShape + " --seed 3";

SampleRun run_resnet_train(const std::string& args, const std::string& plan_json = "") {
  return run_sample(RESNET_TRAIN_PATH, args, plan_json);
}

std::string plan_with(const std::string& checkpoint) {
  return R"({"format":"gcprof.plan/1","units":["layers.0","layers.1","layers.2","layers.3"],"checkpoint":)" +
         checkpoint + "}";
}

TEST(TorchResNetTrain, PrintsLossesThenTheRunningStateDeterministically) {
  SampleRun a = run_resnet_train(kTiny), b = run_resnet_train(kTiny);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(count_lines_starting(a.out, "step "), 3) << a.out;
  EXPECT_NE(a.out.find("step 0 loss "), std::string::npos) << a.out;
  EXPECT_NE(a.out.find(" num_batches_tracked 3\n"), std::string::npos) << a.out;
  EXPECT_EQ(a.out, b.out);
  // The statistics line can fail: another seed trains other statistics.
  SampleRun other = run_resnet_train(kShape + " --seed 4");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(a.out.substr(a.out.find("buffers ")), other.out.substr(other.out.find("buffers ")));
}

TEST(TorchResNetTrain, RunningStatisticsAndLossesIdenticalWithAndWithoutCheckpointing) {
  SampleRun plain = run_resnet_train(kTiny);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  // One block, a segment across the downsampling block, every block.
  for (const std::string segments : {R"([["layers.1"]])", R"([["layers.1","layers.2"],["layers.3"]])",
                                     R"([["layers.0","layers.1","layers.2","layers.3"]])"}) {
    SampleRun checked = run_resnet_train(kTiny, plan_with(segments));
    ASSERT_EQ(checked.exit_code, 0) << segments << "\n" << checked.err;
    EXPECT_EQ(plain.out, checked.out) << "checkpointing " << segments
                                      << " changed the losses or the running statistics";
  }
}

TEST(TorchResNetTrain, PlanNamingAMissingModuleExitsTwoBeforeTheFirstStep) {
  SampleRun r = run_resnet_train(kTiny, R"({"format":"gcprof.plan/1","checkpoint":[["layers.7"]]})");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count_lines_starting(r.out, "step "), 0) << r.out;
  EXPECT_NE(r.err.find("\"layers.7\": did you mean"), std::string::npos) << r.err;
}

}  // namespace
