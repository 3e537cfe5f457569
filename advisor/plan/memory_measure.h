// Which memory a budget is about. On a CUDA run what runs out is the caching
// allocator's *reserved* memory (its segments: tensors plus rounding, pool
// and fragmentation slack), so budgets count that by default, predicted by
// replaying the tensor events through a model of the allocator
// (simulate/caching_allocator.h) with the settings the job ran with. Host
// runs have no such allocator: their budgets count allocated bytes.
#pragma once

#include <optional>
#include <string>

#include "memory/memory_curve.h"
#include "simulate/allocator_settings.h"

namespace gcprof::advisor {

enum class MemoryMeasure { Allocated, Reserved };

std::string toString(MemoryMeasure m);
// "reserved" | "allocated"; throws AdviceError otherwise.
MemoryMeasure parseMemoryMeasure(const std::string& text);

struct MemoryChoice {
  MemoryMeasure measure = MemoryMeasure::Allocated;
  bool reserved_modelled = false;  // tensor events on a native caching allocator: replayable
  AllocatorSettings allocator;     // the run's, when reserved_modelled
  std::string why;                 // one line for the user: which memory and why
};

// The memory `advise` budgets for a run: `requested` (--memory) when the run
// allows it, else reserved on CUDA runs whose allocator the model covers and
// allocated otherwise. Throws AdviceError when --memory reserved cannot be
// predicted for this run, saying why.
MemoryChoice chooseMemory(const Trace& trace, const AllocationFilter& filter,
                          std::optional<MemoryMeasure> requested);

}  // namespace gcprof::advisor
