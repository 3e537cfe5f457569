// The Markdown report: readable in a CI step summary ($GITHUB_STEP_SUMMARY).
#include <sstream>

#include "byte_text.h"
#include "report/report_data.h"
#include "report/text_escape.h"
#include "report/what_if_table.h"

namespace gcprof::advisor {
namespace {

std::string checkpointList(const std::vector<std::vector<std::string>>& segments) {
  if (segments.empty()) return "nothing (the recorded run already fits)";
  std::string out;
  for (const auto& seg : segments) {
    if (seg.empty()) continue;
    if (!out.empty()) out += ", ";
    out += markdownCode(seg.front());
    if (seg.size() > 1) out += ".." + markdownCode(seg.back()) + " (one region)";
  }
  return out;
}

std::string ratio(double num, double den) {
  if (den <= 0) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, " (%+.1f%%)", (num / den - 1) * 100);
  return buf;
}

}  // namespace

std::string markdownReport(const ReportData& r) {
  const Verification& v = r.v;
  bool pass = v.verdict == "PASS";
  std::ostringstream md;
  md << "## gcprof: " << (pass ? "PASS" : "FAIL") << "\n\n";
  md << "Plan " << v.plan_id << " (" << (v.strategy.empty() ? "?" : v.strategy) << ", "
     << v.checkpoint.size() << " checkpointed segment" << (v.checkpoint.size() == 1 ? "" : "s")
     << ") made from run " << v.baseline_run << ", verified by re-running it as run " << v.run
     << " (" << markdownCode(r.trace) << ", " << r.memory << " memory).\n\n";
  md << "**Checkpoint:** " << checkpointList(v.checkpoint) << "\n\n";
  std::vector<std::vector<std::string>> saves = saveLists(r);
  bool any_selective = false;
  for (size_t i = 0; i < saves.size(); ++i) {
    if (saves[i].empty() || v.checkpoint[i].empty()) continue;
    if (!any_selective) md << "**Selective** (operator outputs kept, the rest recomputed):\n\n";
    any_selective = true;
    md << "- " << markdownCode(v.checkpoint[i].front()) << " keeps " << saves[i].size() << ": ";
    for (size_t k = 0; k < saves[i].size(); ++k) md << (k ? ", " : "") << markdownCode(saves[i][k]);
    md << "\n";
  }
  if (any_selective) md << "\n";
  md << "| | baseline | predicted | measured | budget |\n|---|---:|---:|---:|---:|\n";
  md << "| peak memory | " << mib(v.baseline_peak) << " | " << mib(v.predicted_peak) << " | "
     << mib(v.measured_peak) << ratio(static_cast<double>(v.measured_peak), static_cast<double>(v.predicted_peak))
     << " | " << (v.budget_memory == "reserved" ? std::string("") : mib(v.budget) +
                  (v.headroom > 0 ? " (headroom " + mib(v.headroom) + ")" : std::string())) << " |\n";
  // CUDA runs: the caching allocator's reserved memory, which the budget
  // bounds when the plan says so (plan/memory_measure.h).
  if (v.predicted_reserved_peak >= 0 || v.measured_reserved_peak >= 0)
    md << "| reserved memory | | " << (v.predicted_reserved_peak >= 0 ? mib(v.predicted_reserved_peak) : "n/a") << " | "
       << (v.measured_reserved_peak >= 0 ? mib(v.measured_reserved_peak) + " (" + v.measured_reserved_source + ")" : "n/a")
       << " | " << (v.budget_memory == "reserved" ? mib(v.budget) + (v.headroom > 0 ? " (headroom " + mib(v.headroom) + ")" : std::string()) : "")
       << " |\n";
  md << "| step time | " << formatNs(v.baseline_step_ns) << " | " << formatNs(v.predicted_step_ns) << " | "
     << formatNs(v.measured_step_ns)
     << (slowdownMeasured(v) ? ratio(static_cast<double>(v.measured_step_ns), static_cast<double>(v.baseline_step_ns))
                             : std::string())
     << " | |\n\n";
  if (!r.sized_note.empty()) md << markdownCell(r.sized_note) << "\n\n";
  if (!r.ranks.empty()) {
    md << "| rank | baseline run | run | status | predicted peak | measured peak | step time | verdict |\n"
          "|---:|---:|---:|---|---:|---:|---:|---|\n";
    for (const RankRow& k : rankRows(r))
      md << "| " << k.rank << " | " << k.baseline_run << " | " << k.run << " | " << markdownCell(k.status)
         << " | " << mib(k.predicted_peak) << " | " << mib(k.measured_peak) << " | "
         << formatNs(k.measured_step_ns) << " | " << (k.verdict == "PASS" ? "PASS" : "**FAIL**") << " |\n";
    md << "\nPeak and step time above are rank " << r.chart_rank << "'s, the highest measured peak.";
    if (!r.culprit.empty()) md << " **Cause:** " << markdownCell(r.culprit) << ".";
    md << "\n\n";
  }
  md << "| gate | result | detail |\n|---|---|---|\n";
  for (const Gate& g : v.gates)
    md << "| " << markdownCell(g.name) << " | " << (g.passed ? "pass" : "**FAIL**") << " | "
       << markdownCell(g.detail) << " |\n";
  if (!v.hint.empty()) md << "\n**Hint:** " << markdownCell(v.hint) << "\n";
  if (slowdownMeasured(v))
    md << "\nPeak memory saved: " << mib(v.baseline_peak - v.measured_peak) << " of "
       << mib(v.baseline_peak) << "; measured step time"
       << ratio(static_cast<double>(v.measured_step_ns), static_cast<double>(v.baseline_step_ns))
       << " against the baseline.\n";
  else
    md << "\nRe-run at " << markdownCell(v.other_size) << ": peak and step time are not compared with the "
       << "baseline, which ran another size; predicted slowdown there, against the predicted "
       << "no-checkpoint step"
       << ratio(static_cast<double>(v.predicted_step_ns), static_cast<double>(v.predicted_baseline_step_ns))
       << ".\n";
  if (r.plan) md << whatIfMarkdown(r.plan->json);
  return md.str();
}

}  // namespace gcprof::advisor
