// Turns time-ordered events into trace rows: pairs each allocation with its
// free, each range start with its end, tracks steps and recording windows,
// and decides when this process gets a run of its own. Single-threaded (the
// writer thread); unit-tested directly on hand-made event sequences.
//
// A block still live kLiveWriteAgeNs after its allocation is written at the
// round's commit with free_ns -1 and its free time filled in later: a job killed by SIGKILL, the
// OOM killer, abort or os._exit keeps what was live when it died (the
// memory users profile it for), not only what it freed.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "event.h"
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
  // Writes the blocks live for longer than kLiveWriteAgeNs and ends the
  // current transaction.
  void commit();
  static constexpr Ns kLiveWriteAgeNs = 50000000;
  // Closes what is open, writes what is live, sets the run's final status.
  void finish(const char* status, int exit_code, const Counters& c, const char* backend,
              const char* runtime);

  int64_t run() const { return writer_ ? writer_->run() : 0; }

 private:
  void ensureRun();
  void onAlloc(const Stamped& s);
  void onFree(const Stamped& s);
  void onRangeStart(const Stamped& s);
  void onRangeEnd(const Stamped& s);
  void keep(const gcprof::Allocation& a);
  void writeLongLived();
  bool inSomeWindow(Ns alloc, Ns free) const;

  // Opened with the run: a process that never gets one (a shell) never
  // touches the trace file.
  std::unique_ptr<gcprof::RunWriter> writer_;
  std::string db_;
  bool root_;
  // Live blocks; Allocation::id is the row once written while live, else 0.
  std::unordered_map<uint64_t, gcprof::Allocation> live_;
  // (key, alloc time) of live blocks not yet written, oldest first.
  std::deque<std::pair<uint64_t, Ns>> unwritten_;
  std::unordered_map<uint64_t, gcprof::Range> open_ranges_;
  std::vector<gcprof::Allocation> pending_;  // finished before this process had a run
  std::vector<std::pair<Ns, Ns>> windows_;   // [open, close); close = INT64_MAX while open
  // Live bytes as allocations come and go, for each step's high-water mark
  // (what `verify` shows while the job runs); device memory when there is any.
  void track(const gcprof::Allocation& a, int sign);
  gcprof::Bytes live_bytes_[2] = {0, 0}, step_peak_[2] = {0, 0};  // [host, device]
  bool saw_device_ = false;
  int64_t step_ = -1;
  Ns step_start_ = 0;
  bool in_step_ = false;
  Ns last_time_ = 0;
  int64_t unmatched_frees_ = 0;
  int64_t dropped_pending_ = 0;
};

}  // namespace gcprof::inject
