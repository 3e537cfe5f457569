// gcprof report: a verification as Markdown, JSON, JUnit XML or HTML, with
// the exit code CI needs (0 every gate passed, 1 a gate failed, 2 bad input).
#include <cstdio>
#include <memory>

#include "commands.h"
#include "report/output_file.h"
#include "report/report_data.h"

namespace gcprof::cli {
namespace {

struct ReportArgs {
  std::string trace;
  std::string format = "md";
  std::string output;
  int64_t verification = 0;
};

int runReport(const ReportArgs& a) {
  TraceStore store(a.trace, TraceStore::Mode::ReadOnly);
  advisor::ReportData r = advisor::loadReport(store, a.verification);
  std::string text;
  if (a.format == "md") text = advisor::markdownReport(r);
  else if (a.format == "json") text = advisor::reportJson(r).dump(2) + "\n";
  else if (a.format == "junit") text = advisor::junitReport(r);
  else if (a.format == "html") text = advisor::htmlReport(r);
  if (a.output.empty() || a.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    advisor::writeOutputFile(a.output, text);
    std::fprintf(stderr, "gcprof report: %s written to %s (verdict %s)\n", a.format.c_str(),
                 a.output.c_str(), r.v.verdict.c_str());
  }
  bool pass = r.v.verdict == "PASS";
  for (const advisor::Gate& g : r.v.gates) pass = pass && g.passed;
  return pass ? 0 : 1;
}

}  // namespace

void addReport(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* sub = app.add_subcommand(
      "report", "Report the newest verification (verdict, predicted vs measured, gates) for CI.\n"
                "Exit 0 when every gate passed, 1 when one failed, 2 for bad input.");
  sub->add_option("trace", args->trace, "Trace file with a verification (gcprof verify)")->required();
  sub->add_option("--format", args->format, "md | json | junit | html")
      ->check(CLI::IsMember({"md", "json", "junit", "html"}))
      ->capture_default_str();
  sub->add_option("-o,--output", args->output, "Write here instead of stdout");
  sub->add_option("--verification", args->verification, "Verification id (default: the newest)");
  sub->callback([args, &exit_code] {
    try {
      exit_code = runReport(*args);
    } catch (const advisor::OutputFileError& e) {
      std::fprintf(stderr, "gcprof report: %s; no report written (free space or choose another -o)\n",
                   e.what());
      exit_code = 2;
    }
  });
}

}  // namespace gcprof::cli
