// gcprof show: what a trace holds — runs, steps, peak live bytes, and per
// module its forward time, saved bytes and backward time (averaged over steps).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "model/memory_curve.h"
#include "model/module_stats.h"
#include "size_parse.h"
#include "trace_store.h"

namespace gcprof::cli {
namespace {

struct ShowArgs {
  std::string trace;
  long long run = 0;
  bool json = false;
  bool all = false;
};

nlohmann::json describe(const Trace& t) {
  using namespace gcprof::advisor;
  MemoryCurve curve = memoryCurve(t);
  nlohmann::json units = nlohmann::json::array();
  for (const ModuleStats& m : moduleStats(t)) {
    units.push_back({{"name", m.name},
                     {"depth", m.depth},
                     {"calls", m.calls},
                     {"forward_ns", m.forward_ns},
                     {"backward_ns", m.backward_ns},
                     {"saved_bytes", m.saved_bytes},
                     {"input_bytes", m.input_bytes},
                     {"output_bytes", m.output_bytes}});
  }
  nlohmann::json losses = nlohmann::json::array();
  for (const Scalar& s : t.scalars)
    if (s.name == "loss") losses.push_back({{"step", s.step}, {"value", s.value}});
  const RunInfo& r = t.run;
  nlohmann::json command = nlohmann::json::parse(r.command, nullptr, false);
  return {{"id", r.id},
          {"command", command.is_discarded() ? nlohmann::json(r.command) : command},
          {"cwd", r.cwd},
          {"name", r.name},
          {"status", r.status},
          {"exit_code", r.exit_code},
          {"backend", r.backend},
          {"runtime", r.runtime},
          {"pid", r.pid},
          {"rank", r.rank},
          {"baseline_run", r.baseline_run},
          {"plan_id", r.plan_id},
          {"steps", t.steps.size()},
          {"duration_ns", r.ended > r.started ? r.ended - r.started : 0},
          {"peak_bytes", curve.peak},
          {"memory", curve.filter.describe()},
          {"allocations", t.allocations.size()},
          {"ranges", t.ranges.size()},
          {"kernels", t.kernels.size()},
          {"small_allocations", r.small_allocs},
          {"small_bytes", r.small_bytes},
          {"dropped_events", r.dropped_events},
          {"unmatched_frees", r.unmatched_frees},
          {"losses", losses},
          {"units", units}};
}

// Names and commands come from the job: an escape sequence in a module name
// must not drive the user's terminal. C0 controls, DEL and UTF-8's C1
// controls (0xC2 0x80-0x9F, CSI among them) print as '?'.
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F &&
        static_cast<unsigned char>(s[i + 1]) >= 0x80) {
      out += '?';
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      out += '?';
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void printRun(const nlohmann::json& r, bool all) {
  std::printf("run %lld  %s  [%s, exit %d, %s]\n", r["id"].get<long long>(),
              printable(r["command"].is_array() ? r["command"].dump() : "").c_str(),
              r["status"].get<std::string>().c_str(), r["exit_code"].get<int>(),
              r["backend"].get<std::string>().c_str());
  std::printf("  steps %zu   peak %s (%s)   %zu allocation events, %zu ranges",
              r["steps"].get<size_t>(), formatBytes(r["peak_bytes"].get<long long>()).c_str(),
              r["memory"].get<std::string>().c_str(), r["allocations"].get<size_t>(),
              r["ranges"].get<size_t>());
  std::printf(", %lld small allocations counted\n", r["small_allocations"].get<long long>());
  if (r["dropped_events"].get<long long>() > 0)
    std::printf("  WARNING: %lld events were dropped\n", r["dropped_events"].get<long long>());
  if (r["units"].empty()) return;
  std::printf("  %-32s %5s %12s %12s %14s\n", "module (per step)", "depth", "forward ms",
              "backward ms", "saved");
  int hidden = 0;
  for (const auto& u : r["units"]) {
    // Leaves of deep models are many and small: show them with --all.
    if (!all && u["depth"].get<int>() > 2 && u["saved_bytes"].get<long long>() == 0) {
      ++hidden;
      continue;
    }
    std::printf("  %-32s %5d %12.3f %12.3f %14s\n", printable(u["name"].get<std::string>()).c_str(),
                u["depth"].get<int>(), u["forward_ns"].get<double>() / 1e6,
                u["backward_ns"].get<double>() / 1e6,
                formatBytes(u["saved_bytes"].get<long long>()).c_str());
  }
  if (hidden) std::printf("  (%d deeper modules without saved bytes; --all shows them)\n", hidden);
}

int runShow(const ShowArgs& a) {
  TraceStore store(a.trace, TraceStore::Mode::ReadOnly);
  std::vector<RunInfo> runs = store.runs();
  if (a.run && std::none_of(runs.begin(), runs.end(), [&](const RunInfo& r) { return r.id == a.run; }))
    throw StoreError(a.trace + ": no run " + std::to_string(a.run) + " (it has " +
                     std::to_string(runs.size()) + " runs; see `gcprof show " + a.trace + "`)");
  nlohmann::json out = {{"trace", a.trace}, {"schema", kSchemaVersion}, {"runs", nlohmann::json::array()}};
  for (const RunInfo& r : runs) {
    if (a.run && r.id != a.run) continue;
    out["runs"].push_back(describe(store.load(r.id)));
  }
  if (a.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%s: %zu run(s), %zu plan(s), %zu verification(s)\n", a.trace.c_str(), runs.size(),
              store.plans().size(), store.verifications().size());
  for (const auto& r : out["runs"]) printRun(r, a.all);
  return 0;
}

}  // namespace

void addShow(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ShowArgs>();
  CLI::App* sub = app.add_subcommand(
      "show", "Summarise a trace: runs, steps, peak live bytes and per-module forward time,\n"
              "saved bytes (allocated in its forward, freed in its backward) and backward time.");
  sub->add_option("trace", args->trace, "Trace file")->required();
  sub->add_option("--run", args->run, "Only this run");
  sub->add_flag("--json", args->json, "Machine-readable output");
  sub->add_flag("--all", args->all, "List every module, not only those that save memory");
  sub->callback([args, &exit_code] { exit_code = runShow(*args); });
}

}  // namespace gcprof::cli
