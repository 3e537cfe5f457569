// gcprof ctl: pause and resume the recording of a running job from outside.
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "commands.h"
#include "trace_store.h"

namespace gcprof::cli {

namespace {

// Why no job records into `trace` now ("" when one may): every run has a
// final status, or each run still "running" names a process that is gone.
std::string whyNotRecording(const std::string& trace) {
  std::vector<RunInfo> runs;
  try {
    runs = TraceStore(trace, TraceStore::Mode::ReadOnly).runs();
  } catch (const std::exception& e) {
    return std::string("cannot read it (") + e.what() + ")";
  }
  bool running = false;
  for (const RunInfo& r : runs) {
    if (r.status != "running") continue;
    running = true;
    // The root's run has no pid until its job ends: `record` is then alive.
    if (r.pid <= 0 || kill(static_cast<pid_t>(r.pid), 0) == 0 || errno == EPERM) return "";
  }
  if (running) return "no recording is running into it (its recorded processes are gone)";
  return "no recording is running into it (every run in it has ended)";
}

}  // namespace

void addCtl(CLI::App& app, int& exit_code) {
  auto trace = std::make_shared<std::string>();
  auto action = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "ctl",
      "Pause or resume recording of a job running under `gcprof record` (it polls TRACE.ctl).\n"
      "While paused the job runs at full speed: no ranges, steps or scalars are kept, and\n"
      "only memory alive during a recorded window is written.");
  sub->add_option("trace", *trace, "The trace the job records into")->required();
  sub->add_option("action", *action, "pause | resume")
      ->required()
      ->check(CLI::IsMember({"pause", "resume"}));
  sub->callback([trace, action, &exit_code] {
    // `gcprof record` creates the trace before the job starts: a missing one
    // is a typo, and a .ctl next to it would pause a later recording.
    struct stat st;
    if (stat(trace->c_str(), &st) != 0) {
      std::fprintf(stderr, "gcprof: %s: no such trace; give the -o of a running `gcprof record`\n",
                   trace->c_str());
      exit_code = 2;
      return;
    }
    // Nobody would read the .ctl of a finished trace, until a later
    // recording into it: refuse, and leave nothing behind.
    std::string why = whyNotRecording(*trace);
    if (!why.empty()) {
      std::fprintf(stderr,
                   "gcprof: %s: %s; `gcprof ctl` pauses or resumes a job that `gcprof record -o "
                   "%s` is recording now (nothing was changed)\n",
                   trace->c_str(), why.c_str(), trace->c_str());
      exit_code = 2;
      return;
    }
    std::ofstream out(*trace + ".ctl", std::ios::trunc);
    out << *action << "\n";
    out.flush();
    if (!out) {
      std::fprintf(stderr, "gcprof: %s.ctl: cannot write it\n", trace->c_str());
      exit_code = 2;
      return;
    }
    exit_code = 0;
  });
}

}  // namespace gcprof::cli
