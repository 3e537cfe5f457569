// The GUI's "What fits" view: computed by the advisor for a file's sized runs
// (record --name batch=N), or read from a sized plan's what-if; runs that are
// not sized give a message, never an exception.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "fabricated_training.h"
#include "trace_document.h"
#include "trace_store.h"

namespace gcprof::view {
namespace {

using testing::TrainingShape;

struct TempFile {
  explicit TempFile(const char* tag)
      : path(::testing::TempDir() + "gcprof-gui-whatfits-" + tag + "-" + std::to_string(getpid()) + ".db") {
    clear();
  }
  ~TempFile() { clear(); }
  void clear() {
    for (const char* ext : {"", "-wal", "-shm"}) std::remove((path + ext).c_str());
  }
  std::string path;
};

// The fabricated training loop at a batch size: activations grow with it.
int64_t writeSized(const std::string& path, int batch, const char* name = "batch") {
  TrainingShape shape;
  shape.activation_bytes = static_cast<Bytes>(batch) << 21;  // 2 MiB per sample
  Trace t = testing::fabricateTraining(shape);
  t.run.name = std::string(name) + "=" + std::to_string(batch);
  return testing::writeRun(path, t);
}

size_t column(const WhatFits& w, const std::string& strategy) {
  for (size_t i = 0; i < w.strategies.size(); ++i)
    if (w.strategies[i] == strategy) return i;
  ADD_FAILURE() << "no column " << strategy;
  return 0;
}

TEST(WhatFitsView, ComputedForSizedRunsAgreesWithItsOwnTable) {
  TempFile f("computed");
  int64_t two = writeSized(f.path, 2), four = writeSized(f.path, 4);
  std::string error;
  auto doc = TraceDocument::open(f.path, 0, &error);
  ASSERT_TRUE(doc) << error;
  ASSERT_EQ(doc->sizedRuns().size(), 2u);
  EXPECT_EQ(doc->sizedRuns()[0], std::make_pair(two, int64_t{2}));
  EXPECT_EQ(doc->sizedRuns()[1], std::make_pair(four, int64_t{4}));
  EXPECT_EQ(doc->sizeName(), "batch");
  EXPECT_EQ(doc->whatFits(), nullptr);  // nothing asked yet, and no sized plan

  ASSERT_TRUE(doc->computeWhatFits(150, &error)) << error;
  const WhatFits* w = doc->whatFits();
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->size_name, "batch");
  EXPECT_EQ(w->budget_text, "150%");
  ASSERT_FALSE(w->notes.empty());  // two sizes: nothing checks the line, and it says so
  EXPECT_NE(w->notes[0].find("Fit check: none"), std::string::npos) << w->notes[0];
  EXPECT_EQ(w->strategies, (std::vector<std::string>{"none", "every", "uniform", "optimal"}));
  ASSERT_EQ(w->largest.size(), 4u);
  // Each strategy's largest size is the last row its column fits, and the
  // table holds the row after it, over the budget.
  for (size_t s = 0; s < w->largest.size(); ++s) {
    const WhatFits::Largest& l = w->largest[s];
    ASSERT_GT(l.size, 0) << l.strategy;
    size_t c = column(*w, l.strategy);
    bool at = false, after = false;
    for (const WhatFits::Row& r : w->rows) {
      if (r.size == l.size) {
        at = true;
        EXPECT_TRUE(r.fits[c]) << l.strategy << " at " << r.size;
        EXPECT_EQ(r.peaks[c], l.peak) << l.strategy;
        EXPECT_LE(r.peaks[c], w->budget);
      }
      if (r.size == l.size + 1) {
        after = true;
        EXPECT_FALSE(r.fits[c]) << l.strategy << " at " << r.size;
      }
    }
    EXPECT_TRUE(at && after) << l.strategy << " " << l.size;
  }
  EXPECT_LT(w->largest[column(*w, "none")].size, w->largest[column(*w, "optimal")].size);
  int recorded = 0;
  for (const WhatFits::Row& r : w->rows) recorded += r.recorded;
  EXPECT_EQ(recorded, 2);
  EXPECT_NE(w->source.find(std::to_string(two)), std::string::npos) << w->source;

  // A tighter budget fits fewer.
  int64_t roomy = w->largest[column(*w, "optimal")].size;
  ASSERT_TRUE(doc->computeWhatFits(110, &error)) << error;
  EXPECT_LT(doc->whatFits()->largest[column(*doc->whatFits(), "optimal")].size, roomy);
}

TEST(WhatFitsView, ASizedPlanShowsItsOwnWhatIf) {
  TempFile f("plan");
  writeSized(f.path, 2);
  int64_t four = writeSized(f.path, 4);
  std::string plan = R"({"format": "gcprof.plan/1", "strategy": "optimal", "units": [], "checkpoint": [],
    "size": {"name": "seq", "value": 7, "recorded_size": 4},
    "what_if": {"size_name": "seq", "fit": "quadratic", "budget": "1GiB", "budget_bytes": 1073741824,
      "headroom_bytes": 1048576, "runs": [{"run": 1, "size": 2}, {"run": 2, "size": 4}],
      "largest": [{"strategy": "none", "size": 6, "capped": false, "at": {"peak_bytes": 1000, "step_ns": 5}},
                  {"strategy": "optimal", "size": 0, "capped": false}],
      "table": [{"size": 6, "recorded": false, "plans": [{"strategy": "none", "peak_bytes": 1000, "fits_budget": true},
                                                        {"strategy": "optimal", "peak_bytes": 900, "fits_budget": true}]},
                {"size": 7, "recorded": false, "plans": [{"strategy": "none", "peak_bytes": 2000, "fits_budget": false},
                                                        {"strategy": "optimal", "peak_bytes": 1900, "fits_budget": false}]}]}})";
  int64_t id = 0;
  {
    TraceStore store(f.path, TraceStore::Mode::ReadWrite);
    id = store.savePlan({0, four, 1, "optimal", 1ll << 30, plan});
  }
  std::string error;
  auto doc = TraceDocument::open(f.path, four, &error);
  ASSERT_TRUE(doc) << error;
  ASSERT_NE(doc->selectedPlan(), nullptr);
  const WhatFits* w = doc->whatFits();
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->source, "plan " + std::to_string(id));
  EXPECT_EQ(w->size_name, "seq");
  EXPECT_EQ(w->fit, "quadratic");
  EXPECT_EQ(w->budget, 1ll << 30);
  EXPECT_EQ(w->headroom, 1ll << 20);
  ASSERT_EQ(w->largest.size(), 2u);
  EXPECT_EQ(w->largest[0].size, 6);
  EXPECT_EQ(w->largest[0].peak, 1000);
  EXPECT_EQ(w->largest[1].size, 0);
  EXPECT_EQ(w->largest[1].peak, -1);
  ASSERT_EQ(w->rows.size(), 2u);
  EXPECT_EQ(w->rows[1].peaks, (std::vector<Bytes>{2000, 1900}));
  EXPECT_EQ(w->rows[1].fits, (std::vector<bool>{false, false}));
  // Without the plan shown, there is no what-if until one is computed.
  doc->selectPlan(0);
  EXPECT_EQ(doc->whatFits(), nullptr);
}

TEST(WhatFitsView, UnsizedOrBrokenInputGivesAMessage) {
  TempFile f("unsized");
  writeSized(f.path, 2);
  testing::writeRun(f.path, testing::fabricateTraining(TrainingShape{}));  // named "fabricated"
  std::string error;
  auto doc = TraceDocument::open(f.path, 0, &error);
  ASSERT_TRUE(doc) << error;
  EXPECT_TRUE(doc->sizedRuns().empty());
  EXPECT_FALSE(doc->computeWhatFits(100, &error));
  EXPECT_NE(error.find("--name batch=2"), std::string::npos) << error;
  EXPECT_EQ(doc->whatFits(), nullptr);

  std::string why;
  EXPECT_FALSE(whatFitsFromJson(R"({"format": "gcprof.plan/1"})", &why));
  EXPECT_NE(why.find("--what-if"), std::string::npos) << why;
  EXPECT_FALSE(whatFitsFromJson(R"({"what_if": {"largest": 3, "table": []}})", &why));
  EXPECT_NE(why.find("cannot be read"), std::string::npos) << why;
  EXPECT_FALSE(whatFitsFromJson("{not json", &why));
}

}  // namespace
}  // namespace gcprof::view
