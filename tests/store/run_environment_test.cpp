// What a run records of its environment for `gcprof verify` to set again:
// what shapes training, never credentials.
#include <gtest/gtest.h>

#include <string>

#include "run_environment.h"

using namespace gcprof;

TEST(RunEnvironment, KeepsWhatShapesTrainingAndLeavesOutTheRest) {
  const char* vars[] = {"OMP_NUM_THREADS=1", "ACCELERATE_MIXED_PRECISION=bf16",
                        "ACCELERATE_GRADIENT_ACCUMULATION_STEPS=2", "HOME=/root", "PATH=/usr/bin", nullptr};
  std::string json = relevantEnvironmentJson(const_cast<char**>(vars));
  EXPECT_EQ(json,
            "{\"OMP_NUM_THREADS\":\"1\",\"ACCELERATE_MIXED_PRECISION\":\"bf16\","
            "\"ACCELERATE_GRADIENT_ACCUMULATION_STEPS\":\"2\"}");
}

TEST(RunEnvironment, NeverKeepsCredentials) {
  const char* vars[] = {"HF_TOKEN=hf_x", "ACCELERATE_API_KEY=k", "TORCH_SECRET=s", "TOKENIZERS_PARALLELISM=false",
                        nullptr};
  EXPECT_EQ(relevantEnvironmentJson(const_cast<char**>(vars)), "{\"TOKENIZERS_PARALLELISM\":\"false\"}");
}

// What loads code into the job or steers the recording: a job recorded under
// another injector (CUDA_INJECTION64_PATH is a CUDA_ variable) must not carry
// it into the trace, and verify restores none of it whatever a trace holds.
TEST(RunEnvironment, NeverKeepsOrRestoresLoaderAndInjectorVariables) {
  const char* vars[] = {"CUDA_INJECTION64_PATH=/x/inject.so", "CUDA_VISIBLE_DEVICES=0", "PYTHONHASHSEED=0",
                        "PYTHONPATH=/shim", nullptr};
  EXPECT_EQ(relevantEnvironmentJson(const_cast<char**>(vars)),
            "{\"CUDA_VISIBLE_DEVICES\":\"0\",\"PYTHONHASHSEED\":\"0\"}");
  for (const char* name : {"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "CUDA_INJECTION64_PATH",
                           "NVTX_INJECTION64_PATH", "GCPROF_DB", "GCPROF_PLAN", "PYTHONPATH", "PYTHONSTARTUP",
                           "GLIBC_TUNABLES"}) {
    EXPECT_TRUE(loaderOrInjector(name)) << name;
    EXPECT_NE(whyNotRestored(name).find("verify sets its own"), std::string::npos) << name;
  }
  EXPECT_EQ(whyNotRestored("OMP_NUM_THREADS"), "");
  EXPECT_EQ(whyNotRestored("PYTHONHASHSEED"), "");
  EXPECT_NE(whyNotRestored("EDITOR").find("not a training setting"), std::string::npos);
}
