#include "what_if_command.h"

#include <cstdio>
#include <memory>
#include <optional>

#include "advice_error.h"
#include "plan/plan_store.h"
#include "report/output_file.h"
#include "report/what_if_table.h"
#include "scale/run_size.h"
#include "scale/what_if.h"
#include "terminal_text.h"
#include "text_format.h"
#include "trace_store.h"

namespace gcprof::cli {
namespace {

using namespace gcprof::advisor;

std::vector<RunSize> chooseRuns(const WhatIfArgs& w, TraceStore& store) {
  if (w.size_of.empty()) return sizedRuns(store.runs(), w.size_name, store.path());
  std::vector<RunSize> out;
  for (const std::string& s : w.size_of) {
    RunSize r = parseSizeOf(s, w.size_name.empty() ? "size" : w.size_name);
    store.run(r.run);  // throws naming the file when the run is not there
    out.push_back(r);
  }
  return out;
}

std::optional<GrowthForm> formOf(const std::string& fit) {
  if (fit == "auto") return std::nullopt;
  if (fit == "affine") return GrowthForm::Affine;
  if (fit == "quadratic") return GrowthForm::Quadratic;
  throw AdviceError("--fit " + fit + ": expected auto, affine or quadratic");
}

std::string cell(const StrategyAtSize& s) {
  return formatBytes(s.prediction.peak) + (s.fits ? "  " : " *");
}

// How far the model can be trusted (the same sentences as the reports').
void printFitNotes(const WhatIf& w) {
  for (const std::string& n : whatIfNotes(whatIfJson(w))) std::printf("  %s\n", printable(n).c_str());
}

void printWhatIf(const WhatIf& w, const std::string& trace) {
  std::printf("gcprof advise --what-if %s: %s, runs", printable(w.size_name).c_str(), printable(trace).c_str());
  for (const auto& [run, size] : w.runs)
    std::printf(" %lld (%s=%lld)", static_cast<long long>(run), w.size_name.c_str(), static_cast<long long>(size));
  std::printf("\n  %s growth fitted%s; %s segments; budget %s = %s\n", toString(w.form).c_str(),
              w.measure == SizeMeasure::Side ? (" in " + w.size_name + "^2 (--side)").c_str() : "",
              toString(w.kind).c_str(), w.budget_text.c_str(), formatBytes(w.budget).c_str());
  if (w.size_step > 1)
    std::printf("  sizes searched: multiples of %lld (--size-step)\n", static_cast<long long>(w.size_step));
  if (w.headroom.bytes > 0)
    std::printf("  headroom %s (%s): sizes fit %s\n", formatBytes(w.headroom.bytes).c_str(),
                w.headroom.rule.c_str(), formatBytes(w.budget - w.headroom.bytes).c_str());
  printFitNotes(w);
  std::printf("\n  largest %s that fits:\n  %-10s %10s %12s %12s %7s\n", w.size_name.c_str(), "strategy",
              w.size_name.c_str(), "peak", "step time", "units");
  for (const LargestSize& l : w.largest) {
    if (l.size == 0) {
      std::printf("  %-10s %10s   (not even %s=%lld fits)\n", l.strategy.c_str(), "-", w.size_name.c_str(),
                  static_cast<long long>(w.size_step));
      continue;
    }
    int units = 0;
    for (const Segment& s : l.at.prediction.segments) units += s.last - s.first + 1;
    std::printf("  %-10s %9lld%s %12s %12s %7d\n", l.strategy.c_str(), static_cast<long long>(l.size),
                l.capped ? "+" : " ", formatBytes(l.at.prediction.peak).c_str(),
                formatNs(l.at.prediction.step_ns).c_str(), units);
  }
  std::printf("\n  predicted peak by %s (* over the budget less headroom, %s; r = recorded size):\n  %10s  ",
              w.size_name.c_str(), formatBytes(w.budget - w.headroom.bytes).c_str(), w.size_name.c_str());
  for (const auto& p : w.table.front().plans) std::printf(" %14s", p.strategy.c_str());
  std::printf("\n");
  for (const WhatIfRow& r : w.table) {
    std::printf("  %10lld %s", static_cast<long long>(r.size), r.recorded ? "r" : " ");
    for (const StrategyAtSize& s : r.plans) std::printf(" %14s", cell(s).c_str());
    std::printf("\n");
  }
}

}  // namespace

int runWhatIf(const WhatIfArgs& args, const std::string& trace, const AdviceRequest& request,
              const std::string& output, bool json, bool no_store) {
  WhatIfRequest req;
  req.advice = request;
  req.size_name = args.size_name.empty() ? "size" : args.size_name;
  req.form = formOf(args.fit);
  if (args.size != 0) req.size = args.size;
  req.max_size = args.max_size;
  req.measure = args.side ? SizeMeasure::Side : SizeMeasure::Count;
  req.size_step = args.size_step;
  if (args.max_size < 1) throw AdviceError("--max-size must be at least 1");
  if (!output.empty() && !req.size)
    throw AdviceError("-o with --what-if writes the plan for one size: add --size N");
  WhatIf w;
  {
    TraceStore store(trace, TraceStore::Mode::ReadOnly);
    std::vector<RunSize> sizes = chooseRuns(args, store);
    std::vector<std::unique_ptr<Trace>> traces;
    std::vector<std::pair<int64_t, const Trace*>> runs;
    for (const RunSize& s : sizes) {
      traces.push_back(std::make_unique<Trace>(store.load(s.run)));
      runs.push_back({s.size, traces.back().get()});
    }
    w = whatIf(runs, req);
  }
  nlohmann::json doc = w.plan ? sizedPlanJson(w) : whatIfJson(w);
  bool write = w.plan && (w.plan->feasible || w.plan->strategy != Strategy::Optimal);
  // As advise: a plan file that cannot be written is not stored either.
  std::optional<OutputFile> out;
  if (write && !output.empty()) {
    try {
      out.emplace(output);
    } catch (const OutputFileError& e) {
      throw AdviceError(std::string(e.what()) + ": cannot write the plan file there; nothing stored");
    }
  }
  if (write && !no_store) {
    try {
      TraceStore store(trace, TraceStore::Mode::ReadWrite);
      doc["plan_id"] = advisor::storePlan(store, doc, monotonicNs());
    } catch (const StoreError& e) {
      std::fprintf(stderr, "gcprof advise: warning: plan not stored in the trace (%s)\n", e.what());
    }
  }
  bool json_out = json && output.empty();
  if (json_out) {
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    printWhatIf(w, trace);
  }
  if (w.plan && !json_out) {
    const PlanOutcome& o = w.plan->chosen;
    std::printf("\n  at %s=%lld: %s plan peaks at %s (%s budget), step %s, %zu segments\n",
                w.size_name.c_str(), static_cast<long long>(w.plan_size), o.name.c_str(), formatBytes(o.peak).c_str(),
                o.fits ? "within the" : "OVER the", formatNs(o.step_ns).c_str(), o.segments.size());
  }
  // As advise: an infeasible optimal plan is not written; a budget-blind
  // one is, with the message.
  if (w.plan && !w.plan->feasible && w.plan->strategy == Strategy::Optimal) {
    std::fprintf(stderr, "gcprof advise: %s\n", printable(w.plan->message).c_str());
    return 1;
  }
  if (w.plan && !w.plan->feasible) std::fprintf(stderr, "gcprof advise: %s\n", printable(w.plan->message).c_str());
  if (out) {
    try {
      out->commit(doc.dump(2) + "\n");
    } catch (const OutputFileError& e) {
      throw AdviceError(std::string(e.what()) + ": the plan file was not written");
    }
    std::printf("  plan written to %s", output.c_str());
    if (doc.contains("plan_id"))
      std::printf(" (stored as plan %lld in %s)", doc["plan_id"].get<long long>(), trace.c_str());
    std::printf("\n");
  }
  return w.plan && !w.plan->feasible ? 1 : 0;
}

}  // namespace gcprof::cli
