// gcprof show: what a trace holds — runs, steps, peak live bytes, and per
// module its forward time, saved bytes and backward time (averaged over steps).
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "allocation_stream.h"
#include "commands.h"
#include "simulate/device_peaks.h"
#include "memory/memory_curve.h"
#include "advice_error.h"
#include "units/module_stats.h"
#include "units/streamed_module_stats.h"
#include "units/unit_selection.h"
#include "saturating.h"
#include "size_parse.h"
#include "terminal_text.h"
#include "trace_store.h"

namespace gcprof::cli {
namespace {

struct ShowArgs {
  std::string trace;
  long long run = 0;
  bool json = false;
  bool all = false;
};

nlohmann::json parameterGathersJson(const std::vector<advisor::ParameterGather>& gathers) {
  nlohmann::json out = nlohmann::json::array();
  for (const advisor::ParameterGather& g : gathers)
    out.push_back({{"module", g.module}, {"ranges", g.ranges}, {"bytes", g.bytes}});
  return out;
}

nlohmann::json describe(TraceStore& store, int64_t id) {
  using namespace gcprof::advisor;
  AllocationStream stream(store, id);  // first: its read transaction holds for the rest of the run
  const Trace t = store.loadWithoutAllocations(id);
  // The rows are read a piece at a time, never held (streamed_module_stats.h).
  const StreamedModuleStats summary =
      streamedModuleStats(t.ranges, [&](const AllocationPiece& take) { stream.read(take); });
  const AllocationFilter& filter = summary.survey.filter;
  const std::vector<ModuleStats>& modules = summary.modules;
  nlohmann::json units = nlohmann::json::array();
  // What `advise --units auto` would take, and by which rule (docs/plan.md).
  nlohmann::json auto_units;
  try {
    UnitSelection sel = selectUnits(t, modules, "auto");
    auto_units = {{"rule", sel.rule}, {"names", sel.names}};
  } catch (const AdviceError& e) {
    auto_units = {{"rule", ""}, {"names", nlohmann::json::array()}, {"error", e.what()}};
  }
  for (const ModuleStats& m : modules) {
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
  nlohmann::json run = {{"id", r.id},
          {"command", command.is_discarded() ? nlohmann::json(r.command) : command},
          {"cwd", r.cwd},
          {"name", r.name},
          {"status", r.status},
          {"exit_code", r.exit_code},
          {"backend", r.backend},
          {"runtime", r.runtime},
          {"pid", r.pid},
          {"rank", r.rank},
          {"local_rank", r.local_rank},
          {"world_size", r.world_size},
          // The job this run belongs to: its launcher's run, or its own id.
          {"job_run", r.job_run > 0 ? r.job_run : r.id},
          {"baseline_run", r.baseline_run},
          {"plan_id", r.plan_id},
          {"steps", t.steps.size()},
          {"duration_ns", r.ended > r.started ? sat::sub(r.ended, r.started) : 0},
          {"peak_bytes", summary.survey.peak},
          {"memory", filter.describe()},
          {"allocations", stream.rows()},
          {"ranges", t.ranges.size()},
          {"kernels", t.kernels.size()},
          {"small_allocations", r.small_allocs},
          {"small_bytes", r.small_bytes},
          {"dropped_events", r.dropped_events},
          {"unmatched_frees", r.unmatched_frees},
          {"losses", losses},
          {"parameter_gathers", parameterGathersJson(summary.gathers)},
          {"units", units},
          {"auto_units", auto_units}};
  // CUDA runs: both peaks (simulate/device_peaks.h); -1 where unknown. A
  // run without device rows (the filter is the host's) has none to read.
  // A device run's rows are loaded for them: the allocator model replays
  // every tensor event sorted, which a sweep by allocation time cannot.
  DevicePeaks device = filter.device ? devicePeaks(store.load(id)) : DevicePeaks{};
  if (device.device) {
    run["allocated_peak_bytes"] = device.allocated;
    run["reserved_peak_bytes"] = device.reserved;
    run["reserved_source"] = device.reserved >= 0 ? device.reserved_source : device.why_not;
    // PyTorch's own allocator observed: the device memory it does not see.
    if (device.observed_allocator) run["other_device_peak_bytes"] = device.other;
  }
  return run;
}

// A launcher's ranks at a glance: where they differ is what a plan must survive.
void printRanks(const nlohmann::json& launcher) {
  std::printf("  job of %zu ranks (world size %d)\n", launcher["ranks"].size(),
              launcher["ranks"].empty() ? 0 : launcher["ranks"][0]["world_size"].get<int>());
  std::printf("  %5s %6s %5s %10s %6s %6s %12s\n", "rank", "local", "run", "status", "steps", "units",
              "peak");
  for (const auto& r : launcher["ranks"])
    std::printf("  %5d %6d %5lld %10s %6zu %6zu %12s\n", r["rank"].get<int>(),
                r["local_rank"].get<int>(), r["id"].get<long long>(),
                r["status"].get<std::string>().c_str(), r["steps"].get<size_t>(),
                r["units"].size(), formatBytes(r["peak_bytes"].get<long long>()).c_str());
}

void printRun(const nlohmann::json& r, bool all) {
  std::string rank;
  if (r["rank"].get<int>() >= 0)
    rank = "  rank " + std::to_string(r["rank"].get<int>()) + "/" +
           std::to_string(r["world_size"].get<int>()) + " of job run " +
           std::to_string(r["job_run"].get<long long>());
  std::printf("run %lld%s  %s  [%s, exit %d, %s]\n", r["id"].get<long long>(), rank.c_str(),
              printable(r["command"].is_array() ? r["command"].dump() : "").c_str(),
              r["status"].get<std::string>().c_str(), r["exit_code"].get<int>(),
              r["backend"].get<std::string>().c_str());
  if (r.contains("ranks") && !r["ranks"].empty()) printRanks(r);
  std::printf("  steps %zu   peak %s (%s)   %zu allocation events, %zu ranges",
              r["steps"].get<size_t>(), formatBytes(r["peak_bytes"].get<long long>()).c_str(),
              r["memory"].get<std::string>().c_str(), r["allocations"].get<size_t>(),
              r["ranges"].get<size_t>());
  std::printf(", %lld small allocations counted\n", r["small_allocations"].get<long long>());
  if (r["dropped_events"].get<long long>() > 0)
    std::printf("  WARNING: %lld events were dropped\n", r["dropped_events"].get<long long>());
  if (!r["parameter_gathers"].empty()) {
    std::printf("  FSDP parameter gathers (all steps; recomputation reuses backward's):");
    for (const auto& g : r["parameter_gathers"])
      std::printf(" %s %s", g["module"].get<std::string>().c_str(),
                  formatBytes(g["bytes"].get<long long>()).c_str());
    std::printf("\n");
  }
  if (r["units"].empty()) return;
  const auto& au = r["auto_units"];
  if (au.contains("error")) {
    std::printf("  auto units: none (%s)\n", printable(au["error"].get<std::string>()).c_str());
  } else {
    const auto& n = au["names"];
    std::printf("  auto units: %zu, %s .. %s  [%s]\n", n.size(), printable(n.front().get<std::string>()).c_str(),
                printable(n.back().get<std::string>()).c_str(),
                printable(au["rule"].get<std::string>()).c_str());
  }
  std::printf("  %-32s %5s %12s %12s %14s\n", "module (per step)", "depth", "forward ms",
              "backward ms", "saved");
  int hidden = 0;
  for (const auto& u : r["units"]) {
    // Leaves of deep models are many and small: show them with --all.
    if (!all && u["depth"].get<int>() > 2 && u["saved_bytes"].get<long long>() == 0) {
      ++hidden;
      continue;
    }
    // The python shim names the model itself "" (its children carry no prefix).
    std::string name = u["name"].get<std::string>();
    if (name.empty()) name = "(model)";
    std::printf("  %-32s %5d %12.3f %12.3f %14s\n", printable(name).c_str(),
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
  std::map<long long, nlohmann::json> described;
  for (const RunInfo& r : runs)
    if (!a.run || r.id == a.run || r.job_run == a.run) described[r.id] = describe(store, r.id);
  for (const RunInfo& r : runs) {
    if (r.job_run <= 0 || r.rank < 0 || !described.count(r.job_run)) continue;
    nlohmann::json& launcher = described[r.job_run];
    if (!launcher.contains("ranks")) launcher["ranks"] = nlohmann::json::array();
    launcher["ranks"].push_back(described[r.id]);
  }
  for (const RunInfo& r : runs) {
    if (!described.count(r.id) || (a.run && r.id != a.run)) continue;
    nlohmann::json run = described[r.id];
    // In JSON a launcher names its ranks; each rank is its own entry too.
    if (run.contains("ranks") && a.json) {
      nlohmann::json ids = nlohmann::json::array();
      for (const auto& k : run["ranks"]) ids.push_back(k["id"]);
      run["ranks"] = ids;
    }
    out["runs"].push_back(run);
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
