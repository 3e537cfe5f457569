// Turns time-ordered events into trace rows: pairs each allocation with its
// free, each range start with its end, tracks steps and recording windows,
// and decides when this process gets a run of its own. Single-threaded (the
// writer thread); unit-tested directly on hand-made event sequences.
//
// A block still live kLiveWriteAgeNs after its allocation (by the clock) is
// written at the round's commit with free_ns -1, its free time written at
// its free (RunWriter::setFree): a job killed by SIGKILL, the OOM killer,
// abort or os._exit keeps what was live when it died (the memory users
// profile it for), not only what it freed.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "event.h"
#include "live_blocks.h"
#include "run_writer.h"
#include "trace.h"

namespace gcprof::inject {

struct Stamped {
  Event e;
  int64_t tid;
};

struct Counters {
  int64_t small_allocs = 0;
  int64_t small_bytes = 0;
  int64_t dropped = 0;
};

class EventProcessor {
 public:
  // `root`: the process `gcprof record` started. It always gets a run; any
  // other process (a shell, a launcher, a DataLoader worker that exec'd) gets
  // one only when it marks a range or a step, i.e. when it is a training process.
  EventProcessor(const std::string& db, bool root);

  using It = std::vector<Stamped>::iterator;
  void process(It begin, It end);  // events in time order
  // Writes the blocks live for longer than kLiveWriteAgeNs at `now` (the
  // clock, not the last event: an idle job's blocks must reach the trace
  // before it is killed) and ends the current transaction.
  void commit(Ns now);
  static constexpr Ns kLiveWriteAgeNs = 50000000;
  // Closes what is open, writes what is live, sets the run's final status.
  void finish(const char* status, int exit_code, const Counters& c, const char* backend,
              const char* runtime);

  // The process execs: its image's open ranges, step and live blocks end
  // now and everything is written; the root's run goes on in the new image
  // (which numbers its ranges on after these), another process's run ends.
  void endImage(const Counters& c, const char* backend, const char* runtime);

  int64_t run() const { return writer_ ? writer_->run() : 0; }

 private:
  void ensureRun();
  void onAlloc(const Stamped& s);
  void onFree(const Stamped& s);
  void onRangeStart(const Stamped& s);
  void onRangeEnd(const Stamped& s);
  void keep(const gcprof::RecordedAllocation& a);
  void writeLongLived(Ns now);
  // Writes open ranges and the open step as ending at `end`, and every live
  // block with free time `free_live` (-1: live when the run ended).
  void closeAll(Ns end, Ns free_live);
  bool inSomeWindow(Ns alloc, Ns free) const;

  // Opened with the run: a process that never gets one (a shell) never
  // touches the trace file.
  std::unique_ptr<gcprof::RunWriter> writer_;
  std::string db_;
  bool root_;
  // Live blocks; Allocation::id is the row once written while live, else 0.
  LiveBlocks live_;
  // (key, alloc time) of live blocks not yet written, oldest first.
  std::deque<std::pair<uint64_t, Ns>> unwritten_;
  std::unordered_map<uint64_t, gcprof::Range> open_ranges_;
  std::vector<gcprof::RecordedAllocation> pending_;  // finished before this process had a run
  std::vector<std::pair<Ns, Ns>> windows_;   // [open, close); close = INT64_MAX while open
  // Live bytes as allocations come and go, for each step's high-water mark
  // (what `verify` shows while the job runs); device memory when there is any.
  void track(const gcprof::RecordedAllocation& a, int sign);
  gcprof::Bytes live_bytes_[2] = {0, 0}, step_peak_[2] = {0, 0};  // [host, device]
  bool saw_device_ = false;
  // Step starts (time, step), oldest first: a record delivered late (CUPTI
  // hands MEMORY2 and kernel records over in buffers, after later steps
  // began) belongs to the step its timestamp falls in, not the current one.
  std::vector<std::pair<Ns, int64_t>> step_starts_;
  static constexpr size_t kKeptStepStarts = 4096;
  void noteStepStart(Ns time, int64_t step);
  int64_t stepAt(Ns time) const;
  int64_t step_ = -1;
  Ns step_start_ = 0;
  bool in_step_ = false;
  Ns last_time_ = 0;
  int64_t unmatched_frees_ = 0;
  int64_t dropped_pending_ = 0;
};

}  // namespace gcprof::inject
