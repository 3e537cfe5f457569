// The in-memory form of one recorded run: what the trace store reads and what
// the advisor, the reports and the GUI work on. Times are nanoseconds on the
// recording host's CLOCK_MONOTONIC; sizes are bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "allocation_contexts.h"
#include "units.h"

namespace gcprof {

enum class Phase : int { User = 0, Forward = 1, Backward = 2 };

// Where a range came from; `Module` ranges carry a module's qualified name.
// (2 is not used: steps live in their own table.)
enum class RangeDomain : int { User = 0, Module = 1, Nvtx = 3 };

struct Range {
  int64_t id = 0;
  std::string name;
  RangeDomain domain = RangeDomain::User;
  Phase phase = Phase::User;
  int64_t thread = 0;
  int depth = 0;           // module depth from the qualified name ("layers.3" = 2)
  int64_t parent = 0;      // enclosing range id on the same thread, 0 = none
  Ns start = 0;
  Ns end = 0;              // == start when never closed
  int64_t step = -1;       // step index active at start, -1 = outside steps
  Ns device_ns = -1;       // device time of kernels launched inside (CUDA), -1 = host only
  Bytes input_bytes = 0;   // tensors passed into the module call (python shim)
  Bytes output_bytes = 0;  // tensors it returned
};

// Ten million of these are a big run: 56 bytes a row. The fields whose
// values are bounded are narrow: a range id and a step count the run's
// ranges and steps, a device is a GPU ordinal, api and kind are the small
// enums below. The loaders refuse a stored value that does not fit
// (setNarrowFields). The stream and thread, whole 64-bit values, are in the
// trace's table of contexts (Trace::contextOf): a run has few of them.
// Device, api and kind stay here: every memory filter reads them per row.
struct Allocation {
  int64_t id = 0;          // allocations.id: unique within its run, in the order written
  uint64_t addr = 0;
  Bytes bytes = 0;
  Ns alloc = 0;
  Ns free = -1;            // -1 = still live when the run ended
  int32_t range = 0;       // innermost open range at allocation, 0 = none
  int32_t step = -1;
  uint32_t context = 0;    // stream and thread: Trace::contexts (0 = stream 0, thread 0)
  int16_t device = -1;     // -1 = host memory
  uint8_t api = 0;         // AllocApi
  uint8_t kind = 0;        // AllocKind
  bool freed() const { return free >= 0; }
};
static_assert(sizeof(Allocation) == 56, "an Allocation is kept per recorded block: keep it packed");

// A block as the recorder holds and writes it: the row with its stream and
// thread themselves. The recorder keeps no table of contexts (its memory must
// not grow with every thread a job ever started); `context` is unused here.
struct RecordedAllocation : Allocation {
  int64_t stream = 0;
  int64_t thread = 0;
};

// Sets a stored row's range, step, device, api and kind on `a`; false
// (and `a` unchanged) when one does not fit its field: the row is damaged,
// no recorder writes such.
inline bool setNarrowFields(Allocation& a, int64_t range, int64_t step, int64_t device, int64_t api,
                            int64_t kind) {
  auto fits32 = [](int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; };
  if (!(fits32(range) && fits32(step) && device >= INT16_MIN && device <= INT16_MAX && api >= 0 &&
        api <= UINT8_MAX && kind >= 0 && kind <= UINT8_MAX))
    return false;
  a.range = static_cast<int32_t>(range);
  a.step = static_cast<int32_t>(step);
  a.device = static_cast<int16_t>(device);
  a.api = static_cast<uint8_t>(api);
  a.kind = static_cast<uint8_t>(kind);
  return true;
}

enum class AllocApi : int {
  Malloc = 0, Calloc = 1, Realloc = 2, PosixMemalign = 3, AlignedAlloc = 4,
  Memalign = 5, Valloc = 6, Pvalloc = 7,
  Preexisting = 8,  // in malloc's heap at `gcprof attach` (profiler/inject/heap_walk.h)
  CudaMalloc = 20, CudaMallocAsync = 21, CuMemAlloc = 22, CuMemCreate = 23,
  CuMemMap = 24,
  C10CachingAllocator = 25,  // PyTorch's native CUDA caching allocator, through its trace tracker
};

// Tensor-level allocations vs allocator segments (CUDA caching allocator).
enum class AllocKind : int { Tensor = 0, Segment = 1 };

struct Step {
  int64_t index = 0;
  Ns start = 0;
  Ns end = 0;
  Bytes peak = 0;  // live bytes high-water mark the recorder saw in the step (progress only)
};

struct Scalar {
  int64_t step = -1;
  std::string name;
  double value = 0;
};

struct Kernel {
  int64_t id = 0;
  std::string name;
  int device = 0;
  int64_t stream = 0;
  Ns start = 0;            // mapped to the host clock
  Ns end = 0;
  int64_t correlation = 0;
  int64_t range = 0;       // range active on the launching thread
};

struct RunInfo {
  int64_t id = 0;
  std::string command;     // JSON array of argv
  std::string cwd;
  std::string env;         // JSON object of the environment that matters for re-runs
  std::string name;
  std::string backend;     // host | cuda
  std::string runtime;     // python (the shim marked modules) | native (NVTX / C API)
  std::string status;      // running | complete | failed | interrupted
  int exit_code = 0;
  int64_t pid = 0;
  int rank = -1;            // RANK of a distributed job (torchrun sets it), -1 otherwise
  int local_rank = -1;      // LOCAL_RANK: the rank on its node
  int world_size = -1;      // WORLD_SIZE
  int64_t job_run = 0;      // the run of the process `gcprof record` started (the launcher) when
                            // this one is a descendant of it; 0 for that process itself
  Ns started = 0;
  Ns ended = 0;
  Bytes min_bytes = 0;
  int64_t small_allocs = 0;   // allocations under min_bytes: only counted
  Bytes small_bytes = 0;
  int64_t dropped_events = 0; // events the recorder could not keep (buffers full, CUPTI drops)
  int64_t unmatched_frees = 0;// frees of memory allocated before recording began
  int64_t baseline_run = 0;   // for verification runs: the run they re-ran
  int64_t plan_id = 0;        // for verification runs: the plan applied
};

struct Trace {
  RunInfo run;
  std::vector<Range> ranges;           // by start time
  std::vector<Allocation> allocations; // by allocation time
  AllocationContexts contexts;         // the allocations' streams and threads
  std::vector<Step> steps;             // by index
  std::vector<Scalar> scalars;
  std::vector<Kernel> kernels;

  // The stream and thread `a` was allocated on.
  const AllocationContext& contextOf(const Allocation& a) const { return contexts[a.context]; }
  // `a` with its stream and thread, as a recorder writes it.
  RecordedAllocation recorded(const Allocation& a) const {
    RecordedAllocation r;
    static_cast<Allocation&>(r) = a;
    r.context = 0;
    r.stream = contextOf(a).stream;
    r.thread = contextOf(a).thread;
    return r;
  }
};

}  // namespace gcprof
