// Runs a command with the injector attached (LD_PRELOAD, NVTX and CUDA
// injection, the python shim on PYTHONPATH) and waits for it. Shared by
// `gcprof record` and `gcprof verify`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trace.h"

namespace gcprof::cli {

struct LaunchOptions {
  std::string trace;                  // absolute path of the trace file
  std::vector<std::string> argv;
  std::string cwd;                    // empty: ours
  std::string backend = "auto";       // auto | host | cuda
  std::string cuda_allocator = "native";  // native | async (backend:cudaMallocAsync)
  long long min_bytes = 1024;
  std::string steps;                  // "A:B" or empty
  std::string name;
  bool paused = false;
  long long baseline_run = 0;  // verify: the run this one re-runs
  long long plan_id = 0;       // verify: the plan applied
  std::map<std::string, std::string> extra_env;  // e.g. GCPROF_PLAN for verify
  int timeout_s = 0;  // > 0: the job and its descendants are ended after this long
  int flush_wait_ms = 5000;  // on SIGTERM/SIGINT the job waits this long for its trace
  bool job_stdout_to_stderr = false;  // keeps our stdout for a result (verify --json)
};

struct LaunchResult {
  int exit_code = 0;       // the job's, or 128 + signal
  int signal = 0;          // the signal that ended it, 0 if it exited
  std::vector<long long> runs;  // runs the job's processes created
  long long root_run = 0;       // the run of the process we started
  bool timed_out = false;       // ended by timeout_s
};

// `record` and `verify` refuse to start a job when the trace's disk has less
// free space than this (docs/recording.md).
constexpr unsigned long long kMinFreeBytes = 4ull << 20;

// Throws std::runtime_error when the injector is missing, the trace cannot
// be opened or its disk is full; the job's own failures are in the result.
LaunchResult launchRecorded(const LaunchOptions& options);

// The run row of a job to record (`record` before it starts it, `attach`
// from /proc): its command line as text for show and verify, working
// directory, the environment a re-run needs (`env`: NAME=VALUE, null-ended)
// and the rank that environment gives it.
RunInfo jobRunInfo(const std::vector<std::string>& argv, const std::string& cwd,
                   char** env);

// `p` made absolute against the current directory (the job may run elsewhere).
std::string absolutePath(const std::string& p);

// Where the injector and the python shim of this installation are.
std::string injectorPath();
std::string pythonShimDir();

// Puts `value` in front of a list variable (PATH-like, `sep`-separated).
void prependPath(const char* var, const std::string& value, char sep);

}  // namespace gcprof::cli
