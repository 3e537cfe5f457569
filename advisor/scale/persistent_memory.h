// What is live when a steady step begins -- parameters, gradients, optimizer
// state, library workspaces, and tensors a job keeps from one step to the
// next (its last logits, a prefetched batch) -- and how it grows with size.
//
// A line through two runs is a poor model of it: the workspaces of the
// libraries (allocator arenas, thread pools' buffers) vary by a MiB or two
// from run to run without following the batch, and a line through two small
// batches turns that into tens of MiB at a large one. So it is split, by
// matching the allocations live at that moment across the runs:
//   constant    allocations of the same byte size in every run (parameters,
//               gradients, optimizer state);
//   per size    allocations whose byte size is in proportion to the run's size
//               (batch-shaped tensors kept across steps);
//   workspace   the rest, as recorded in the largest run.
#pragma once

#include <vector>

#include "memory/memory_curve.h"
#include "trace.h"

namespace gcprof::advisor {

struct PersistentSample {
  double size = 0;
  Bytes persistent = 0;            // UnitChain::persistent of the run
  std::vector<Bytes> allocations;  // byte sizes of the allocations live then
};

struct PersistentModel {
  Bytes constant = 0;
  double per_size = 0;  // bytes per unit of size
  Bytes workspace = 0;
  Bytes at(double size) const;
};

// The byte sizes of the allocations `filter` accepts that are live when step
// `step` begins (empty when the trace has no such step).
std::vector<Bytes> liveAllocationsAtStep(const Trace& trace, const AllocationFilter& filter, int64_t step);

// Needs >= 2 samples with allocations; sorted or not.
PersistentModel persistentModel(std::vector<PersistentSample> samples);

}  // namespace gcprof::advisor
