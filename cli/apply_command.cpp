// gcprof apply: run a job with a plan applied, without recording. The same
// as `GCPROF_PLAN=plan.json python3 train.py` with gcprof's python shim on
// PYTHONPATH, which a plain shell does not have: without the shim nothing
// reads GCPROF_PLAN and the job would run silently unplanned.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "commands.h"
#include "advice_error.h"
#include "plan/plan_file.h"
#include "recorded_launch.h"

namespace gcprof::cli {
namespace {

struct ApplyArgs {
  std::string plan;
  std::vector<std::string> command;
};

int runApply(const ApplyArgs& a) {
  advisor::readPlanFile(a.plan);  // a bad plan fails here, before the job starts
  if (a.command.empty()) throw advisor::AdviceError("no command to run: give it after --");
  std::string shim = pythonShimDir();
  if (shim.empty())
    throw advisor::AdviceError("gcprof's python shim (sitecustomize.py) is not installed next to this "
                               "gcprof; reinstall gcprof");
  prependPath("PYTHONPATH", shim, ':');
  setenv("GCPROF_PLAN", absolutePath(a.plan).c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& s : a.command) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  std::fflush(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "gcprof apply: cannot run '%s': %s\n", argv[0], std::strerror(errno));
  return 127;
}

}  // namespace

void addApply(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ApplyArgs>();
  CLI::App* sub = app.add_subcommand(
      "apply", "Run a command with a plan applied and nothing recorded (python: the plan's modules\n"
               "are checkpointed from the first training step; LibTorch: GCPROF_PLAN for gcprof::torch).\n"
               "Exit code: the command's; 2 for a bad plan.");
  sub->add_option("plan", args->plan, "Plan file written by `gcprof advise -o`")->required();
  sub->add_option("command", args->command, "The training command (after --)");
  sub->callback([args, &exit_code] { exit_code = runApply(*args); });
}

}  // namespace gcprof::cli
