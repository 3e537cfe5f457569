// Running a sample training binary (gpt_train, resnet_train) as gcprof
// verify does: optionally with GCPROF_PLAN naming a plan written from JSON
// text; stdout, stderr and the exit code come back.
#ifndef GCPROF_TESTS_TORCH_SAMPLE_PROCESS_H
#define GCPROF_TESTS_TORCH_SAMPLE_PROCESS_H

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

struct SampleRun {
  int exit_code = -1;
  std::string out, err;
};

inline std::string sample_temp_path(const std::string& name) {
  return testing::TempDir() + "gcprof_sample_" + std::to_string(getpid()) + "_" + name;
}

// `binary` + `args` (a string of flags, each preceded by a space).
inline SampleRun run_sample(const std::string& binary, const std::string& args, const std::string& plan_json = "") {
  std::string env;
  if (!plan_json.empty()) {
    std::string plan = sample_temp_path("plan.json");
    std::ofstream(plan) << plan_json;
    env = "GCPROF_PLAN='" + plan + "' ";
  }
  std::string err_path = sample_temp_path("stderr.txt");
  std::string cmd = env + "'" + binary + "'" + args + " 2>'" + err_path + "'";
  SampleRun r;
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

inline int count_lines_starting(const std::string& text, const std::string& prefix) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.rfind(prefix, 0) == 0;
  return n;
}

#endif  // GCPROF_TESTS_TORCH_SAMPLE_PROCESS_H
