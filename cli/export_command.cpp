// gcprof export: a run as a Chrome trace (Perfetto, chrome://tracing).
#include <cstdio>
#include <memory>
#include <string_view>

#include "allocation_stream.h"
#include "commands.h"
#include "report/chrome_trace.h"
#include "report/output_file.h"
#include "trace_input.h"

namespace gcprof::cli {
namespace {

struct ExportArgs {
  std::string trace;
  std::string format = "chrome-trace";
  std::string output;
  int64_t run = 0;
};

// The run is read a piece at a time, twice (allocation_stream.h,
// streamed_curve.h), and the document written as it is made: export's
// memory grows with a piece and the blocks live at once, not with the run.
int runExport(const ExportArgs& a) {
  TraceStore store(a.trace, TraceStore::Mode::ReadOnly);
  int64_t run = chooseRun(store, a.run);
  // First: its read transaction holds for the rest of the run's rows too.
  AllocationStream stream(store, run);
  const Trace rest = store.loadWithoutAllocations(run);
  const advisor::AllocationPass allocations = [&](const advisor::AllocationPiece& take) { stream.read(take); };
  if (a.output.empty() || a.output == "-") {
    advisor::writeChromeTrace(rest, allocations,
                              [](std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); });
    std::fputc('\n', stdout);
    return 0;
  }
  advisor::OutputFile file(a.output);
  const size_t events = advisor::writeChromeTrace(rest, allocations, [&](std::string_view text) { file.append(text); });
  file.append("\n");
  file.commit();
  std::fprintf(stderr, "gcprof export: run %lld written to %s (%zu events; open in ui.perfetto.dev)\n",
               static_cast<long long>(run), a.output.c_str(), events);
  return 0;
}

}  // namespace

void addExport(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* sub = app.add_subcommand(
      "export", "Export a run as a Chrome trace: ranges as slices per thread, memory as a counter\n"
                "track, steps as instants (open in ui.perfetto.dev or chrome://tracing).");
  sub->add_option("trace", args->trace, "Trace file")->required();
  sub->add_option("--format", args->format, "chrome-trace")
      ->check(CLI::IsMember({"chrome-trace"}))
      ->capture_default_str();
  sub->add_option("-o,--output", args->output, "Write here instead of stdout");
  sub->add_option("--run", args->run, "Run to export (default: the newest job's process that trained)");
  sub->callback([args, &exit_code] {
    try {
      exit_code = runExport(*args);
    } catch (const advisor::OutputFileError& e) {
      std::fprintf(stderr, "gcprof export: %s; nothing written (free space or choose another -o)\n",
                   e.what());
      exit_code = 2;
    }
  });
}

}  // namespace gcprof::cli
