#include "run_metadata.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "config.h"
#include "run_environment.h"
#include "recorder.h"
#include "recording_state.h"

extern char** environ;

namespace gcprof::inject {
namespace {

// argv as the job saw it.
std::string commandJson() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out = "[", arg;
  bool first = true;
  for (char ch : raw) {
    if (ch != 0) {
      arg += ch;
      continue;
    }
    out += (first ? "" : ",") + gcprof::jsonString(arg);
    first = false;
    arg.clear();
  }
  return out + "]";
}

int64_t envInt(const char* name, int64_t fallback) {
  const char* v = getenv(name);
  return v && *v ? strtoll(v, nullptr, 10) : fallback;
}

}  // namespace

gcprof::RunInfo describeThisProcess() {
  gcprof::RunInfo r;
  r.command = commandJson();
  char cwd[4096];
  r.cwd = getcwd(cwd, sizeof cwd) ? cwd : "";
  r.env = gcprof::relevantEnvironmentJson(environ);
  r.pid = getpid();
  r.rank = static_cast<int>(envInt("RANK", -1));
  r.local_rank = static_cast<int>(envInt("LOCAL_RANK", -1));
  r.world_size = static_cast<int>(envInt("WORLD_SIZE", -1));
  // Not the process `gcprof record` started (that one has its run already):
  // a descendant, e.g. a rank torchrun spawned. It belongs to the same job.
  r.job_run = config().run_id;
  r.started = nowNs();
  r.min_bytes = config().min_bytes;
  r.backend = recordingState().backend;
  if (const char* n = getenv("GCPROF_RUN_NAME")) r.name = n;
  // Set by `gcprof verify`, so that every process of a re-run job is linked.
  r.baseline_run = envInt("GCPROF_BASELINE_RUN", 0);
  r.plan_id = envInt("GCPROF_PLAN_ID", 0);
  return r;
}

}  // namespace gcprof::inject
