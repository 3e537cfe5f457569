// The real gpt_train binary with GCPROF_PLAN: same losses, clean errors.
//
// Runs the gpt_train sample (samples/cpp/gpt_train.cpp) with tiny flags and compares the printed losses,
// so it exercises the plan loader, the checkpoint function and the sample's
// segment wiring together, exactly as `gcprof verify` runs them.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#ifndef GPT_TRAIN_PATH
#error "GPT_TRAIN_PATH must name the gpt_train binary"
#endif

namespace {

const std::string kTiny =
    " --layers 4 --hidden 32 --heads 2 --seq 16 --batch 2 --vocab 64 --steps 3 --seed 5";

struct TrainRun {
  int exit_code = -1;
  std::string out, err;
};

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "gcprof_gpt_" + std::to_string(getpid()) + "_" + name;
}

TrainRun run_gpt_train(const std::string& args, const std::string& plan_json = "") {
  std::string env;
  if (!plan_json.empty()) {
    std::string plan = temp_path("plan.json");
    std::ofstream(plan) << plan_json;
    env = "GCPROF_PLAN='" + plan + "' ";
  }
  std::string err_path = temp_path("stderr.txt");
  std::string cmd = env + "'" + GPT_TRAIN_PATH + "'" + args + " 2>'" + err_path + "'";
  TrainRun r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::stringstream err;
  err << std::ifstream(err_path).rdbuf();
  r.err = err.str();
  return r;
}

std::string plan_with(const std::string& checkpoint) {
  return R"({"format":"gcprof.plan/1","units":["layers.0","layers.1","layers.2","layers.3"],"checkpoint":)" +
         checkpoint + "}";
}

int count_lines_starting(const std::string& text, const std::string& prefix) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.rfind(prefix, 0) == 0;
  return n;
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
