// Per-module numbers of a run (every range of domain Module), averaged over
// the recorded steps: what `gcprof show` prints and the units are built from.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "memory/memory_curve.h"
#include "saturating.h"
#include "trace.h"
#include "units/module_ranges.h"
#include "units/saved_bytes_sweep.h"

namespace gcprof::advisor {

struct ModuleStats {
  std::string name;        // qualified module name ("layers.3.attn")
  int depth = 0;
  double calls = 0;        // forward calls per step
  double backward_calls = 0;  // backward ranges per step (0: backward never marked)
  Ns forward_ns = 0;       // per step, all calls; device time on CUDA where known
  Ns backward_ns = 0;      // per step, union of the backward ranges
  Bytes saved_bytes = 0;   // allocated in its forward, freed in its backward, per step
  Bytes input_bytes = 0;   // per call
  Bytes output_bytes = 0;  // per call
  Ns first_forward = 0;    // start of the first forward range in the run (ordering)
  int steps = 0;           // steps the module's forward appeared in
  // Called at top level (a forward range with no enclosing range): the model,
  // or another root of the job (CLIP's second tower, a GAN's discriminator,
  // a loss module), which the python shim names by its class ("TextTower").
  bool root = false;
};

// Modules in forward order (the order every step agrees on; ties and the
// rest by their first forward start). A run without step markers
// counts as one step. `filter` picks the memory space (primaryFilter default).
std::vector<ModuleStats> moduleStats(const Trace& trace, const AllocationFilter& filter);
std::vector<ModuleStats> moduleStats(const Trace& trace);
// The same from a run's ranges and a sweep of its allocations (all of them,
// by time) made from those ranges: for a reader that does not hold the rows.
std::vector<ModuleStats> moduleStats(const ModuleRanges& ranges, const SavedBytesSweep& saved);

// A range's duration as the profiler reports it: device time when CUPTI
// attributed kernels to it, host wall time otherwise.
inline Ns rangeDuration(const Range& r) {
  return r.device_ns >= 0 ? r.device_ns : std::max<Ns>(0, sat::sub(r.end, r.start));
}

}  // namespace gcprof::advisor
