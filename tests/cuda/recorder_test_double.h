// TEST DOUBLE of the injector's recorder (profiler/inject/recorder.h): the
// CUDA backend's tests link this instead of the real injector, so every event
// the backend reports lands in plain vectors the tests inspect. It mimics the
// recorder's contract where the backend relies on it: allocations take the
// calling thread's current range, frees of unknown addresses are dropped
// (and counted here as unmatched), nowNs() is a clock the test controls.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "recorder.h"

namespace gcprof::inject::test_double {

struct AllocEvent {
  uint64_t addr = 0;
  int64_t bytes = 0;
  int api = 0;
  int device = -1;
  int64_t stream = 0;
  int kind = 0;
  bool force = false;
  Ns time = 0;         // as passed: 0 = "now" for the real recorder
  uint64_t range = 0;  // the calling thread's range when recorded
};

struct FreeEvent {
  uint64_t addr = 0;
  int device = -1;
  Ns time = 0;
};

struct KernelEvent {
  std::string name;
  int device = 0;
  int64_t stream = 0;
  Ns start = 0;
  Ns end = 0;
  int64_t correlation = 0;
  uint64_t range = 0;
};

struct RecorderLog {
  std::vector<AllocEvent> allocs;
  std::vector<FreeEvent> frees;  // matched frees only, as the recorder keeps them
  std::vector<KernelEvent> kernels;
  int64_t unmatched_frees = 0;
  int64_t dropped = 0;
  std::string backend = "host";
  std::set<uint64_t> live;
};

RecorderLog& log();
void reset();                          // empties the log, clock back to 0
void setNow(Ns now);                   // what nowNs() returns
void setCurrentRange(uint64_t range);  // the calling thread's innermost range

}  // namespace gcprof::inject::test_double
