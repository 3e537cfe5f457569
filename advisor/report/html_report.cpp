// A self-contained HTML page: verdict, predicted vs measured, the gates and
// the memory chart (inline SVG), for people who would rather look than read.
#include <sstream>

#include "byte_text.h"
#include "report/report_data.h"
#include "report/svg_chart.h"
#include "report/text_escape.h"
#include "report/what_if_table.h"

namespace gcprof::advisor {

std::string htmlReport(const ReportData& r) {
  const Verification& v = r.v;
  bool pass = v.verdict == "PASS";
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    << "<title>gcprof " << xmlEscape(v.verdict) << " - plan " << v.plan_id << "</title>\n"
    << "<style>\n"
    << "body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1000px;color:#222}\n"
    << ".verdict{display:inline-block;padding:.2em .8em;border-radius:4px;color:#fff;font-weight:bold}\n"
    << ".PASS{background:#1a9850}.FAIL{background:#d62728}\n"
    << "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ddd;padding:.35em .7em;text-align:right}\n"
    << "th:first-child,td:first-child,td.detail{text-align:left}.bad{color:#d62728;font-weight:bold}\n"
    << "code{background:#f4f4f4;padding:0 .3em}\n</style>\n</head>\n<body>\n";
  h << "<h1>gcprof <span class=\"verdict " << (pass ? "PASS" : "FAIL") << "\">" << xmlEscape(v.verdict)
    << "</span></h1>\n";
  h << "<p>Plan " << v.plan_id << " (" << xmlEscape(v.strategy) << ") made from run " << v.baseline_run
    << ", verified by re-running it as run " << v.run << " &mdash; <code>" << xmlEscape(r.trace)
    << "</code>, " << xmlEscape(r.memory) << " memory.</p>\n";
  h << "<h2>Memory</h2>\n" << memoryChartSvg(r);
  if (!r.sized_note.empty()) h << "<p>" << xmlEscape(r.sized_note) << "</p>\n";
  h << "<table>\n<tr><th></th><th>baseline</th><th>predicted</th><th>measured</th><th>budget</th></tr>\n";
  h << "<tr><td>peak memory</td><td>" << mib(v.baseline_peak) << "</td><td>" << mib(v.predicted_peak)
    << "</td><td>" << mib(v.measured_peak) << "</td><td>"
    << (v.budget_memory == "reserved" ? std::string("")
                                      : mib(v.budget) + (v.headroom > 0 ? " (headroom " + mib(v.headroom) + ")" : std::string()))
    << "</td></tr>\n";
  if (v.predicted_reserved_peak >= 0 || v.measured_reserved_peak >= 0)
    h << "<tr><td>reserved memory</td><td></td><td>"
      << (v.predicted_reserved_peak >= 0 ? mib(v.predicted_reserved_peak) : "n/a") << "</td><td>"
      << (v.measured_reserved_peak >= 0 ? mib(v.measured_reserved_peak) + " (" + xmlEscape(v.measured_reserved_source) + ")"
                                        : "n/a")
      << "</td><td>"
      << (v.budget_memory == "reserved" ? mib(v.budget) + (v.headroom > 0 ? " (headroom " + mib(v.headroom) + ")" : std::string())
                                        : std::string())
      << "</td></tr>\n";
  h << "<tr><td>step time</td><td>" << formatNs(v.baseline_step_ns) << "</td><td>" << formatNs(v.predicted_step_ns)
    << "</td><td>" << formatNs(v.measured_step_ns) << "</td><td></td></tr>\n</table>\n";
  if (!r.ranks.empty()) {
    h << "<h2>Ranks</h2>\n";
    if (!r.culprit.empty()) h << "<p class=\"bad\">" << xmlEscape(r.culprit) << "</p>\n";
    h << "<table>\n<tr><th>rank</th><th>baseline run</th><th>run</th><th>status</th><th>predicted peak</th>"
         "<th>measured peak</th><th>step time</th><th>verdict</th></tr>\n";
    for (const RankRow& k : rankRows(r))
      h << "<tr><td>" << k.rank << "</td><td>" << k.baseline_run << "</td><td>" << k.run << "</td><td>"
        << xmlEscape(k.status) << "</td><td>" << mib(k.predicted_peak) << "</td><td>" << mib(k.measured_peak)
        << "</td><td>" << formatNs(k.measured_step_ns) << "</td><td" << (k.verdict == "PASS" ? ">PASS" : " class=\"bad\">FAIL")
        << "</td></tr>\n";
    h << "</table>\n<p>The chart and the table above it show rank " << r.chart_rank
      << ", the highest measured peak.</p>\n";
  }
  h << "<h2>Gates</h2>\n<table>\n<tr><th>gate</th><th>result</th><th>detail</th></tr>\n";
  for (const Gate& g : v.gates)
    h << "<tr><td>" << xmlEscape(g.name) << "</td><td" << (g.passed ? ">pass" : " class=\"bad\">FAIL")
      << "</td><td class=\"detail\">" << xmlEscape(g.detail) << "</td></tr>\n";
  h << "</table>\n";
  if (!v.hint.empty()) h << "<p class=\"detail\">Hint: " << xmlEscape(v.hint) << "</p>\n";
  h << "<h2>Checkpointed segments</h2>\n<ol>\n";
  std::vector<std::vector<std::string>> saves = saveLists(r);
  for (size_t s = 0; s < v.checkpoint.size(); ++s) {
    const auto& seg = v.checkpoint[s];
    h << "<li>";
    for (size_t i = 0; i < seg.size(); ++i) h << (i ? ", " : "") << "<code>" << xmlEscape(seg[i]) << "</code>";
    if (!saves[s].empty()) {
      h << ": selective, keeps";
      for (size_t k = 0; k < saves[s].size(); ++k)
        h << (k ? ", " : " ") << "<code>" << xmlEscape(saves[s][k]) << "</code>";
    }
    h << "</li>\n";
  }
  h << "</ol>\n";
  if (v.checkpoint.empty()) h << "<p>Nothing: the recorded run already fits the budget.</p>\n";
  if (r.plan) h << whatIfHtml(r.plan->json);
  h << "<p><small>Generated by <code>gcprof report --format html</code>. Curves: the recorded baseline, "
       "the plan replayed on it (predicted), and the verification run; each from its run's first "
       "event.</small></p>\n</body>\n</html>\n";
  return h.str();
}

}  // namespace gcprof::advisor
