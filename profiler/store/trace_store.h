// A trace file: many runs (the baseline, each verification, each rank) plus
// the plans and verifications made from them. Used by the CLI, the advisor and
// the GUI; the injector writes through run_writer.h instead.
#pragma once

#include <sqlite3.h>

#include <functional>
#include <string>
#include <vector>

#include "schema.h"
#include "trace.h"

namespace gcprof {

struct PlanRecord {
  int64_t id = 0;
  int64_t run = 0;
  Ns created = 0;
  std::string strategy;
  Bytes budget = 0;
  std::string json;  // the gcprof.plan/1 document
};

struct VerificationRecord {
  int64_t id = 0;
  int64_t plan = 0;
  int64_t baseline_run = 0;
  int64_t run = 0;
  std::string verdict;  // PASS | FAIL
  Ns created = 0;
  std::string json;     // the comparison, as `gcprof report --format json` prints it
};

class TraceStore {
 public:
  enum class Mode { ReadOnly, ReadWrite };
  // How long a locked trace is waited for before "locked by another process".
  static constexpr int kReadWaitMs = 10000;
  static constexpr int kWriteWaitMs = 30000;
  // Opens (ReadWrite: creates when missing) and checks the schema. Throws
  // StoreError with the file name and what to do.
  TraceStore(const std::string& path, Mode mode);
  ~TraceStore();
  TraceStore(const TraceStore&) = delete;
  TraceStore& operator=(const TraceStore&) = delete;

  const std::string& path() const { return path_; }
  sqlite3* handle() { return db_; }

  std::vector<RunInfo> runs();
  RunInfo run(int64_t id);     // throws when missing
  int64_t lastRun();           // the training run of the newest job that is not a
                               // verification (a distributed job: its launcher's); 0 when none
  // The run of job `job_root` (its root process's run and its descendants')
  // that trained: the most steps, the newest of equals. A data-prep
  // subprocess, a DataLoader worker or a shell around the job is not it.
  int64_t trainingRun(int64_t job_root, int64_t baseline_run);
  // Rows read so far and rows in all, called every 64k rows while a run is
  // read (the GUI's progress bar); the last call has done == total.
  using LoadProgress = std::function<void(int64_t done, int64_t total)>;
  Trace load(int64_t run, const LoadProgress& progress = {});  // the whole run, sorted by time
  // The run without its allocations (its ranges, steps, scalars and kernels
  // are few): for a reader taking those a piece at a time (allocation_stream.h).
  Trace loadWithoutAllocations(int64_t run);
  int schemaVersion() const { return version_; }

  int64_t createRun(const RunInfo& info);  // returns the new id
  void updateRun(const RunInfo& info);     // status, exit code, end, counters, links
  int64_t maxRunId();
  // Steps recorded so far by the re-runs of `baseline_run` newer than run
  // `after` (a running `verify`'s progress), and their highest step peak.
  struct StepProgress {
    int64_t steps = 0;
    Bytes peak = 0;
  };
  StepProgress rerunProgress(int64_t baseline_run, int64_t after);

  int64_t savePlan(const PlanRecord& plan);
  std::vector<PlanRecord> plans();
  int64_t saveVerification(const VerificationRecord& v);
  std::vector<VerificationRecord> verifications();

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  int version_ = kSchemaVersion;
};

// Wall-clock-free "now" on the clock the recorder uses (CLOCK_MONOTONIC).
Ns monotonicNs();

}  // namespace gcprof
