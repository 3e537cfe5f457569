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
