// gcprof ctl: pause and resume the recording of a running job from outside.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>

#include "commands.h"

namespace gcprof::cli {

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
