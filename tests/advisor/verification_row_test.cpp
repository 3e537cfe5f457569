// A stored verification row read back by report and the GUI: a damaged or
// edited row is refused with the field named, never read as undefined
// behaviour (1e308 into an integer printed a baseline of -8796093022208 MiB
// with PASS) or reported as a json.exception's text.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>

#include "chain_traces.h"
#include "advice_error.h"
#include "report/report_data.h"
#include "trace_file.h"
#include "trace_store.h"
#include "verify/verification.h"

namespace gcprof::advisor {
namespace {

nlohmann::json goodRow() {
  Verification v;
  v.verdict = "PASS";
  v.checkpoint = {{"layers.0"}};
  v.budget = 1000;
  v.baseline_peak = 1500;
  v.predicted_peak = 900;
  v.measured_peak = 910;
  v.baseline_step_ns = 100;
  v.predicted_step_ns = 120;
  v.measured_step_ns = 118;
  v.losses = {{0, 2.5, 2.5}};
  v.gates = {{"job completed", true, "exit 0"}};
  return toJson(v);
}

// The message fromJson refuses `row` with; "" when it reads it.
std::string refusal(const nlohmann::json& row) {
  try {
    fromJson(row);
    return "";
  } catch (const VerificationRowError& e) {
    return e.what();
  }
}

TEST(VerificationRow, AHugeDoubleInAnIntegerFieldIsRefusedByName) {
  nlohmann::json row = goodRow();
  row["baseline"]["peak_bytes"] = 1e308;
  std::string why = refusal(row);
  EXPECT_NE(why.find("\"baseline.peak_bytes\""), std::string::npos) << why;
  EXPECT_NE(why.find("1e+308"), std::string::npos) << why;
  row = goodRow();
  row["measured"]["step_ns"] = 2.5;
  EXPECT_NE(refusal(row).find("\"measured.step_ns\" is 2.5, not a whole number"), std::string::npos)
      << refusal(row);
  row = goodRow();
  row["budget_bytes"] = 18446744073709551615ull;
  EXPECT_NE(refusal(row).find("\"budget_bytes\""), std::string::npos) << refusal(row);
}

TEST(VerificationRow, NegativeSizesAndTimesAreRefused) {
  for (const char* field : {"budget_bytes", "headroom_bytes"}) {
    nlohmann::json row = goodRow();
    row[field] = -49600000;
    EXPECT_NE(refusal(row).find(std::string("\"") + field + "\" is -49600000, negative"), std::string::npos)
        << refusal(row);
  }
  nlohmann::json row = goodRow();
  row["measured"]["peak_bytes"] = -1;
  EXPECT_NE(refusal(row).find("\"measured.peak_bytes\" is -1, negative"), std::string::npos) << refusal(row);
}

TEST(VerificationRow, WrongTypesNameTheFieldNotTheJsonLibrary) {
  std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](nlohmann::json& r) { r["verdict"] = 1; }, "\"verdict\" is 1, not a string"},
      {[](nlohmann::json& r) { r["verdict"] = "MAYBE"; }, "not PASS or FAIL"},
      {[](nlohmann::json& r) { r["gates"][0]["passed"] = "yes"; }, "\"gates[0].passed\""},
      {[](nlohmann::json& r) { r["gates"] = 3; }, "\"gates\" is 3, not a list"},
      {[](nlohmann::json& r) { r["checkpoint"] = {{1}}; }, "\"checkpoint[0]\" holds 1"},
      {[](nlohmann::json& r) { r["losses"][0]["step"] = "one"; }, "\"losses[0].step\""},
      {[](nlohmann::json& r) { r.erase("measured"); }, "\"measured\" is missing"},
      {[](nlohmann::json& r) { r["baseline"] = nlohmann::json::array(); }, "\"baseline\" is not an object"},
  };
  for (auto& [edit, expected] : cases) {
    nlohmann::json row = goodRow();
    edit(row);
    std::string why = refusal(row);
    EXPECT_NE(why.find(expected), std::string::npos) << row.dump() << " -> " << why;
    EXPECT_EQ(why.find("json.exception"), std::string::npos) << why;
  }
  EXPECT_EQ(refusal(goodRow()), "");
}

TEST(VerificationRow, TheReportNamesTheTraceTheRowAndTheField) {
  std::string db = ::testing::TempDir() + "gcprof-damaged-row.db";
  std::remove(db.c_str());
  Trace t = testing::chainTrace(testing::ChainSpec{});
  int64_t run = testing::writeTrace(db, t);
  TraceStore store(db, TraceStore::Mode::ReadWrite);
  nlohmann::json row = goodRow();
  row["baseline"]["peak_bytes"] = 1e308;
  store.saveVerification({0, 0, run, run, "PASS", 2, row.dump()});
  try {
    loadReport(store, 0);
    FAIL() << "a damaged row was reported";
  } catch (const AdviceError& e) {
    std::string why = e.what();
    EXPECT_NE(why.find(db + ": verification 1 is damaged (field \"baseline.peak_bytes\""), std::string::npos)
        << why;
  }
  std::remove(db.c_str());
}

}  // namespace
}  // namespace gcprof::advisor
