// gcprof ctl: pause and resume the recording of a running job from outside.
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
    std::ofstream out(*trace + ".ctl", std::ios::trunc);
    out << *action << "\n";
    exit_code = out ? 0 : 2;
  });
}

}  // namespace gcprof::cli
