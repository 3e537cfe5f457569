// The trace store: what is written comes back, and files that are not
// gcprof traces (or are newer than this build) are refused with a clear error.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

#include "error_in_child.h"
#include "run_writer.h"
#include "trace_store.h"

using namespace gcprof;

namespace {

std::string tempPath(const char* name) {
  std::string p = testing::TempDir() + "gcprof_store_" + name + "_" + std::to_string(getpid()) + ".db";
  std::remove(p.c_str());
  std::remove((p + "-wal").c_str());
  std::remove((p + "-shm").c_str());
  return p;
}

std::string errorOf(const std::string& path) {
  try {
    TraceStore s(path, TraceStore::Mode::ReadOnly);
  } catch (const StoreError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(TraceStore, RoundTripsEveryTable) {
  std::string path = tempPath("roundtrip");
  {
    RunWriter w(path);
    RunInfo info;
    info.command = R"(["python3","train.py"])";
    info.cwd = "/tmp";
    info.pid = 42;
    info.started = 1000;
    int64_t run = w.createRun(info);
    EXPECT_EQ(run, 1);
    Range r;
    r.id = 7;
    r.name = "layers.3.attn";
    r.domain = RangeDomain::Module;
    r.phase = Phase::Backward;
    r.thread = 11;
    r.depth = 3;
    r.parent = 6;
    r.start = 2000;
    r.end = 3000;
    r.step = 1;
    r.input_bytes = 4096;
    r.output_bytes = 8192;
    w.add(r);
    RecordedAllocation a;
    a.addr = 0xdeadbeef000;
    a.bytes = 1 << 20;
    a.thread = 11;
    a.api = static_cast<int>(AllocApi::PosixMemalign);
    a.alloc = 2100;
    a.free = 2900;
    a.range = 7;
    a.step = 1;
    w.add(a);
    a.addr += 4096;
    a.free = -1;
    a.alloc = 2200;
    w.add(a);
    w.add(Step{1, 1500, 3500});
    w.add(Scalar{1, "loss", 2.5});
    Kernel k;
    k.name = "gemm";
    k.start = 2050;
    k.end = 2150;
    k.range = 7;
    w.add(k);
    RunInfo done;
    done.status = "complete";
    done.ended = 4000;
    done.small_allocs = 5;
    done.runtime = "python";
    w.finish(done);
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  ASSERT_EQ(s.runs().size(), 1u);
  Trace t = s.load(1);
  EXPECT_EQ(t.run.command, R"(["python3","train.py"])");
  EXPECT_EQ(t.run.status, "complete");
  EXPECT_EQ(t.run.small_allocs, 5);
  EXPECT_EQ(t.run.runtime, "python");
  ASSERT_EQ(t.ranges.size(), 1u);
  EXPECT_EQ(t.ranges[0].name, "layers.3.attn");
  EXPECT_EQ(t.ranges[0].phase, Phase::Backward);
  EXPECT_EQ(t.ranges[0].output_bytes, 8192);
  ASSERT_EQ(t.allocations.size(), 2u);
  EXPECT_EQ(t.allocations[0].addr, 0xdeadbeef000u);
  EXPECT_EQ(t.allocations[0].free, 2900);
  EXPECT_EQ(t.contextOf(t.allocations[0]).thread, 11);
  EXPECT_FALSE(t.allocations[1].freed());
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.steps[0].end, 3500);
  ASSERT_EQ(t.scalars.size(), 1u);
  EXPECT_DOUBLE_EQ(t.scalars[0].value, 2.5);
  ASSERT_EQ(t.kernels.size(), 1u);
}

TEST(TraceStore, KernelTimeIsAttributedToTheRangeAndItsParents) {
  std::string path = tempPath("kernels");
  RunWriter w(path);
  w.createRun(RunInfo{});
  Range outer;
  outer.id = 1;
  outer.name = "layers.0";
  outer.start = 0;
  outer.end = 100;
  Range inner = outer;
  inner.id = 2;
  inner.parent = 1;
  inner.name = "layers.0.mlp";
  w.add(outer);
  w.add(inner);
  Kernel k;
  k.range = 2;
  k.start = 10;
  k.end = 30;
  w.add(k);
  k.range = 1;
  k.start = 40;
  k.end = 45;
  w.add(k);
  w.attributeKernelTime();
  RunInfo done;
  done.status = "complete";
  w.finish(done);
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  Trace t = s.load(1);
  ASSERT_EQ(t.ranges.size(), 2u);
  for (const Range& r : t.ranges) EXPECT_EQ(r.device_ns, r.id == 1 ? 25 : 20) << r.name;
}

TEST(TraceStore, PlansAndVerificationsRoundTrip) {
  std::string path = tempPath("plans");
  TraceStore s(path, TraceStore::Mode::ReadWrite);
  int64_t plan = s.savePlan({0, 1, 5, "optimal", 1000, R"({"format":"gcprof.plan/1"})"});
  s.saveVerification({0, plan, 1, 2, "PASS", 6, "{}"});
  ASSERT_EQ(s.plans().size(), 1u);
  EXPECT_EQ(s.plans()[0].strategy, "optimal");
  ASSERT_EQ(s.verifications().size(), 1u);
  EXPECT_EQ(s.verifications()[0].verdict, "PASS");
}

TEST(TraceStore, RefusesAFileThatIsNotSQLite) {
  std::string path = tempPath("text");
  std::ofstream(path) << "/dev/null\n";
  std::string err = errorOf(path);
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("not"), std::string::npos) << err;
}

namespace {
// An open that blocks (a FIFO's did) fails the test after 10 s.
std::string errorInChild(const std::string& path, TraceStore::Mode mode) {
  return gcprof::test::errorInChild([&] { TraceStore s(path, mode); }, "opened");
}
}  // namespace

TEST(TraceStore, RefusesANamedPipeADirectoryAndADeviceWithoutBlocking) {
  std::string fifo = tempPath("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (auto mode : {TraceStore::Mode::ReadOnly, TraceStore::Mode::ReadWrite}) {
    std::string err = errorInChild(fifo, mode);
    EXPECT_NE(err.find(fifo + ": is a named pipe (FIFO), not a trace file"), std::string::npos) << err;
  }
  std::remove(fifo.c_str());
  std::string dir = testing::TempDir();
  EXPECT_NE(errorInChild(dir, TraceStore::Mode::ReadOnly).find("is a directory"), std::string::npos)
      << errorInChild(dir, TraceStore::Mode::ReadOnly);
  EXPECT_NE(errorInChild("/dev/null", TraceStore::Mode::ReadWrite).find("/dev/null: is a device"),
            std::string::npos)
      << errorInChild("/dev/null", TraceStore::Mode::ReadWrite);
}

TEST(TraceStore, RefusesAnotherApplicationsDatabase) {
  std::string path = tempPath("foreign");
  sqlite3* db;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "CREATE TABLE songs (title TEXT)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_NE(errorOf(path).find("not a gcprof trace"), std::string::npos) << errorOf(path);
}

TEST(TraceStore, RefusesAForeignMetaTableWithANullValue) {
  // Was "basic_string: construction from null is not valid" (undefined behaviour).
  std::string path = tempPath("null_meta");
  sqlite3* db;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('application', NULL);"
               "PRAGMA user_version = 1", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_NE(errorOf(path).find("not a gcprof trace"), std::string::npos) << errorOf(path);
}

TEST(TraceStore, RefusesANewerSchemaAndSaysWhatToDo) {
  std::string path = tempPath("newer");
  { TraceStore s(path, TraceStore::Mode::ReadWrite); }
  sqlite3* db;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  std::string err = errorOf(path);
  EXPECT_NE(err.find("schema version 99 is newer"), std::string::npos) << err;
  EXPECT_NE(err.find("upgrade gcprof"), std::string::npos) << err;
}

TEST(TraceStore, RefusesAMissingFileWithoutCreatingIt) {
  std::string path = tempPath("missing");
  EXPECT_NE(errorOf(path).find("cannot open"), std::string::npos);
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

TEST(TraceStore, RefusesATruncatedTrace) {
  std::string path = tempPath("truncated");
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    for (int i = 0; i < 5000; ++i) {
      RecordedAllocation a;
      a.addr = i;
      a.bytes = 1;
      w.add(a);
    }
    w.commit();
  }
  // Checkpoint the WAL into the main file, then cut the file in half.
  sqlite3* db;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  std::string err;
  try {
    TraceStore s(path, TraceStore::Mode::ReadOnly);
    s.load(1);
  } catch (const StoreError& e) {
    err = e.what();
  }
  EXPECT_NE(err.find(path), std::string::npos) << "no error naming the file: " << err;
}

// verify's progress line counts only the re-runs of its own baseline: another
// record or verify writing into the trace at the same time must not show.
TEST(TraceStore, RerunProgressCountsOnlyThatBaselinesReruns) {
  std::string path = tempPath("progress");
  auto runWithSteps = [&](int64_t baseline, std::vector<Bytes> peaks) {
    RunWriter w(path);
    RunInfo info;
    info.command = "[]";
    info.baseline_run = baseline;
    w.createRun(info);
    w.begin();
    for (size_t i = 0; i < peaks.size(); ++i)
      w.add(Step{static_cast<int64_t>(i), 10, 20, peaks[i]});
    w.commit();
  };
  runWithSteps(0, {100, 200, 300});  // run 1: the baseline
  runWithSteps(1, {150, 250});       // run 2: a verification of it
  runWithSteps(0, {999, 999, 999});  // run 3: another recording, meanwhile
  runWithSteps(1, {400});            // run 4: a later verification
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  TraceStore::StepProgress p = s.rerunProgress(1, 1);
  EXPECT_EQ(p.steps, 3);
  EXPECT_EQ(p.peak, 400);
  p = s.rerunProgress(1, 3);
  EXPECT_EQ(p.steps, 1);
  EXPECT_EQ(s.rerunProgress(7, 0).steps, 0);
}

// A run made through TraceStore (record's root run) and one made through
// RunWriter (the injector's descendants) are written by the same statement.
TEST(TraceStore, BothWritePathsMakeTheSameRunRow) {
  std::string path = tempPath("run-row");
  RunInfo info;
  info.command = R"(["train"])";
  info.cwd = "caf\xe9";  // not UTF-8: both store it as valid UTF-8
  info.name = "n";
  info.rank = 1;
  info.local_rank = 0;
  info.world_size = 2;
  info.job_run = 9;
  info.started = 5;
  { RunWriter(path).createRun(info); }
  TraceStore s(path, TraceStore::Mode::ReadWrite);
  s.createRun(info);
  RunInfo a = s.run(1), b = s.run(2);
  for (const RunInfo* r : {&a, &b}) {
    EXPECT_EQ(r->cwd, a.cwd);
    EXPECT_EQ(r->status, "running");
    EXPECT_EQ(r->backend, "host");
    EXPECT_EQ(r->job_run, 9);
    EXPECT_EQ(r->world_size, 2);
    EXPECT_EQ(r->started, 5);
  }
  EXPECT_NE(a.cwd, info.cwd);
}

// Allocations go in 32 rows per INSERT (run_writer.h): a partial batch is
// written at commit, a block written while live (addLive) comes after those
// added before it and gets the id setFree needs, and every row keeps the
// order of the calls (load() breaks ties of alloc_ns by id).
TEST(TraceStore, BatchedAllocationsKeepTheirOrderAndEveryField) {
  std::string path = tempPath("batched");
  std::vector<RecordedAllocation> written;
  int64_t live_row = 0;
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    for (int i = 0; i < 101; ++i) {
      RecordedAllocation a;
      a.addr = 0x1000 + 16 * i;
      a.bytes = 4096 + i;
      a.device = i % 3 - 1;
      a.stream = i % 5;
      a.thread = 100 + i % 4;
      a.api = i % 8;
      a.alloc = 1000 + i / 2;  // pairs with the same time: only the row orders them
      a.free = a.alloc + 7;
      a.range = i % 6;
      a.step = i / 10;
      a.kind = i % 2;
      if (i == 45) {  // in the middle of the second batch
        a.free = -1;
        live_row = w.addLive(a);
        a.id = live_row;
        a.free = 2000;
        w.setFree(a);
      } else {
        w.add(a);
      }
      written.push_back(a);
      if (i == 70) w.commit();  // a partial batch at a commit
    }
    w.finish(RunInfo{});
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  Trace t = s.load(s.lastRun());
  ASSERT_EQ(t.allocations.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) {
    const Allocation& got = t.allocations[i];
    const RecordedAllocation& want = written[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(got.id, static_cast<int64_t>(i + 1));
    EXPECT_EQ(got.addr, want.addr);
    EXPECT_EQ(got.bytes, want.bytes);
    EXPECT_EQ(got.device, want.device);
    EXPECT_EQ(t.contextOf(got).stream, want.stream);
    EXPECT_EQ(t.contextOf(got).thread, want.thread);
    EXPECT_EQ(got.api, want.api);
    EXPECT_EQ(got.alloc, want.alloc);
    EXPECT_EQ(got.free, want.free);
    EXPECT_EQ(got.range, want.range);
    EXPECT_EQ(got.step, want.step);
    EXPECT_EQ(got.kind, want.kind);
  }
  EXPECT_EQ(live_row, 46);
}

// A writer destroyed with a batch not yet written (the injector's writer on
// an exception path) still commits it.
TEST(TraceStore, APartialBatchIsWrittenWhenTheWriterCloses) {
  std::string path = tempPath("partial");
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    for (int i = 0; i < 5; ++i) {
      RecordedAllocation a;
      a.addr = 0x2000 + 16 * i;
      a.bytes = 5000;
      a.alloc = 10 + i;
      a.free = 20 + i;
      w.add(a);
    }
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  EXPECT_EQ(s.load(s.lastRun()).allocations.size(), 5u);
}

// A run's rows name their stream and thread in the trace's table: written
// from a trace built by hand, batched or in a row of their own, and loaded,
// every row comes back with its own among thousands of pairs.
TEST(TraceStore, EveryRowKeepsItsStreamAndThreadAmongThousandsOfThem) {
  std::string path = tempPath("contexts");
  Trace t;
  t.run.status = "complete";
  for (int i = 0; i < 6000; ++i) {
    Allocation a;
    a.addr = 0x1000 + 16 * static_cast<uint64_t>(i);
    a.bytes = 64;
    a.alloc = i == 4321 ? INT64_MIN : 1000 + i;  // not relative to its batch: a row of its own
    a.free = i % 2 ? a.alloc + 5 : -1;
    a.context = t.contexts.intern({i % 7, (int64_t{1} << 40) + i % 3000});
    t.allocations.push_back(a);
  }
  { RunWriter(path).appendRun(t); }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  Trace got = s.load(s.lastRun());
  ASSERT_EQ(got.allocations.size(), t.allocations.size());
  EXPECT_EQ(got.contexts.size(), t.contexts.size());
  for (const Allocation& a : got.allocations) {
    const uint64_t i = (a.addr - 0x1000) / 16;
    SCOPED_TRACE(i);
    EXPECT_EQ(got.contextOf(a).stream, static_cast<int64_t>(i % 7));
    EXPECT_EQ(got.contextOf(a).thread, (int64_t{1} << 40) + static_cast<int64_t>(i % 3000));
  }
  EXPECT_EQ(got.allocations.front().alloc, INT64_MIN);
}

// The writer inserts ranges many to one INSERT; whatever the group a range
// fell in (a whole one, the rest at a commit, the rest when the writer
// closes without finishing), every field comes back, in (start, id) order.
TEST(TraceStore, RangesWrittenInGroupsKeepEveryFieldAndTheirOrder) {
  std::string path = tempPath("ranges");
  std::vector<Range> written;
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    for (int i = 0; i < 41; ++i) {
      Range r;
      r.id = i + 1;
      r.name = i == 7 ? std::string("bad\xff") : "layers." + std::to_string(i);
      r.domain = i % 2 ? RangeDomain::Module : RangeDomain::User;
      r.phase = i % 3 ? Phase::Forward : Phase::Backward;
      r.thread = 7 + i % 2;
      r.depth = i % 4;
      r.parent = i / 5;
      r.start = 1000 - 10 * (i % 7);  // not in id order, with ties
      r.end = r.start + 50 + i;
      r.step = i / 9;
      r.device_ns = i % 5 ? -1 : 33 * i;
      r.input_bytes = 100 * i;
      r.output_bytes = 200 * i;
      w.add(r);
      written.push_back(r);
      if (i == 20) w.commit();  // 5 ranges after one group of 16
    }
  }  // closed without finish(): the last 4 of 20 since that commit are written too
  written[7].name = "bad\xef\xbf\xbd";
  std::stable_sort(written.begin(), written.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  Trace t = s.load(s.lastRun());
  ASSERT_EQ(t.ranges.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) {
    const Range &got = t.ranges[i], &want = written[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(got.id, want.id);
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.domain, want.domain);
    EXPECT_EQ(got.phase, want.phase);
    EXPECT_EQ(got.thread, want.thread);
    EXPECT_EQ(got.depth, want.depth);
    EXPECT_EQ(got.parent, want.parent);
    EXPECT_EQ(got.start, want.start);
    EXPECT_EQ(got.end, want.end);
    EXPECT_EQ(got.step, want.step);
    EXPECT_EQ(got.device_ns, want.device_ns);
    EXPECT_EQ(got.input_bytes, want.input_bytes);
    EXPECT_EQ(got.output_bytes, want.output_bytes);
  }
}
