// CUPTI timestamps -> the host CLOCK_MONOTONIC nanoseconds that every other
// event in the trace uses (recorder.h nowNs), so one timeline holds host
// allocations, ranges and kernels.
//
// Where CUPTI accepts a timestamp callback (CUDA 12.x and newer) we hand it
// nowNs and its records are already on our clock: the mapping is the
// identity. Older CUPTIs stamp with CLOCK_REALTIME on Linux; we then map
// linearly through (cupti, host) pairs sampled back to back: an offset from
// the first pair and, once two pairs are a second apart, the drift between
// them (NTP slews CLOCK_REALTIME).
#pragma once

#include <cstdint>

#include "own_lock.h"

namespace gcprof::inject::cuda {

class ClockMapping {
 public:
  using Ns = int64_t;

  void useHostClock();  // CUPTI already reports host CLOCK_MONOTONIC
  bool usesHostClock() const { return host_clock_; }

  // One pair: `host` read right around `cupti` (the midpoint of two reads).
  void addSample(uint64_t cupti, Ns host);

  // Host time of a CUPTI timestamp; 0 stays 0 (CUPTI's "unknown").
  Ns toHost(uint64_t cupti) const;

 private:
  bool host_clock_ = false;
  mutable OwnLock lock_;
  bool have_first_ = false;
  uint64_t first_cupti_ = 0;
  Ns first_host_ = 0;
  double slope_ = 1.0;  // host ns per CUPTI ns
};

}  // namespace gcprof::inject::cuda
