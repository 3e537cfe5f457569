// What verify prints as "hint:" (a job that is not deterministic fails the
// losses gate with any plan) reaches every report a CI reads, not only the
// terminal.
#include <gtest/gtest.h>

#include "report/report_data.h"

namespace gcprof::advisor {
namespace {

ReportData failedLosses() {
  ReportData r;
  r.trace = "job.db";
  r.v.verdict = "FAIL";
  r.v.gates = {{"peak within budget", true, "90 MiB <= 100 MiB"},
               {"losses match", false, "step 2: 2.5 vs 2.75"}};
  r.v.hint = "check that it is deterministic: every seed <set> & \"seeded\"";
  return r;
}

TEST(ReportHint, MarkdownSaysTheHintUnderTheGates) {
  std::string md = markdownReport(failedLosses());
  EXPECT_NE(md.find("**Hint:** check that it is deterministic"), std::string::npos) << md;
}

TEST(ReportHint, HtmlSaysTheHintEscaped) {
  std::string html = htmlReport(failedLosses());
  EXPECT_NE(html.find("Hint: check that it is deterministic: every seed &lt;set&gt; &amp;"),
            std::string::npos)
      << html;
}

TEST(ReportHint, JunitCarriesTheHintBesideTheFailures) {
  std::string xml = junitReport(failedLosses());
  EXPECT_NE(xml.find("<system-out>hint: check that it is deterministic: every seed &lt;set&gt;"),
            std::string::npos)
      << xml;
}

TEST(ReportHint, NoHintNoLine) {
  ReportData r = failedLosses();
  r.v.hint.clear();
  EXPECT_EQ(markdownReport(r).find("Hint:"), std::string::npos);
  EXPECT_EQ(htmlReport(r).find("Hint:"), std::string::npos);
  EXPECT_EQ(junitReport(r).find("<system-out>"), std::string::npos);
}

}  // namespace
}  // namespace gcprof::advisor
