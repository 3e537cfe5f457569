// How a recorded process ends, idles or is killed: the injector must not
// keep it alive, hold off a signal, change its exit code, or lose what it
// had recorded. lifecycle_job (a small C program) is the job.
#include <gtest/gtest.h>

#include <csignal>
#include <map>

#include "background_record.h"
#include "trace_store.h"

using namespace gcprof;
using gcprof::testing_support::BackgroundRecord;

namespace {

std::string tempPath(const std::string& what) {
  return testing::TempDir() + "gcprof_lifecycle_" + what + "_" + std::to_string(getpid());
}

RunInfo rootRun(const std::string& db) {
  TraceStore s(db, TraceStore::Mode::ReadOnly);
  std::vector<RunInfo> runs = s.runs();
  EXPECT_EQ(runs.size(), 1u);
  return runs.empty() ? RunInfo{} : runs.front();
}

}  // namespace

// main() ends with pthread_exit() and a worker returns later: the process
// ends then, with exit code 0, as it does unrecorded (the writer thread does
// not count as one of the job's threads).
TEST(Lifecycle, AProcessEndsWhenItsLastThreadReturns) {
  std::string db = tempPath("worker_ends") + ".db", ready = db + ".ready";
  std::remove(ready.c_str());
  BackgroundRecord rec(GCPROF_BIN, db, {}, {LIFECYCLE_JOB_BIN, "worker_ends", ready});
  int code = rec.wait(60);
  ASSERT_NE(code, -1) << "the job never ended: the writer thread kept the process alive";
  EXPECT_EQ(code, 0) << rec.stderrText();
  RunInfo run = rootRun(db);
  EXPECT_EQ(run.status, "complete");
  Trace t = TraceStore(db, TraceStore::Mode::ReadOnly).load(run.id);
  size_t blocks = 0;
  for (const Allocation& a : t.allocations) blocks += a.bytes == (3 << 20);
  EXPECT_EQ(blocks, 1u) << "the worker's block is in the trace";
}

// The last thread returns with SIGTERM pending (it had it blocked): unrecorded,
// the process dies of it; the writer (which blocks every signal) must not
// sit on it.
TEST(Lifecycle, ASignalPendingWhenTheLastThreadEndsStillKillsTheProcess) {
  std::string db = tempPath("term_pending") + ".db", ready = db + ".ready";
  std::remove(ready.c_str());
  BackgroundRecord rec(GCPROF_BIN, db, {}, {LIFECYCLE_JOB_BIN, "term_pending_at_end", ready});
  pid_t job = BackgroundRecord::waitForPidFile(ready, 60);
  ASSERT_GT(job, 0) << rec.stderrText();
  ASSERT_EQ(kill(job, SIGTERM), 0);
  int code = rec.wait(60);
  ASSERT_NE(code, -1) << "SIGTERM stayed pending: the process never ended";
  EXPECT_EQ(code, 128 + SIGTERM);
  EXPECT_EQ(rootRun(db).status, "interrupted");
}

namespace {

size_t liveMiBBlocks(const std::string& db) {
  TraceStore s(db, TraceStore::Mode::ReadOnly);
  std::vector<RunInfo> runs = s.runs();
  if (runs.empty()) return 0;
  size_t n = 0;
  for (const Allocation& a : s.load(runs.front().id).allocations) n += a.bytes == (1 << 20);
  return n;
}

}  // namespace

// 64 blocks of 1 MiB held, then idle (a rank hung in a collective) until
// SIGKILL: no event follows the allocations, and still every block must be
// in the trace within a bounded time, as the memory the job died holding.
TEST(Lifecycle, AnIdleJobKilledKeepsAllItsMemoryInTheTrace) {
  std::string db = tempPath("idle_killed") + ".db", ready = db + ".ready";
  std::remove(ready.c_str());
  BackgroundRecord rec(GCPROF_BIN, db, {}, {LIFECYCLE_JOB_BIN, "hold_then_idle", ready});
  pid_t job = BackgroundRecord::waitForPidFile(ready, 60);
  ASSERT_GT(job, 0) << rec.stderrText();
  // The trace shows them within a few writer rounds; 10 s bounds the wait
  // when it never does.
  for (double end = testing_support::secondsNow() + 10;
       liveMiBBlocks(db) < 64 && testing_support::secondsNow() < end;)
    testing_support::pauseMs(50);
  ASSERT_EQ(kill(job, SIGKILL), 0);
  EXPECT_EQ(rec.wait(60), 128 + SIGKILL);
  EXPECT_EQ(liveMiBBlocks(db), 64u) << "MiB of the 64 the job held when it was killed";
}

// A launcher marks ranges and execs the training program with LD_PRELOAD
// kept: range ids start at 1 again in the new image. Both images' ranges,
// steps and blocks are in the root's one run, and each block points at the
// range it was made in.
TEST(Lifecycle, AnExecKeepsWhatBothImagesRecorded) {
  std::string db = tempPath("exec") + ".db", ready = db + ".ready";
  BackgroundRecord rec(GCPROF_BIN, db, {}, {LIFECYCLE_JOB_BIN, "mark_then_exec", ready});
  int code = rec.wait(60);
  std::string err = rec.stderrText();
  ASSERT_EQ(code, 0) << err;
  EXPECT_EQ(err.find("recording stopped"), std::string::npos) << err;
  RunInfo run = rootRun(db);
  EXPECT_EQ(run.status, "complete");
  Trace t = TraceStore(db, TraceStore::Mode::ReadOnly).load(run.id);
  std::map<int64_t, const Range*> by_id;
  std::map<std::string, int> named;
  for (const Range& r : t.ranges) {
    by_id[r.id] = &r;
    ++named[r.name];
  }
  EXPECT_EQ(named["launcher.setup"], 1);
  EXPECT_EQ(named["launcher.exec"], 1) << "the range open at the exec ends with it";
  EXPECT_EQ(named["layers.0"], 2);
  EXPECT_EQ(t.steps.size(), 2u);
  const Allocation* launcher = nullptr;
  int trained = 0;
  for (const Allocation& a : t.allocations) {
    auto range = by_id.find(a.range);
    std::string name = range == by_id.end() ? "" : range->second->name;
    if (a.bytes == (2 << 20)) {
      launcher = &a;
      EXPECT_EQ(name, "launcher.setup");
    }
    if (a.bytes == (1 << 20) || a.bytes == (1 << 20) + 1) {
      ++trained;
      EXPECT_EQ(name, "layers.0");
    }
  }
  EXPECT_EQ(trained, 2);
  ASSERT_NE(launcher, nullptr) << "the launcher's block is lost";
  ASSERT_FALSE(t.steps.empty());
  EXPECT_TRUE(launcher->freed()) << "the exec freed it: not live for the rest of the run";
  EXPECT_LE(launcher->free, t.steps.front().start);
}

// `record` itself SIGKILLed: its job gets SIGTERM (PR_SET_PDEATHSIG) and ends
// its run; with nobody left to store the exit code, the injector stores the
// one the job dies with.
TEST(Lifecycle, ARecorderKilledLeavesTheJobsSignalInItsRun) {
  std::string db = tempPath("recorder_killed") + ".db", ready = db + ".ready";
  std::remove(ready.c_str());
  BackgroundRecord rec(GCPROF_BIN, db, {}, {LIFECYCLE_JOB_BIN, "hold_then_idle", ready});
  pid_t job = BackgroundRecord::waitForPidFile(ready, 60);
  ASSERT_GT(job, 0) << rec.stderrText();
  ASSERT_EQ(kill(rec.pid(), SIGKILL), 0);
  EXPECT_EQ(rec.wait(60), 128 + SIGKILL);
  for (double end = testing_support::secondsNow() + 60;
       !testing_support::processEnded(job) && testing_support::secondsNow() < end;)
    testing_support::pauseMs(20);
  ASSERT_TRUE(testing_support::processEnded(job)) << "the job outlived its recorder";
  RunInfo run = rootRun(db);
  EXPECT_EQ(run.status, "interrupted");
  EXPECT_EQ(run.exit_code, 128 + SIGTERM);
}

// `gcprof ctl` on a trace whose recording has ended: nobody would read its
// .ctl (until a later recording, which it would wrongly pause).
TEST(Lifecycle, CtlRefusesATraceNobodyRecords) {
  std::string db = tempPath("ctl_finished") + ".db", ready = db + ".ready";
  BackgroundRecord rec(GCPROF_BIN, db, {}, {LIFECYCLE_JOB_BIN, "worker_ends", ready});
  ASSERT_EQ(rec.wait(60), 0) << rec.stderrText();
  std::string err = db + ".ctl_stderr";
  int status = std::system((std::string(GCPROF_BIN) + " ctl " + db + " pause 2>" + err).c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::ifstream in(err);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("no recording is running into it"), std::string::npos) << text;
  EXPECT_NE(access((db + ".ctl").c_str(), F_OK), 0) << "a .ctl file was left";
}

// _exit while another thread holds the dynamic loader's lock (inside dlopen,
// running a library's constructor): the interposed _exit must not look
// itself up then, or the process never ends.
TEST(Lifecycle, ExitWhileAnotherThreadLoadsALibrary) {
  std::string db = tempPath("exit_loading") + ".db";
  BackgroundRecord rec(GCPROF_BIN, db, {},
                       {LIFECYCLE_JOB_BIN, "exit_while_loading", BLOCKING_LIBRARY});
  int code = rec.wait(60);
  ASSERT_NE(code, -1) << "_exit hung on the loader's lock";
  EXPECT_EQ(code, 5) << rec.stderrText();
}
