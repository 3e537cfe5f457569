// gcprof: record a training job's memory per layer, advise checkpoints,
// verify them by re-running, and report for CI.
#include <cstdio>

#include "commands.h"
#include "advice_error.h"
#include "schema.h"
#include "terminal_text.h"

int main(int argc, char** argv) {
  CLI::App app{
      "gcprof: GPU memory profiler and gradient-checkpoint advisor.\n"
      "  record -> trace.db -> advise -> plan.json -> verify -> report\n"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gcprof 0.1.0 (trace schema " +
                                        std::to_string(gcprof::kSchemaVersion) + ")");
  int exit_code = 0;
  gcprof::cli::addRecord(app, exit_code);
  gcprof::cli::addShow(app, exit_code);
  gcprof::cli::addCtl(app, exit_code);
  gcprof::cli::addAttach(app, exit_code);
  gcprof::cli::addAdvise(app, exit_code);
  gcprof::cli::addVerify(app, exit_code);
  gcprof::cli::addApply(app, exit_code);
  gcprof::cli::addReport(app, exit_code);
  gcprof::cli::addExport(app, exit_code);
  gcprof::cli::addMerge(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const gcprof::advisor::AdviceError& e) {
    // A verb's refusal (a bad plan, budget or option), under the verb's name;
    // it may quote module names from the job, which must not drive the terminal.
    std::string verb = app.get_subcommands().empty() ? "" : " " + app.get_subcommands().front()->get_name();
    std::fprintf(stderr, "gcprof%s: %s\n", verb.c_str(), gcprof::cli::printableLines(e.what()).c_str());
    return 2;
  } catch (const gcprof::StoreError& e) {
    std::fprintf(stderr, "gcprof: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gcprof: %s\n", e.what());
    return 2;
  }
  return exit_code;
}
