// gcprof advise: which units to checkpoint so that a step fits a memory
// budget with the least recomputation (advisor/plan/advice.h does the work).
#include <algorithm>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "commands.h"
#include "advice_error.h"
#include "budget_option.h"
#include "job.h"
#include "plan/advice.h"
#include "plan/job_advice.h"
#include "plan/plan_file.h"
#include "plan/plan_store.h"
#include "report/output_file.h"
#include "size_parse.h"
#include "terminal_text.h"
#include "text_format.h"
#include "trace_input.h"
#include "what_if_command.h"

namespace gcprof::cli {
namespace {

using namespace gcprof::advisor;

struct AdviseArgs {
  std::string trace;
  std::string budget;
  std::string strategy = "optimal";
  std::string max_slowdown;
  std::string headroom;  // default: headroom.h's rule
  std::string units = "auto";
  std::string segments;  // module | region; default from the run's runtime
  std::string output;
  std::string memory;    // reserved | allocated; default from the run
  bool json = false;
  bool no_store = false;
  bool whole_only = false;
  int64_t run = 0;
  int max_segment_units = -1;
  WhatIfArgs what_if;
};

AdviceRequest request(const AdviseArgs& a) {
  AdviceRequest r;
  r.units = a.units;
  r.strategy = parseStrategy(a.strategy);
  r.max_segment_units = a.max_segment_units;
  r.selective = !a.whole_only;
  // Which option is wrong, named in its error.
  const char* option = "--budget";
  try {
    if (!a.budget.empty()) r.budget = parseBudget(a.budget);
    option = "--headroom";
    if (!a.headroom.empty()) {
      r.headroom.given = true;
      r.headroom.text = a.headroom;
      if (a.headroom.back() == '%') {
        r.headroom.percent = true;
        r.headroom.fraction = parsePercent(a.headroom);
        if (r.headroom.fraction < 0 || r.headroom.fraction >= 1)
          throw std::invalid_argument("'" + a.headroom + "' must be from 0% to below 100%");
      } else {
        r.headroom.bytes = parseBytes(a.headroom);
        if (r.headroom.bytes != 0 && a.headroom.find_first_not_of("0123456789.") == std::string::npos)
          throw std::invalid_argument("'" + a.headroom + "' has no unit; write " + a.headroom + "% or " +
                                      a.headroom + "MiB");
      }
    }
    option = "--max-slowdown";
    if (!a.max_slowdown.empty()) r.max_slowdown = parsePercent(a.max_slowdown);
  } catch (const std::invalid_argument& e) {
    throw AdviceError(std::string(option) + ": " + e.what());
  }
  if (!a.memory.empty()) r.memory = parseMemoryMeasure(a.memory);
  if (a.segments == "module") r.kind = SegmentKind::Module;
  else if (a.segments == "region") r.kind = SegmentKind::Region;
  else if (!a.segments.empty())
    throw AdviceError("--segments " + a.segments + ": expected module or region");
  return r;
}

// A selective segment's save-list, a few per line.
void printSaveList(const std::vector<std::string>& save) {
  std::string line;
  for (size_t i = 0; i < save.size(); ++i) {
    std::string item = printable(save[i]) + (i + 1 < save.size() ? ", " : "");
    if (!line.empty() && line.size() + item.size() > 84) {
      std::printf("  %4s    save: %s\n", "", line.c_str());
      line.clear();
    }
    line += item;
  }
  if (!line.empty()) std::printf("  %4s    save: %s\n", "", line.c_str());
}

void printUnits(const Advice& a) {
  const UnitChain& c = a.chain;
  std::vector<int> segment_of(c.size(), -1);
  for (size_t s = 0; s < a.chosen.segments.size(); ++s)
    for (int k = a.chosen.segments[s].first; k <= a.chosen.segments[s].last; ++k)
      segment_of[k] = static_cast<int>(s);
  std::printf("\n  %4s  %-28s %12s %12s  %s\n", "#", "unit", "forward", "saved", "checkpoint");
  int n = c.size();
  for (int k = 0; k < n; ++k) {
    // Long chains: the first and last units tell the story.
    if (n > 48 && k == 24) {
      std::printf("  %4s  ... %d more units ...\n", "", n - 36);
      k = n - 12;
    }
    std::string mark;
    const Segment* seg = segment_of[k] < 0 ? nullptr : &a.chosen.segments[segment_of[k]];
    if (seg && seg->selective()) {
      const SelectiveOption& opt = c.selective[k][seg->option - 1];
      mark = "selective (" + printable(opt.label) + ", keeps " + formatBytes(opt.kept) +
             (opt.lingers() ? " + holds " + formatBytes(opt.lingering) + " to the replay" : "") + ", " +
             formatNs(opt.saved_ns) + " less recompute)";
    } else if (seg) {
      std::string module = a.tree_plan ? a.tree.moduleOf(*seg) : c.names[seg->first];
      bool whole_block = a.tree_plan && a.tree.split(a.tree.block_of[k]) && module != c.names[k];
      mark = "yes (segment " + std::to_string(segment_of[k] + 1) +
             (whole_block ? ": block " + printable(module) : "") + ")";
    }
    std::printf("  %4d  %-28s %12s %12s  %s\n", k, printable(c.names[k]).c_str(), formatNs(c.forward_ns[k]).c_str(),
                formatBytes(c.saved[k]).c_str(), mark.c_str());
    if (seg && seg->selective()) printSaveList(seg->save);
  }
}

void printComparison(const Advice& a) {
  // With the allocator modelled, both peaks; "of budget" is the budgeted one's.
  bool both = a.memory.reserved_modelled;
  std::printf("\n  %-10s %12s%s %10s %14s %12s %9s %6s\n", "plan", both ? "allocated" : "peak",
              both ? "     reserved" : "", "of budget", "recompute/step", "step time", "slowdown", "units");
  auto row = [&](const char* label, const PlanOutcome& o, bool chosen) {
    int units = checkpointedModules(o, a);
    double slow = a.baseline.step_ns > 0 ? static_cast<double>(o.step_ns) / a.baseline.step_ns - 1 : 0;
    char reserved[32] = "";
    if (both) std::snprintf(reserved, sizeof reserved, " %12s", formatBytes(o.reserved_peak).c_str());
    std::printf("  %-10s %12s%s %10s %14s %12s %9s %6d%s\n", label, formatBytes(o.peak).c_str(), reserved,
                formatPercent(static_cast<double>(a.budgeted(o)) / a.budget).c_str(),
                formatNs(o.recompute_ns).c_str(), formatNs(o.step_ns).c_str(),
                formatPercent(slow, true).c_str(), units, chosen ? "   <- this plan" : "");
  };
  row("recorded", a.baseline, a.strategy == Strategy::None);
  row("every", a.every, a.strategy == Strategy::Every);
  row("uniform", a.uniform, a.strategy == Strategy::Uniform);
  if (a.blocks) row("blocks", *a.blocks, false);
  if (a.strategy == Strategy::Optimal) row("optimal", a.chosen, true);
  if (a.strategy == Strategy::Matmuls) row("matmuls", a.chosen, true);
}

// Which modules the plan wraps and at which level: over the module tree a
// checkpoint is a whole block or one of its sub-modules.
void printModules(const Advice& a) {
  if (!a.tree_plan) return;
  std::printf("\n  checkpointed modules:%s\n", a.chosen.segments.empty() ? " none" : "");
  for (const Segment& s : a.chosen.segments) {
    std::string module = a.tree.moduleOf(s);
    bool block = std::find(a.tree.blocks.begin(), a.tree.blocks.end(), module) != a.tree.blocks.end();
    std::printf("    %-36s %s\n", printable(module).c_str(), block ? "block" : "sub-module of a block");
  }
}

void printHuman(const Advice& a, const std::string& trace) {
  std::printf("gcprof advise: %s run %lld (%s runtime, %s memory, %s segments)\n", printable(trace).c_str(),
              static_cast<long long>(a.run.id), printable(a.run.runtime).c_str(), a.filter.describe().c_str(),
              toString(a.kind).c_str());
  // Step indices need not start at 0 (record --steps, a resumed job): say
  // which step is the steady one and how many complete steps there are.
  std::printf("  %d units (%s); %zu complete step%s, steady from step %lld; recorded peak %s, step %s\n",
              a.chain.size(), printable(a.units.rule).c_str(), a.chain.complete_steps,
              a.chain.complete_steps == 1 ? "" : "s", static_cast<long long>(a.chain.steady_step),
              formatBytes(a.baseline.peak).c_str(), formatNs(a.baseline.step_ns).c_str());
  std::printf("  memory budgeted: %s\n", a.memory.why.c_str());
  if (a.memory.reserved_modelled)
    std::printf("  recorded reserved peak %s (predicted)\n", formatBytes(a.baseline.reserved_peak).c_str());
  if (a.has_budget)
    std::printf("  budget %s = %s (%s of the recorded %s peak)\n", printable(a.budget_text).c_str(),
                formatBytes(a.budget).c_str(),
                formatPercent(static_cast<double>(a.budget) / a.budgeted(a.baseline)).c_str(),
                toString(a.memory.measure).c_str());
  if (a.has_budget)
    std::printf("  headroom %s (%s): plans fit %s\n", formatBytes(a.headroom.bytes).c_str(),
                a.headroom.rule.c_str(), formatBytes(a.limit()).c_str());
  if (a.max_slowdown) std::printf("  max slowdown %s\n", formatPercent(*a.max_slowdown).c_str());
  if (a.recording_cost.hook_ns_per_call > 0)
    std::printf("  forward times less the recording's own hooks: %s per module call (measured)\n",
                formatNs(a.recording_cost.hook_ns_per_call).c_str());
  if (!a.chain.selective.empty()) {
    std::printf("  selective checkpoints offered: operator ranges recorded (record --ops)%s\n",
                a.recording_cost.op_ns_per_call > 0
                    ? (", forward times less " + formatNs(a.recording_cost.op_ns_per_call) + " per operator call").c_str()
                    : "");
    if (a.recording_cost.selective_ns_per_op > 0)
      std::printf("  a save-list's recompute includes PyTorch's selective dispatch: %s per operator call "
                  "of its unit (measured)\n",
                  formatNs(a.recording_cost.selective_ns_per_op).c_str());
  }
  for (const ExcludedUnit& u : a.excluded)
    std::printf("  left out: %s %s\n", printable(u.name).c_str(), printable(u.reason).c_str());
  if (a.tree_plan) {
    int split = 0;
    for (size_t b = 0; b < a.tree.blocks.size(); ++b) split += a.tree.split(static_cast<int>(b));
    std::printf("  plan over the module tree: %zu blocks, %d split into their sub-modules (%d units); "
                "a checkpoint is a whole block or one sub-module\n",
                a.tree.blocks.size(), split, a.chain.size());
  }
  if (!a.tree_plan && !a.tree_note.empty())
    std::printf("  plans over whole blocks only, not their sub-modules: %s\n", a.tree_note.c_str());
  printUnits(a);
  printComparison(a);
  printModules(a);
  std::printf("\n  %s: peak %s set %s%s\n", toString(a.strategy).c_str(),
              (formatBytes(a.chosen.peak) +
               (a.memory.reserved_modelled ? " (reserved " + formatBytes(a.chosen.reserved_peak) + ")" : ""))
                  .c_str(),
              printable(a.chosen.peak_where).c_str(),
              a.exact ? "" : " (search thinned: optimal within the kept states)");
}

void printRanks(const JobAdvice& job) {
  std::printf("\n  job: launcher run %lld, %zu ranks; the plan must fit on every rank\n",
              static_cast<long long>(job.launcher.id), job.outcomes.size());
  std::printf("  %5s %5s %14s %14s %10s %14s %12s\n", "rank", "run", "recorded peak",
              "predicted peak", "of budget", "recompute/step", "step time");
  for (size_t r = 0; r < job.outcomes.size(); ++r) {
    const RankOutcome& o = job.outcomes[r];
    std::printf("  %5d %5lld %14s %14s %10s %14s %12s%s\n", o.run.rank,
                static_cast<long long>(o.run.id), formatBytes(o.recorded_peak).c_str(),
                formatBytes(o.planned.peak).c_str(),
                formatPercent(static_cast<double>(o.planned.peak) / job.summary.budget).c_str(),
                formatNs(o.planned.recompute_ns).c_str(), formatNs(o.planned.step_ns).c_str(),
                static_cast<int>(r) == job.worst ? "   <- worst rank" : "");
  }
  std::printf("  plan solved on rank %d; the unit and plan tables above are the worst rank's\n",
              job.outcomes[job.source].run.rank);
}

int runAdvise(const AdviseArgs& args) {
  if (access(args.trace.c_str(), R_OK) != 0)
    throw StoreError(args.trace + ": cannot open (no such file or not readable)");
  if (args.what_if.enabled())
    return runWhatIf(args.what_if, args.trace, request(args), args.output, args.json, args.no_store);
  Advice a;
  std::optional<JobAdvice> job;
  {
    TraceStore store(args.trace, TraceStore::Mode::ReadOnly);
    int64_t run = chooseRun(store, args.run);
    Job j = jobOf(store, run);
    // A rank asked for by --run is advised alone; its launcher means the job.
    if (j.distributed() && run == j.launcher.id) {
      std::vector<Trace> ranks;
      for (const RunInfo& r : j.ranks) ranks.push_back(store.load(r.id));
      job = adviseJob(j.launcher, ranks, request(args));
      a = job->summary;
    } else {
      a = advise(store.load(run), request(args));
    }
  }
  bool write = a.feasible || a.strategy != Strategy::Optimal;
  nlohmann::json doc = job ? jobPlanJson(*job) : planJson(a);
  if (job) a.run = job->launcher;  // the plan is the job's: stored against its launcher
  // Opened before the plan is stored: a plan that cannot be written is not
  // one the trace should remember either.
  std::optional<OutputFile> out;
  if (write && !args.output.empty()) {
    try {
      out.emplace(args.output);
    } catch (const OutputFileError& e) {
      throw AdviceError(std::string(e.what()) + ": cannot write the plan file there; nothing stored");
    }
  }
  if (write && !args.no_store) {
    try {
      TraceStore store(args.trace, TraceStore::Mode::ReadWrite);
      doc["plan_id"] = storePlan(store, doc, monotonicNs());
    } catch (const StoreError& e) {
      std::fprintf(stderr, "gcprof advise: warning: plan not stored in the trace (%s)\n", printable(e.what()).c_str());
    }
  }
  bool json_out = args.json && args.output.empty();
  if (!json_out) {
    printHuman(a, args.trace);
    if (job) printRanks(*job);
  }
  if (write && !args.output.empty()) {
    try {
      out->commit(doc.dump(2) + "\n");
    } catch (const OutputFileError& e) {
      std::string stored = doc.contains("plan_id") ? "; the plan is stored as plan " +
                                                         std::to_string(doc["plan_id"].get<long long>()) +
                                                         " in " + args.trace
                                                   : "";
      throw AdviceError(std::string(e.what()) + ": the plan file was not written" + stored);
    }
    std::printf("\n  plan written to %s", printable(args.output).c_str());
    if (doc.contains("plan_id"))
      std::printf(" (stored as plan %lld in %s)", doc["plan_id"].get<long long>(), printable(args.trace).c_str());
    std::printf("\n");
  } else if (json_out) {
    std::printf("%s\n", doc.dump(2).c_str());
  }
  if (!a.feasible) {
    std::fprintf(stderr, "gcprof advise: %s\n", printableLines(a.message).c_str());
    return 1;
  }
  return 0;
}

}  // namespace

void addAdvise(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<AdviseArgs>();
  CLI::App* sub = app.add_subcommand(
      "advise", "Which units to checkpoint so that a step fits a memory budget with the least\n"
                "recomputation; prints the plan against every-unit and sqrt(N) checkpointing.");
  sub->add_option("trace", args->trace, "Trace file (gcprof record -o)")->required();
  sub->add_option("--budget", args->budget, "Peak memory to fit: bytes (6GiB, 512MiB) or % of the recorded peak");
  sub->add_option("--memory", args->memory,
                  "reserved | allocated: which peak the budget bounds. reserved: the CUDA caching "
                  "allocator's segments,\npredicted from the tensor events with the run's "
                  "PYTORCH_CUDA_ALLOC_CONF (default on CUDA runs); allocated: tensor bytes\n"
                  "(default on host runs, the only choice there)");
  sub->add_option("--headroom", args->headroom,
                  "Margin kept free below the budget: bytes (16MiB) or % of the budget; 0 for none "
                  "(default: 1% for python jobs, 3% for the C++ runtime, 5% on CUDA, plus the measured step-to-step "
                  "peak jitter and the checkpoint arguments not told apart by size; docs/advise.md)");
  sub->add_option("--strategy", args->strategy, "optimal | uniform | every | matmuls | none (matmuls: every unit checkpointed with torchtitan's selective rule, matrix products and attention kept, every second mm recomputed; needs record --ops)")
      ->capture_default_str();
  sub->add_option("--max-slowdown", args->max_slowdown,
                  "Extra step time allowed (30%); alone: the least peak within it");
  sub->add_option("--units", args->units, "auto | depth=N | REGEX (whole qualified names)")
      ->capture_default_str();
  sub->add_option("--segments", args->segments,
                  "module (one module per checkpoint, python) | region (consecutive units, C++); "
                  "default from the run");
  sub->add_option("--max-segment-units", args->max_segment_units,
                  "Longest region segment the search considers (0: no limit; default: all up to 64 units, else max(16, 2 sqrt N))");
  sub->add_option("--run", args->run, "Run to advise on (default: the newest job's process that trained)");
  sub->add_option("-o,--output", args->output, "Write the plan (gcprof.plan/1 JSON) here");
  sub->add_flag("--json", args->json, "Print the plan as JSON (when -o is not given)");
  sub->add_flag("--whole-only", args->whole_only,
                "Checkpoint whole units only, even when the trace has operator ranges "
                "(record --ops): no selective save-lists");
  sub->add_flag("--no-store", args->no_store, "Do not store the plan in the trace's plans table");
  CLI::Option* what_if =
      sub->add_option("--what-if", args->what_if.size_name,
                      "What fits: from runs named NAME=N (record --name batch=2, batch=4), the largest\n"
                      "NAME that fits --budget with none, every, uniform and optimal (docs/plan.md)")
          ->check([](const std::string& name) {
            return name.empty() ? std::string("give the size's name, e.g. --what-if batch")
                                : std::string();
          });
  // Without --what-if these were ignored: `advise --size 32 -o plan.json`
  // wrote a plan for the recorded size, not for 32.
  sub->add_option("--size-of", args->what_if.size_of,
                  "RUN=SIZE: the runs for --what-if and their sizes, instead of their names (repeat)")
      ->needs(what_if);
  sub->add_option("--size", args->what_if.size,
                  "With --what-if: the optimal plan for this size (-o writes it, marked with the size)")
      ->needs(what_if);
  sub->add_option("--fit", args->what_if.fit,
                  "With --what-if: auto (quadratic when >= 3 sizes need it) | affine | quadratic")
      ->capture_default_str()
      ->needs(what_if);
  sub->add_option("--max-size", args->what_if.max_size, "With --what-if: the largest size searched")
      ->capture_default_str()
      ->needs(what_if);
  sub->add_flag("--side", args->what_if.side,
                "With --what-if: the size is an image's side (pixels per row): memory is fitted over\n"
                "its square, the number of pixels, not over the side")
      ->needs(what_if);
  sub->add_option("--size-step", args->what_if.size_step,
                  "With --what-if: the job takes only multiples of this size (16 for a patch-16 ViT's\n"
                  "side); the search answers only those")
      ->capture_default_str()
      ->needs(what_if);
  sub->callback([args, &exit_code] { exit_code = runAdvise(*args); });
}

}  // namespace gcprof::cli
