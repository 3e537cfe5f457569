// Opening trace files: baseline + plan + verification overlays, run picking,
// and files that are not traces (a readable error, never an exception).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "fabricated_training.h"
#include "trace_document.h"
#include "trace_opening.h"

namespace gcprof::view {
namespace {

using testing::TrainingShape;

class TempFile {
 public:
  explicit TempFile(const char* tag)
      : path_(::testing::TempDir() + "gcprof-gui-test-" + tag + "-" + std::to_string(getpid()) + ".db") {
    remove();
  }
  ~TempFile() { remove(); }
  const std::string& path() const { return path_; }

 private:
  void remove() {
    for (const char* ext : {"", "-wal", "-shm"}) std::remove((path_ + ext).c_str());
  }
  std::string path_;
};

TEST(TraceDocument, PlanAndVerificationOverlays) {
  TempFile f("overlay");
  TrainingShape shape;
  int64_t base = testing::writeRun(f.path(), testing::fabricateTraining(shape));
  int64_t plan = 0;
  {
    TraceStore store(f.path(), TraceStore::Mode::ReadWrite);
    plan = store.savePlan({0, base, 1, "optimal", 900ll << 20,
                           testing::planJson(base, shape.layers, {1, 3, 5}, 900ll << 20)});
  }
  TrainingShape verify = shape;
  verify.checkpointed = {1, 3, 5};
  verify.baseline_run = base;
  verify.plan_id = plan;
  int64_t vrun = testing::writeRun(f.path(), testing::fabricateTraining(verify));
  {
    TraceStore store(f.path(), TraceStore::Mode::ReadWrite);
    store.saveVerification({0, plan, base, vrun, "PASS", 2, "{}"});
  }

  std::string error;
  auto doc = TraceDocument::open(f.path(), 0, &error);
  ASSERT_TRUE(doc) << error;
  EXPECT_EQ(doc->run().trace.run.id, base);  // the baseline, not the newer verification run
  ASSERT_EQ(doc->plans().size(), 1u);
  ASSERT_NE(doc->selectedPlan(), nullptr);
  EXPECT_EQ(doc->selectedPlan()->budget, 900ll << 20);
  EXPECT_TRUE(doc->run().units[3].checkpointed);
  ASSERT_EQ(doc->verificationRuns().size(), 1u);
  EXPECT_EQ(doc->selectedVerification(), vrun);
  ASSERT_NE(doc->verified(), nullptr);
  EXPECT_EQ(doc->verdict(), "PASS");
  // Three layers' saved activations no longer overlap the backward pass.
  Bytes saved = 3 * shape.saved_per_layer * shape.activation_bytes;
  EXPECT_LT(doc->verified()->peak, doc->run().memory.peak());
  EXPECT_GE(doc->run().memory.peak() - doc->verified()->peak, saved - shape.activation_bytes);
  // Each verification step lands on the same baseline step, although the
  // re-run is slower (recomputation).
  const Trace& base_trace = doc->run().trace;
  Trace vtrace = testing::fabricateTraining(verify);
  ASSERT_EQ(vtrace.steps.size(), base_trace.steps.size());
  for (size_t k = 0; k < vtrace.steps.size(); ++k) {
    EXPECT_DOUBLE_EQ(doc->verified()->warp.toBaseline(static_cast<double>(vtrace.steps[k].start)),
                     static_cast<double>(base_trace.steps[k].start));
    EXPECT_DOUBLE_EQ(doc->verified()->warp.toBaseline(static_cast<double>(vtrace.steps[k].end)),
                     static_cast<double>(base_trace.steps[k].end));
  }
  EXPECT_GT(vtrace.steps[1].end - vtrace.steps[1].start, base_trace.steps[1].end - base_trace.steps[1].start);

  doc->selectPlan(0);
  EXPECT_EQ(doc->verified(), nullptr);
  EXPECT_FALSE(doc->run().units[3].checkpointed);
  ASSERT_TRUE(doc->selectRun(vrun, &error)) << error;
  EXPECT_EQ(doc->run().trace.run.baseline_run, base);
}

// gcprof report shows the newest verification's plan: the GUI opened on the
// newest plan instead, unverified, and the two disagreed about "the plan".
TEST(TraceDocument, OpensOnTheVerifiedPlanTheReportShowsAndSaysSo) {
  TempFile f("verified-plan");
  TrainingShape shape;
  int64_t base = testing::writeRun(f.path(), testing::fabricateTraining(shape));
  int64_t verified = 0, newer = 0;
  {
    TraceStore store(f.path(), TraceStore::Mode::ReadWrite);
    verified = store.savePlan({0, base, 1, "optimal", 900ll << 20,
                               testing::planJson(base, shape.layers, {1, 3, 5}, 900ll << 20)});
  }
  TrainingShape again = shape;
  again.checkpointed = {1, 3, 5};
  again.baseline_run = base;
  again.plan_id = verified;
  int64_t vrun = testing::writeRun(f.path(), testing::fabricateTraining(again));
  {
    TraceStore store(f.path(), TraceStore::Mode::ReadWrite);
    store.saveVerification({0, verified, base, vrun, "PASS", 2, "{}"});
    newer = store.savePlan({0, base, 3, "every", 800ll << 20,
                            testing::planJson(base, shape.layers, {0, 1, 2}, 800ll << 20)});
  }
  std::string error;
  auto doc = TraceDocument::open(f.path(), 0, &error);
  ASSERT_TRUE(doc) << error;
  ASSERT_EQ(doc->plans().size(), 2u);
  ASSERT_NE(doc->selectedPlan(), nullptr);
  EXPECT_EQ(doc->selectedPlan()->id, verified);
  EXPECT_EQ(doc->selectedVerification(), vrun);
  const std::string& note = doc->openedPlanNote();
  EXPECT_NE(note.find("plan " + std::to_string(verified) + ": the newest verified (run " + std::to_string(vrun)),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("newer, not verified: plan " + std::to_string(newer)), std::string::npos) << note;

  // Without a verification: the newest plan, said to be unverified.
  TempFile g("unverified-plan");
  int64_t lone = testing::writeRun(g.path(), testing::fabricateTraining(shape));
  {
    TraceStore store(g.path(), TraceStore::Mode::ReadWrite);
    store.savePlan({0, lone, 1, "optimal", 900ll << 20, testing::planJson(lone, shape.layers, {1}, 900ll << 20)});
  }
  auto plain = TraceDocument::open(g.path(), 0, &error);
  ASSERT_TRUE(plain) << error;
  EXPECT_NE(plain->openedPlanNote().find("the newest, not verified"), std::string::npos) << plain->openedPlanNote();
}

TEST(TraceDocument, EachPlanShowsItsOwnUnits) {
  TempFile f("plan-units");
  TrainingShape shape;
  int64_t base = testing::writeRun(f.path(), testing::fabricateTraining(shape));
  int64_t all_layers = 0;
  {
    TraceStore store(f.path(), TraceStore::Mode::ReadWrite);
    all_layers = store.savePlan({0, base, 1, "optimal", 900ll << 20,
                                 testing::planJson(base, shape.layers, {1}, 900ll << 20)});
    // A newer plan made with --units naming two layers only.
    store.savePlan({0, base, 2, "every", 900ll << 20,
                    testing::planJson(base, 2, {0, 1}, 900ll << 20)});
  }
  std::string error;
  auto doc = TraceDocument::open(f.path(), 0, &error);
  ASSERT_TRUE(doc) << error;
  EXPECT_EQ(doc->run().units.size(), 2u);  // the newest plan's
  doc->selectPlan(all_layers);
  ASSERT_EQ(doc->run().units.size(), static_cast<size_t>(shape.layers));
  EXPECT_EQ(doc->run().units.back().name, "layers." + std::to_string(shape.layers - 1));
  EXPECT_TRUE(doc->run().units[1].checkpointed);
  EXPECT_FALSE(doc->run().units[0].checkpointed);
}

TEST(RunView, OpensShortlyBeforeTheFirstStepNotAtImportTime) {
  Trace t = testing::fabricateTraining(TrainingShape{});
  ASSERT_FALSE(t.steps.empty());
  Ns first = t.steps.front().start;
  // Ten seconds of imports before step 0, with an allocation at its start.
  Allocation early;
  early.addr = 0x10;
  early.bytes = 4096;
  early.alloc = first - 10'000'000'000;
  t.allocations.insert(t.allocations.begin(), early);
  RunView v(t, {});
  EXPECT_EQ(v.begin, early.alloc);  // Fit all still reaches it
  EXPECT_LE(v.focus_begin, first);
  EXPECT_GE(v.focus_begin, first - (v.end - first) / 10);
}

// A torchrun job: the launcher trains nothing, so the document opens its
// first rank; the rank picker lists the job's ranks; a job plan (stored
// against the launcher) and each rank's re-run overlay every rank.
TEST(TraceDocument, JobsOpenOnARankAndPickRanks) {
  TempFile f("job");
  TrainingShape shape;
  Trace launcher_trace;
  int64_t launcher = testing::writeRun(f.path(), launcher_trace);
  std::vector<int64_t> ranks;
  for (int r = 0; r < 2; ++r) {
    Trace t = testing::fabricateTraining(shape);
    t.run.rank = r;
    t.run.world_size = 2;
    t.run.job_run = launcher;
    ranks.push_back(testing::writeRun(f.path(), t));
  }
  int64_t plan = 0;
  {
    TraceStore store(f.path(), TraceStore::Mode::ReadWrite);
    plan = store.savePlan({0, launcher, 1, "optimal", 900ll << 20,
                           testing::planJson(launcher, shape.layers, {1, 3}, 900ll << 20)});
  }
  TrainingShape verify = shape;
  verify.checkpointed = {1, 3};
  verify.baseline_run = launcher;
  verify.plan_id = plan;
  Trace rerun_launcher;
  rerun_launcher.run.baseline_run = launcher;
  int64_t again = testing::writeRun(f.path(), rerun_launcher);
  int64_t rank1_again = 0;
  for (int r = 0; r < 2; ++r) {
    Trace t = testing::fabricateTraining(verify);
    t.run.rank = r;
    t.run.world_size = 2;
    t.run.job_run = again;
    int64_t id = testing::writeRun(f.path(), t);
    if (r == 1) rank1_again = id;
  }

  std::string error;
  auto doc = TraceDocument::open(f.path(), 0, &error);
  ASSERT_TRUE(doc) << error;
  EXPECT_EQ(doc->run().trace.run.id, ranks[0]);
  std::vector<RunInfo> picker = doc->jobRanks();
  ASSERT_EQ(picker.size(), 2u);
  EXPECT_EQ(picker[0].id, ranks[0]);
  EXPECT_EQ(picker[1].id, ranks[1]);
  ASSERT_EQ(doc->plans().size(), 1u);
  EXPECT_EQ(doc->plans()[0].id, plan);

  ASSERT_TRUE(doc->selectRun(ranks[1], &error)) << error;
  std::vector<RunInfo> reruns = doc->verificationRuns();
  ASSERT_EQ(reruns.size(), 1u);
  EXPECT_EQ(reruns[0].id, rank1_again);
  EXPECT_EQ(doc->jobRanks().size(), 2u);
}

TEST(TraceDocument, ForeignFilesGiveAMessage) {
  TempFile f("foreign");
  std::string error;
  EXPECT_EQ(TraceDocument::open(f.path(), 0, &error), nullptr);  // missing
  EXPECT_NE(error.find(f.path()), std::string::npos) << error;

  { std::ofstream(f.path()) << "/dev/null\n"; }
  error.clear();
  EXPECT_EQ(TraceDocument::open(f.path(), 0, &error), nullptr);
  EXPECT_FALSE(error.empty());

  {  // a real SQLite file that is not a gcprof trace
    sqlite3* db = nullptr;
    sqlite3_open(f.path().c_str(), &db);
    std::remove(f.path().c_str());
    sqlite3_close(db);
    sqlite3_open(f.path().c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE songs (title TEXT); INSERT INTO songs VALUES ('x');", nullptr,
                 nullptr, nullptr);
    sqlite3_close(db);
  }
  error.clear();
  EXPECT_EQ(TraceDocument::open(f.path(), 0, &error), nullptr);
  EXPECT_FALSE(error.empty());
}

TEST(TraceDocument, TruncatedTraceGivesAMessage) {
  TempFile f("truncated");
  testing::writeRun(f.path(), testing::fabricateTraining(TrainingShape{}));
  {
    TraceStore checkpoint(f.path(), TraceStore::Mode::ReadWrite);
    sqlite3_exec(checkpoint.handle(), "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  }
  std::ifstream in(f.path(), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(bytes.size(), 8192u);
  for (const char* ext : {"-wal", "-shm"}) std::remove((f.path() + ext).c_str());
  std::ofstream(f.path(), std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 3);
  std::string error;
  auto doc = TraceDocument::open(f.path(), 0, &error);
  // Either the damage is found (a message) or what is left is readable; never a throw.
  if (!doc) {
    EXPECT_FALSE(error.empty());
  }
}

}  // namespace
}  // namespace gcprof::view

namespace gcprof::view {
namespace {

// A big run is read on a worker thread that reports its rows: the window can
// draw a progress bar meanwhile (a big trace must not freeze the window).
TEST(TraceOpening, ReportsRowsReadAndHandsOverTheDocument) {
  TempFile f("opening");
  TrainingShape shape;
  shape.layers = 64;
  shape.steps = 40;
  shape.saved_per_layer = 16;  // ~90k allocations: more than one progress tick
  Trace t = testing::fabricateTraining(shape);
  testing::writeRun(f.path(), t);
  int64_t rows = static_cast<int64_t>(t.ranges.size() + t.allocations.size());
  TraceOpening opening(f.path(), 0);
  std::vector<int64_t> seen;
  while (!opening.done()) {
    seen.push_back(opening.rowsRead());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(opening.rowsRead(), rows);
  EXPECT_EQ(opening.rowsTotal(), rows);
  EXPECT_FLOAT_EQ(opening.fraction(), 1.0f);
  EXPECT_NE(opening.status().find("building the view"), std::string::npos) << opening.status();
  std::string error;
  std::unique_ptr<TraceDocument> doc = opening.take(&error);
  ASSERT_TRUE(doc) << error;
  EXPECT_EQ(doc->run().trace.allocations.size(), t.allocations.size());
}

TEST(TraceOpening, AFileThatIsNotATraceIsAnError) {
  TraceOpening opening("/nonexistent/opening.db", 0);
  while (!opening.done()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::string error;
  EXPECT_EQ(opening.take(&error), nullptr);
  EXPECT_NE(error.find("/nonexistent/opening.db"), std::string::npos) << error;
}

}  // namespace
}  // namespace gcprof::view
