// Multi-process jobs in the store: ranks linked to their launcher (jobOf),
// the version 1 -> 2 migration, and `gcprof merge` of two nodes' traces.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "job.h"
#include "old_layouts.h"
#include "run_writer.h"
#include "trace_merge.h"
#include "trace_store.h"

using namespace gcprof;

namespace {

std::string tempPath(const char* name) {
  std::string p = testing::TempDir() + "gcprof_job_" + name + "_" + std::to_string(getpid()) + ".db";
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((p + ext).c_str());
  return p;
}

// One node of a torchrun job: the launcher's run and `ranks` rank runs with
// one step each (as `gcprof record -- torchrun ...` leaves them).
int64_t writeNode(const std::string& path, std::vector<int> ranks, int world) {
  RunWriter w(path);
  Trace launcher;
  launcher.run.command = R"(["torchrun","--nproc_per_node=2","train.py"])";
  int64_t job = w.appendRun(launcher);
  for (int r : ranks) {
    Trace t;
    t.run.rank = r;
    t.run.local_rank = r % 2;
    t.run.world_size = world;
    t.run.job_run = job;
    t.run.pid = 100 + r;
    t.steps.push_back({0, 10, 20, 0});
    t.scalars.push_back({0, "loss", 1.0 + r});
    Range layer;
    layer.id = 1;
    layer.name = "layers.0";
    layer.start = 10;
    layer.end = 20;
    layer.output_bytes = 1000 + r;
    t.ranges.push_back(layer);
    w.appendRun(t);
  }
  return job;
}

std::string mergeError(const std::string& out, const std::vector<std::string>& in) {
  try {
    mergeTraces(out, in);
  } catch (const StoreError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Job, RanksAreLinkedToTheirLauncher) {
  std::string path = tempPath("link");
  int64_t launcher = writeNode(path, {0, 1}, 2);
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  for (int64_t any : {launcher, launcher + 1, launcher + 2}) {
    Job j = jobOf(s, any);
    EXPECT_EQ(j.launcher.id, launcher);
    ASSERT_EQ(j.ranks.size(), 2u);
    EXPECT_EQ(j.ranks[0].rank, 0);
    EXPECT_EQ(j.ranks[1].rank, 1);
    EXPECT_EQ(j.ranks[1].local_rank, 1);
    EXPECT_EQ(j.ranks[1].world_size, 2);
  }
  // The newest recorded run is a rank: the job stands for it.
  EXPECT_EQ(s.lastRun(), launcher);
  EXPECT_EQ(rankName(s.run(launcher + 2)), "rank 1 (run 3)");
}

// A job whose helper processes made runs after its training process's (a
// data-prep subprocess, a DataLoader worker that called a transform module):
// the run that trained is the job's, not the newest.
TEST(Job, TheNewestJobsTrainingRunIsTheDefaultNotItsNewestProcess) {
  std::string path = tempPath("helpers");
  int64_t root = 0;
  {
    RunWriter w(path);
    Trace training;
    for (int k = 0; k < 3; ++k) training.steps.push_back({k, 10 * k, 10 * k + 5, 0});
    root = w.appendRun(training);
    Trace helper;  // one step: a root module call with grad enabled
    helper.run.job_run = root;
    helper.steps.push_back({0, 1, 2, 0});
    w.appendRun(helper);
    Trace quiet;  // marked a range only
    quiet.run.job_run = root;
    w.appendRun(quiet);
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  EXPECT_EQ(s.lastRun(), root);
  // A shell around the job trains nothing itself: its child that did is the one.
  {
    RunWriter w(path);
    Trace shell;
    int64_t sh = w.appendRun(shell);
    Trace child;
    child.run.job_run = sh;
    child.steps.push_back({0, 1, 2, 0});
    int64_t trained = w.appendRun(child);
    Trace after;  // a later helper of the same shell, no steps
    after.run.job_run = sh;
    w.appendRun(after);
    TraceStore again(path, TraceStore::Mode::ReadOnly);
    EXPECT_EQ(again.lastRun(), trained);
  }
}

TEST(Job, AnUnrankedProcessOfADistributedJobStandsForTheJob) {
  std::string path = tempPath("unranked");
  int64_t launcher = writeNode(path, {0, 1}, 2);
  {
    RunWriter w(path);
    Trace prep;  // no RANK: e.g. a data-prep process the launcher ran
    prep.run.job_run = launcher;
    w.appendRun(prep);
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  EXPECT_EQ(s.lastRun(), launcher);
}

TEST(Job, ARestartedRankCountsByItsNewestRun) {
  std::string path = tempPath("restart");
  int64_t launcher = writeNode(path, {0, 1}, 2);
  {
    RunWriter w(path);
    Trace again;
    again.run.rank = 1;
    again.run.job_run = launcher;
    w.appendRun(again);
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  Job j = jobOf(s, launcher);
  ASSERT_EQ(j.ranks.size(), 2u);
  EXPECT_EQ(j.ranks[1].id, 4);
}

TEST(Job, VersionOneFilesReadWithDefaultsAndMigrateWhenWritten) {
  std::string path = tempPath("v1");
  writeNode(path, {0}, 1);
  {
    // Make it the version 1 layout: no rank columns but `rank`, rowid allocations.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    for (const char* sql : {test::kRowidAllocations, test::kVersion4Ranges, "ALTER TABLE runs DROP COLUMN local_rank",
                            "ALTER TABLE runs DROP COLUMN world_size", "ALTER TABLE runs DROP COLUMN job_run",
                            "PRAGMA user_version = 1"})
      ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
    sqlite3_close(db);
  }
  {
    TraceStore s(path, TraceStore::Mode::ReadOnly);
    EXPECT_EQ(schemaVersionOf(s.handle(), path), 1);
    RunInfo r = s.run(2);
    EXPECT_EQ(r.rank, 0);
    EXPECT_EQ(r.world_size, -1);
    EXPECT_EQ(r.job_run, 0);
  }
  {
    TraceStore s(path, TraceStore::Mode::ReadWrite);
    EXPECT_EQ(schemaVersionOf(s.handle(), path), kSchemaVersion);
    RunInfo r;
    r.rank = 3;
    r.world_size = 4;
    r.job_run = 1;
    int64_t id = s.createRun(r);
    EXPECT_EQ(s.run(id).world_size, 4);
    EXPECT_EQ(s.run(id).job_run, 1);
  }
}

TEST(Merge, TwoNodesBecomeOneJob) {
  std::string a = tempPath("node0"), b = tempPath("node1"), out = tempPath("merged");
  writeNode(a, {0, 1}, 4);
  writeNode(b, {2, 3}, 4);
  MergeResult m = mergeTraces(out, {a, b});
  EXPECT_EQ(m.job_run, 1);
  EXPECT_EQ(m.ranks, 4);
  EXPECT_EQ(m.runs, 6);
  TraceStore s(out, TraceStore::Mode::ReadOnly);
  Job j = jobOf(s, 1);
  ASSERT_EQ(j.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(j.ranks[r].rank, r);
  ASSERT_EQ(j.nodes.size(), 1u);  // the second node's launcher
  EXPECT_EQ(j.nodes[0].id, 4);
  // Every row came along, renumbered: rank 3 was run 3 of node1, now run 6.
  Trace rank3 = s.load(j.ranks[3].id);
  EXPECT_EQ(rank3.run.id, 6);
  ASSERT_EQ(rank3.scalars.size(), 1u);
  EXPECT_DOUBLE_EQ(rank3.scalars[0].value, 4.0);
  ASSERT_EQ(rank3.steps.size(), 1u);
}

// A node recorded before version 5 (one `ranges` table) and one after
// (batches, kernel time in range_device_time) merge into one file whose
// ranges read as each node's did.
TEST(Merge, RangesOfVersionFourAndFiveNodesComeAlong) {
  std::string a = tempPath("v4node"), b = tempPath("v5node"), out = tempPath("v45");
  writeNode(a, {0, 1}, 4);
  writeNode(b, {2, 3}, 4);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(a.c_str(), &db), SQLITE_OK);
  for (const char* sql : {test::kVersion5Frees, test::kVersion4Ranges, "PRAGMA user_version = 4"})
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  sqlite3_close(db);
  ASSERT_EQ(sqlite3_open(b.c_str(), &db), SQLITE_OK);
  // Ranks 2 and 3 are runs 2 and 3 of node b.
  ASSERT_EQ(sqlite3_exec(db, "INSERT INTO range_device_time VALUES (2, 1, 44), (3, 1, 45)", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  mergeTraces(out, {a, b});
  TraceStore s(out, TraceStore::Mode::ReadOnly);
  Job j = jobOf(s, 1);
  ASSERT_EQ(j.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    Trace t = s.load(j.ranks[r].id);
    ASSERT_EQ(t.ranges.size(), 1u) << r;
    EXPECT_EQ(t.ranges[0].name, "layers.0");
    EXPECT_EQ(t.ranges[0].output_bytes, 1000 + r);
    EXPECT_EQ(t.ranges[0].device_ns, r >= 2 ? 42 + r : -1) << r;
  }
}

// Blocks written live and freed later merge with their free times, from a
// node recorded before version 6 (the free in the block's row) and one
// after (allocation_frees).
TEST(Merge, FreesOfBlocksWrittenLiveComeAlong) {
  std::string a = tempPath("v5frees"), b = tempPath("v6frees"), out = tempPath("v56");
  for (const std::string& path : {a, b}) {
    writeNode(path, path == a ? std::vector<int>{0, 1} : std::vector<int>{2, 3}, 4);
    RunWriter w(path);
    w.selectRun(3);  // the node's second rank
    RecordedAllocation block;
    block.bytes = 4096;
    block.alloc = 11;
    block.id = w.addLive(block);
    w.commit();
    block.free = 19;
    w.setFree(block);
    w.commit();
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(a.c_str(), &db), SQLITE_OK);
  for (const char* sql : {test::kVersion5Frees, "PRAGMA user_version = 5"})
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  sqlite3_close(db);
  mergeTraces(out, {a, b});
  TraceStore s(out, TraceStore::Mode::ReadOnly);
  Job j = jobOf(s, 1);
  ASSERT_EQ(j.ranks.size(), 4u);
  for (int r : {1, 3}) {
    Trace t = s.load(j.ranks[r].id);
    ASSERT_EQ(t.allocations.size(), 1u) << r;
    EXPECT_EQ(t.allocations[0].free, 19) << r;
  }
}

TEST(Merge, RefusesWhatWouldNotBeOneJob) {
  std::string a = tempPath("ra"), single = tempPath("single"), out = tempPath("rout");
  writeNode(a, {0, 1}, 2);
  { RunWriter w(single); w.appendRun(Trace{}); }
  std::string twice = mergeError(out, {a, a});
  EXPECT_NE(twice.find("rank 0 is also in"), std::string::npos) << twice;
  EXPECT_NE(access(out.c_str(), F_OK), 0) << "no half-merged file is left behind";
  std::string no_job = mergeError(out, {a, single});
  EXPECT_NE(no_job.find(single + ": holds no distributed job"), std::string::npos) << no_job;
  std::string b = tempPath("rb");
  writeNode(b, {2, 3}, 4);
  mergeTraces(out, {a, b});
  std::string exists = mergeError(out, {a, b});
  EXPECT_NE(exists.find("already exists"), std::string::npos) << exists;
}
