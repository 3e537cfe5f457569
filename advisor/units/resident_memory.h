// What is live when a steady step's first unit starts its forward, sorted
// by where it came from: the memory no checkpoint can free, in the terms a
// user reasons in (parameters, gradients, optimizer state, the batch). Used
// to explain budgets that no plan reaches.
#pragma once

#include <string>

#include "saturating.h"
#include "memory/memory_curve.h"
#include "units/step_layout.h"
#include "trace.h"

namespace gcprof::advisor {

struct ResidentMemory {
  Bytes before_training = 0;  // born before the first complete step: parameters, buffers
  Bytes gradients = 0;        // born in an earlier step's backward and kept
  Bytes optimizer = 0;        // born after an earlier step's backward: optimizer state
  Bytes this_step = 0;        // born in this step before its first unit: the batch, a stem's activations
  Bytes cached = 0;           // born in an earlier step's forward and kept (caches)
  Bytes total() const {
    return sat::add(sat::add(sat::add(before_training, gradients), sat::add(optimizer, this_step)), cached);
  }
  // "parameters and buffers 45.0 MiB, optimizer state 90.0 MiB, ..." (non-zero parts)
  std::string describe() const;
};

// At the first steady step of `layout` (zeros when it has none).
ResidentMemory residentMemory(const Trace& trace, const AllocationFilter& filter,
                              const RunLayout& layout);

}  // namespace gcprof::advisor
