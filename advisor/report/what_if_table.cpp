#include "report/what_if_table.h"

#include <cstdio>
#include <sstream>

#include "report/text_escape.h"

namespace gcprof::advisor {
namespace {

// One table, two spellings: cells are built once and joined per format.
struct Table {
  std::string caption;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::vector<bool>> over;  // cell above the budget
  std::vector<std::string> notes;
};

Table tableOf(const nlohmann::json& plan) {
  const nlohmann::json& w = plan["what_if"];
  std::string name = w.value("size_name", std::string("size"));
  Bytes budget = w.value("budget_bytes", Bytes{0});
  Table t;
  std::ostringstream cap;
  cap << "Peak memory by " << name << " (" << w.value("fit", std::string("affine"))
      << " fit on the recorded runs; budget " << mib(budget) << "); largest " << name << " that fits:";
  for (const auto& l : w.value("largest", nlohmann::json::array()))
    cap << " " << l.value("strategy", std::string()) << " " << l.value("size", 0)
        << (l.value("capped", false) ? "+" : "") << ",";
  t.caption = cap.str();
  t.caption.pop_back();
  t.notes = whatIfNotes(w);
  t.header = {name};
  const nlohmann::json& table = w.value("table", nlohmann::json::array());
  if (!table.empty())
    for (const auto& p : table.front()["plans"]) t.header.push_back(p.value("strategy", std::string()));
  for (const auto& row : table) {
    std::vector<std::string> cells = {std::to_string(row.value("size", 0)) +
                                      (row.value("recorded", false) ? " (recorded)" : "")};
    std::vector<bool> over = {false};
    for (const auto& p : row["plans"]) {
      cells.push_back(mib(p.value("peak_bytes", Bytes{0})));
      over.push_back(!p.value("fits_budget", true));
    }
    t.rows.push_back(cells);
    t.over.push_back(over);
  }
  return t;
}

// In milliseconds whatever the size, unlike formatNs: the step times of
// several sizes are read side by side in one sentence, in one unit.
std::string msText(double ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", ns / 1e6);
  return buf;
}

// How sure the step times are: the fit's residual, or why there is none.
std::string stepTimeNote(const nlohmann::json& fit, const std::string& name) {
  const nlohmann::json& recorded = fit.value("recorded", nlohmann::json::array());
  size_t sizes = fit.value("sizes", size_t{0});
  if (recorded.empty()) return "";
  const nlohmann::json& last = recorded.back();
  std::string largest = name + "=" + std::to_string(last.value("size", 0LL));
  if (fit.value("proportional", false)) {
    std::string steps;
    for (const nlohmann::json& r : recorded)
      steps += (steps.empty() ? "" : ", ") + name + "=" + std::to_string(r.value("size", 0LL)) + ": " +
               msText(static_cast<double>(r.value("step_ns", 0LL)));
    return "Step time: the recorded steps do not grow with " + name + " (" + steps +
           "), so the runs were noisy (a busy machine?): step times are " + largest +
           "'s in proportion to the size, a rough guide; record again on a quiet machine to fit them.";
  }
  if (sizes < 3)
    return "Step time: a line through the " + std::to_string(sizes) +
           " recorded sizes (exact there, so unchecked); record a third size to check it.";
  char buf[256];
  std::snprintf(buf, sizeof buf, "Step time: fitted over %zu sizes; it misses %s=%lld's recorded step by %.1f%% (%s).",
                sizes, name.c_str(), fit.value("miss_size", 0LL), 100 * fit.value("fraction", 0.0),
                msText(static_cast<double>(fit.value("miss_ns", 0LL))).c_str());
  return buf;
}

}  // namespace

std::vector<std::string> whatIfNotes(const nlohmann::json& w) {
  std::vector<std::string> notes;
  std::string name = w.value("size_name", std::string("size"));
  const nlohmann::json& runs = w.value("runs", nlohmann::json::array());
  const nlohmann::json& check = w.value("fit_check", nlohmann::json::object());
  char buf[512];
  if (runs.size() < 3) {
    notes.push_back("Fit check: none (the line goes through both sizes); record a third size to check it.");
  } else if (check.value("miss_bytes", Bytes{0}) > 0) {
    std::snprintf(buf, sizeof buf, "Fit check: at %s=%g%s the model misses the %s by %s (%.2f%% of that run's peak).",
                  name.c_str(), check.value("size", 0.0), check.value("independent", false) ? " (not fitted)" : "",
                  check.value("number", std::string()).c_str(), mib(check.value("miss_bytes", Bytes{0})).c_str(),
                  100 * check.value("fraction", 0.0));
    notes.push_back(buf);
  } else if (check.contains("miss_bytes")) {
    notes.push_back("Fit check: the model reproduces every recorded size exactly.");
  }
  if (w.contains("step_time_fit")) {
    std::string note = stepTimeNote(w["step_time_fit"], name);
    if (!note.empty()) notes.push_back(note);
  }
  if (w.contains("arguments_unmatched")) {
    std::string at;
    for (const nlohmann::json& x : w["arguments_unmatched"])
      at += (at.empty() ? "" : ", ") + name + "=" + std::to_string(x.get<long long>());
    notes.push_back("Note: a checkpoint's arguments were not found in the run at " + at +
                    " (they are found by the bytes of a unit's inputs, which fails when one is below the "
                    "recording's 1 KiB floor): their held bytes are fitted through 0 there, so plans with "
                    "checkpoints can be far off at other sizes; verify them, or record larger sizes.");
  }
  if (w.contains("extrapolation") && !runs.empty()) {
    const nlohmann::json& e = w["extrapolation"];
    std::snprintf(buf, sizeof buf,
                  "Note: %s=%lld is %.1f times the recorded range (%lld..%lld) past the largest recorded size; "
                  "predictions that far can be off by a size or two at the budget's edge: also record %s=%lld.",
                  name.c_str(), e.value("size", 0LL), e.value("spans", 0.0), runs.front().value("size", 0LL),
                  runs.back().value("size", 0LL), name.c_str(), e.value("suggest_size", 0LL));
    notes.push_back(buf);
  }
  return notes;
}

std::string whatIfMarkdown(const nlohmann::json& plan) {
  if (!plan.contains("what_if")) return "";
  Table t = tableOf(plan);
  std::ostringstream md;
  md << "\n### What fits\n\n" << markdownCell(t.caption) << ". Peaks above the budget are in bold.\n\n|";
  for (const std::string& h : t.header) md << " " << markdownCell(h) << " |";
  md << "\n|";
  for (size_t i = 0; i < t.header.size(); ++i) md << (i ? "---:|" : "---|");
  md << "\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    md << "|";
    for (size_t c = 0; c < t.rows[r].size(); ++c)
      md << " " << (t.over[r][c] ? "**" + t.rows[r][c] + "**" : t.rows[r][c]) << " |";
    md << "\n";
  }
  if (!t.notes.empty()) md << "\n";
  for (const std::string& n : t.notes) md << markdownCell(n) << "\n";
  return md.str();
}

std::string whatIfHtml(const nlohmann::json& plan) {
  if (!plan.contains("what_if")) return "";
  Table t = tableOf(plan);
  std::ostringstream h;
  h << "<h2>What fits</h2>\n<p>" << xmlEscape(t.caption) << ". Peaks above the budget in red.</p>\n<table>\n<tr>";
  for (const std::string& x : t.header) h << "<th>" << xmlEscape(x) << "</th>";
  h << "</tr>\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    h << "<tr>";
    for (size_t c = 0; c < t.rows[r].size(); ++c)
      h << "<td" << (t.over[r][c] ? " class=\"bad\"" : "") << ">" << xmlEscape(t.rows[r][c]) << "</td>";
    h << "</tr>\n";
  }
  h << "</table>\n";
  for (const std::string& n : t.notes) h << "<p>" << xmlEscape(n) << "</p>\n";
  return h.str();
}

}  // namespace gcprof::advisor
