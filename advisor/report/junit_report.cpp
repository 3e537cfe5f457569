// JUnit XML: one testcase per gate, so CI systems show each gate's result.
// Follows the common JUnit schema (testsuites > testsuite > testcase with an
// optional failure element carrying message and text).
#include <sstream>

#include "report/report_data.h"
#include "report/text_escape.h"

namespace gcprof::advisor {

std::string junitReport(const ReportData& r) {
  const Verification& v = r.v;
  int failures = 0;
  for (const Gate& g : v.gates) failures += g.passed ? 0 : 1;
  std::string suite = "gcprof.verify.plan" + std::to_string(v.plan_id);
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"gcprof\" tests=\"" << v.gates.size() << "\" failures=\"" << failures
    << "\" errors=\"0\">\n";
  x << "  <testsuite name=\"" << xmlEscape(suite) << "\" tests=\"" << v.gates.size()
    << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"0\">\n";
  x << "    <properties>\n";
  auto prop = [&](const std::string& name, const std::string& value) {
    x << "      <property name=\"" << xmlEscape(name) << "\" value=\"" << xmlEscape(value) << "\"/>\n";
  };
  prop("trace", r.trace);
  prop("verdict", v.verdict);
  prop("baseline_run", std::to_string(v.baseline_run));
  prop("verification_run", std::to_string(v.run));
  prop("budget_bytes", std::to_string(v.budget));
  prop("predicted_peak_bytes", std::to_string(v.predicted_peak));
  prop("measured_peak_bytes", std::to_string(v.measured_peak));
  x << "    </properties>\n";
  for (const Gate& g : v.gates) {
    x << "    <testcase classname=\"" << xmlEscape(suite) << "\" name=\"" << xmlEscape(g.name)
      << "\" time=\"0\"";
    if (g.passed) {
      x << "/>\n";
      continue;
    }
    x << ">\n      <failure message=\"" << xmlEscape(g.detail) << "\" type=\"gate\">"
      << xmlEscape(g.detail) << "</failure>\n    </testcase>\n";
  }
  // The hint concerns the job, not one gate: the suite's output, where CI
  // systems show it beside the failures.
  if (!v.hint.empty()) x << "    <system-out>hint: " << xmlEscape(v.hint) << "</system-out>\n";
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

}  // namespace gcprof::advisor
