// The real injector in a real process: inject_probe recorded by `gcprof record`.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "trace_store.h"

using namespace gcprof;

namespace {

struct Recorded {
  int exit_code;
  std::string db;
};

Recorded record(const std::string& mode, const std::string& flags = "") {
  std::string db = testing::TempDir() + "gcprof_probe_" + mode + "_" + std::to_string(getpid()) + ".db";
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((db + ext).c_str());
  std::string cmd = std::string(GCPROF_BIN) + " record -o " + db + " " + flags + " -- " + PROBE_BIN +
                    " " + mode + " 2>/dev/null";
  int status = std::system(cmd.c_str());
  return {WEXITSTATUS(status), db};
}

Trace onlyRun(const std::string& db) {
  TraceStore s(db, TraceStore::Mode::ReadOnly);
  auto runs = s.runs();
  EXPECT_EQ(runs.size(), 1u);
  return s.load(runs.at(0).id);
}

size_t countBytes(const Trace& t, Bytes bytes) {
  return std::count_if(t.allocations.begin(), t.allocations.end(),
                       [&](const Allocation& a) { return a.bytes == bytes; });
}

}  // namespace

TEST(Injector, ThreadsRecordEveryAllocationWithTheirOwnRange) {
  Recorded r = record("threads");
  ASSERT_EQ(r.exit_code, 0);
  Trace t = onlyRun(r.db);
  std::map<int64_t, std::string> names;
  for (const Range& range : t.ranges) names[range.id] = range.name;
  for (int th = 0; th < 4; ++th) {
    Bytes size = 40000 + th * 16;
    EXPECT_EQ(countBytes(t, size), 1000u) << "thread " << th;
    for (const Allocation& a : t.allocations) {
      if (a.bytes != size) continue;
      EXPECT_TRUE(a.freed());
      EXPECT_EQ(names[a.range], "thread." + std::to_string(th));
    }
  }
  EXPECT_EQ(t.run.status, "complete");
  EXPECT_EQ(t.run.dropped_events, 0);
}

TEST(Injector, SmallAllocationsAreCountedNotRecorded) {
  Recorded r = record("small", "--min-bytes 1KiB");
  ASSERT_EQ(r.exit_code, 0);
  Trace t = onlyRun(r.db);
  EXPECT_EQ(countBytes(t, 100), 0u);
  EXPECT_GE(t.run.small_allocs, 10000);
  EXPECT_GE(t.run.small_bytes, 10000 * 100);
  EXPECT_EQ(countBytes(t, 50000), 1u);
}

// The free hook skips blocks too small to have been recorded by their size
// (glibc's header, allocation_reports.h): none that was recorded is skipped.
TEST(Injector, EveryRecordedBlockAtTheThresholdIsFreed) {
  Recorded r = record("threshold", "--min-bytes 1KiB");
  ASSERT_EQ(r.exit_code, 0);
  Trace t = onlyRun(r.db);
  std::map<Bytes, int> recorded;
  for (const Allocation& a : t.allocations) {
    if (a.bytes < 1000 || a.bytes > 1100) continue;
    ++recorded[a.bytes];
    EXPECT_TRUE(a.freed()) << a.bytes << " bytes, api " << a.api;
  }
  for (Bytes n = 1000; n <= 1100; ++n) EXPECT_EQ(recorded[n], n < 1024 ? 0 : 3) << n;
  // A block just under the threshold can fill a chunk as large as a recorded
  // one's: its free reaches the writer, which counts it unmatched. Only those.
  EXPECT_LE(t.run.unmatched_frees, 3 * 24);
}

TEST(Injector, EveryAllocationFunctionIsInterposed) {
  Recorded r = record("apis");
  ASSERT_EQ(r.exit_code, 0);
  Trace t = onlyRun(r.db);
  std::map<Bytes, int> api;
  for (const Allocation& a : t.allocations) api[a.bytes] = a.api;
  EXPECT_EQ(api.at(61000), static_cast<int>(AllocApi::Calloc));
  EXPECT_EQ(api.at(62000), static_cast<int>(AllocApi::Malloc));
  EXPECT_EQ(api.at(63000), static_cast<int>(AllocApi::Realloc));
  EXPECT_EQ(api.at(64000), static_cast<int>(AllocApi::PosixMemalign));
  EXPECT_EQ(api.at(65536), static_cast<int>(AllocApi::AlignedAlloc));
  EXPECT_EQ(api.at(66000), static_cast<int>(AllocApi::Memalign));
  EXPECT_EQ(api.at(67000), static_cast<int>(AllocApi::Valloc));
  for (const Allocation& a : t.allocations) {
    if (a.bytes >= 61000 && a.bytes <= 67000) {
      EXPECT_TRUE(a.freed()) << a.bytes;
    }
  }
}

TEST(Injector, AFailedReallocLeavesTheBlockLive) {
  Recorded r = record("realloc_fails");
  ASSERT_EQ(r.exit_code, 0);
  Trace t = onlyRun(r.db);
  Bytes live = 0;
  for (const Allocation& a : t.allocations)
    if (a.bytes >= 90000 && a.bytes < 91000 && !a.freed()) live += a.bytes;
  EXPECT_GE(live, 90000) << "the block realloc could not move is still the job's";
}

TEST(Injector, AForkedChildNeverWritesIntoTheParentsRun) {
  Recorded r = record("fork");
  ASSERT_EQ(r.exit_code, 0);
  Trace t = onlyRun(r.db);
  EXPECT_EQ(countBytes(t, 77777), 1u);
  EXPECT_EQ(countBytes(t, 88888), 0u);
  EXPECT_EQ(t.run.status, "complete");
}

TEST(Injector, StepsRangesAndScalarsFromTheCApi) {
  Recorded r = record("steps");
  ASSERT_EQ(r.exit_code, 0);
  Trace t = onlyRun(r.db);
  ASSERT_EQ(t.steps.size(), 4u);
  ASSERT_EQ(t.scalars.size(), 4u);
  EXPECT_DOUBLE_EQ(t.scalars[1].value, 0.5);
  EXPECT_EQ(t.scalars[1].step, 1);
  int forward = 0, backward = 0;
  for (const Range& range : t.ranges) {
    EXPECT_EQ(range.name, "layers.0");
    EXPECT_EQ(range.domain, RangeDomain::Module);
    EXPECT_EQ(range.depth, 2);
    forward += range.phase == Phase::Forward;
    backward += range.phase == Phase::Backward;
  }
  EXPECT_EQ(forward, 4);
  EXPECT_EQ(backward, 4);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(countBytes(t, 100000 + s), 1u);
}

TEST(Injector, StepsWindowKeepsOnlyThoseSteps) {
  Recorded r = record("steps", "--steps 1:3");
  ASSERT_EQ(r.exit_code, 0);
  Trace t = onlyRun(r.db);
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].index, 1);
  EXPECT_EQ(t.steps[1].index, 2);
  EXPECT_EQ(countBytes(t, 100000), 0u);
  EXPECT_EQ(countBytes(t, 100001), 1u);
  EXPECT_EQ(countBytes(t, 100002), 1u);
  EXPECT_EQ(countBytes(t, 100003), 0u);
}

TEST(Injector, SigtermFlushesAndMarksTheRunInterrupted) {
  Recorded r = record("sigterm");
  EXPECT_EQ(r.exit_code, 128 + 15);
  Trace t = onlyRun(r.db);
  EXPECT_EQ(t.run.status, "interrupted");
  EXPECT_EQ(countBytes(t, 99999), 1u);
  EXPECT_EQ(t.steps.size(), 1u);
}

// A rank's run says how the rank ended, whatever ended it: returning a code
// from main (on_exit is told it) or _exit (interposed; no handlers run).
TEST(Injector, ChildRunsRecordTheirOwnExitCode) {
  Recorded r = record("children");
  EXPECT_EQ(r.exit_code, 0);
  TraceStore s(r.db, TraceStore::Mode::ReadOnly);
  std::vector<RunInfo> runs = s.runs();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].status, "complete");  // the parent, which `record` started
  std::map<int, RunInfo> by_code;
  for (size_t i = 1; i < runs.size(); ++i) {
    by_code[runs[i].exit_code] = runs[i];
    EXPECT_EQ(runs[i].job_run, runs[0].id);
  }
  ASSERT_EQ(by_code.count(3), 1u);
  ASSERT_EQ(by_code.count(4), 1u);
  EXPECT_EQ(by_code[3].status, "failed");
  EXPECT_EQ(by_code[4].status, "failed");
  EXPECT_EQ(s.load(by_code[4].id).steps.size(), 1u) << "_exit still flushes what was recorded";
}

// A rank that aborts (std::terminate at exit, seen once under CI load in a
// torchrun job): its run says so with the signal's code and keeps
// its steps, the abort still kills it, and its native stack is on stderr.
TEST(Injector, AnAbortingChildRecordsItsAbortAndItsStack) {
  std::string db = testing::TempDir() + "gcprof_probe_abort_" + std::to_string(getpid()) + ".db";
  std::string err = db + ".stderr";
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((db + ext).c_str());
  std::string cmd = std::string(GCPROF_BIN) + " record -o " + db + " -- " + PROBE_BIN + " aborting_child 2>" + err;
  int status = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child did not die of SIGABRT";
  TraceStore s(db, TraceStore::Mode::ReadOnly);
  std::vector<RunInfo> runs = s.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].status, "failed");
  EXPECT_EQ(runs[1].exit_code, 128 + SIGABRT);
  EXPECT_EQ(s.load(runs[1].id).steps.size(), 1u);
  std::ifstream in(err);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("gcprof: this process aborted (SIGABRT) in thread 'probe-aborter' (tid "),
            std::string::npos) << text;
  EXPECT_NE(text.find("); its native stack:"), std::string::npos) << text;
  EXPECT_NE(text.find("inject_probe"), std::string::npos) << "no frame of the aborting program: " << text;
  std::remove(err.c_str());
}

TEST(Injector, AllocationsMadeByGcprofItselfAreNotRecorded) {
  // The writer thread allocates through SQLite and the STL, and the first
  // event of a thread sets up its buffer; the recursion guard keeps all of it
  // out. The probe is single-threaded, so every row must be its main thread's.
  Recorded r = record("busy");
  ASSERT_EQ(r.exit_code, 0);
  Trace t = onlyRun(r.db);
  ASSERT_GE(t.allocations.size(), 3000u);
  for (const Allocation& a : t.allocations) EXPECT_EQ(t.contextOf(a).thread, t.run.pid) << a.bytes;
}

// The writer is not niced (a loaded machine starved it at nice +10 and a
// SIGTERM'd job's flush lost steps); SCHED_BATCH keeps its wake-ups from
// preempting training threads (bench/history/recording-overhead.md).
TEST(Injector, TheWriterRunsAtTheJobsPriorityAsABatchThread) {
  Recorded r = record("writer_sched");
  EXPECT_EQ(r.exit_code, 0) << "5: wrong nice or policy; 6: no gcprof-writer thread";
}

// The writer's wake-up is no descriptor the job could close and reuse: a job
// that closes the pipes it did not open and opens files in their place must
// find nothing of ours written into them.
TEST(Injector, TheWriterWritesNothingIntoDescriptorsTheJobReused) {
  std::string dir = testing::TempDir() + "gcprof_fds_" + std::to_string(getpid());
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  std::string db = dir + "/trace.db";
  int status = std::system((std::string(GCPROF_BIN) + " record -o " + db + " -- " + PROBE_BIN +
                            " reused_descriptors " + dir + " >/dev/null 2>&1").c_str());
  ASSERT_EQ(WEXITSTATUS(status), 0);
  for (int i = 0; i < 8; ++i) {
    std::string path = dir + "/job_file_" + std::to_string(i);
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) continue;
    EXPECT_EQ(static_cast<long>(in.tellg()), 0L) << path << ": bytes written into the job's file";
  }
  std::system(("rm -rf " + dir).c_str());
}

// Two threads abort at the same moment: the crash handler runs once (one
// report, one flush), the other thread waits, and the process dies of SIGABRT.
TEST(Injector, TwoThreadsAbortingAtOnceGetOneReport) {
  std::string db = testing::TempDir() + "gcprof_probe_two_aborts_" + std::to_string(getpid()) + ".db";
  std::string err = db + ".stderr";
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((db + ext).c_str());
  std::string cmd = std::string(GCPROF_BIN) + " record -o " + db + " -- " + PROBE_BIN + " two_aborts 2>" + err;
  int status = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGABRT);
  std::ifstream in(err);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  size_t reports = 0;
  for (size_t at = text.find("this process aborted"); at != std::string::npos;
       at = text.find("this process aborted", at + 1))
    ++reports;
  EXPECT_EQ(reports, 1u) << text;
  Trace t = onlyRun(db);
  EXPECT_EQ(t.run.status, "interrupted") << "record stores how the job died";
  EXPECT_EQ(t.steps.size(), 1u);
  std::remove(err.c_str());
}
