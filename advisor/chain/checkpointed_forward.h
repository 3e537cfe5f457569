// When a checkpointed unit's forward frees what autograd would have kept.
//
// In a checkpointed forward (PyTorch's non-reentrant checkpoint, selective
// or not) the saved-tensor hooks store a handle, not the tensor: an output
// that the recorded (plain) forward kept for the backward is freed as soon
// as nothing else refers to it, not when the unit's forward ends. The trace
// does not record that last use, but it records each module call's output
// bytes (`output_bytes`, python shim): when a sub-module of the unit
// returns, what it made and did not return is no longer referenced, except
// through autograd (and module state; see below). So a dropped allocation is
// freed when the innermost sub-module that made it and did not return it
// returns; one every enclosing sub-module returned lives to the unit's
// forward end, as before.
//
// A module's outputs are taken as its latest-born allocations still alive
// when it returns, until they cover its output bytes: outputs are made last,
// and covering more than the outputs only frees later (the prediction stays
// on the high side). Modules without output bytes (the C++ runtime, old
// traces) free nothing early. The one case that frees too early is a module
// that stores a tensor it made in its own state and returns something else
// (a cache) while autograd also keeps it: rare in training, where such state
// outlives the backward and is not dropped at all.
//
// Measured on HF GPT-2 with torchtitan's rule: the forward of the last
// checkpointed block was predicted 10.5 MiB above the run (all the block's
// activations held to its end); with this rule the plan's peak is its
// replay's, as measured (bench/RESULTS.md, "Selective checkpoints").
#pragma once

#include <cstdint>
#include <vector>

#include "memory/memory_curve.h"
#include "memory/memory_events.h"
#include "units/op_table.h"
#include "units/step_layout.h"
#include "trace.h"

namespace gcprof::advisor {

class CheckpointedForward {
 public:
  CheckpointedForward(const Trace& trace, const AllocationFilter& filter);

  // When `a`, born in the forward window [unit_start, unit_end] of a
  // checkpointed unit and kept by autograd in the recording, is freed by the
  // checkpointed forward: the end of the innermost sub-module range (inside
  // the window, on a's thread) that made it and did not return it;
  // `unit_end` when there is none.
  Ns freeTime(const Allocation& a, Ns unit_start, Ns unit_end) const;

  // The sub-modules that start inside one unit's forward window: found once
  // for every question about the allocations born in it, so that each
  // searches among them only instead of all the run's modules.
  struct Window {
    Ns start = 0, end = 0;
    size_t first = 0, last = 0;  // spans_[first, last)
  };
  Window window(Ns unit_start, Ns unit_end) const;
  // freeTime(a, w.start, w.end).
  Ns freeTime(const Allocation& a, const Window& w) const;

 private:
  void findOutputs(const Trace& trace, const AllocationFilter& filter);

  const Trace* trace_;                 // for an allocation's thread (Trace::contextOf)
  std::vector<const Range*> modules_;  // module forward ranges with output bytes, by start
  // Their times and threads, searched and walked without reading each range.
  struct Span {
    Ns start, end;
    int64_t thread;
  };
  std::vector<Span> spans_;
  // freeTime among spans_[begin, end): those around a's birth.
  Ns freedAmong(const Allocation& a, std::vector<Span>::const_iterator begin, std::vector<Span>::const_iterator end,
                Ns unit_start, Ns unit_end) const;
  // Each module's outputs (parallel to modules_), sorted by address: found
  // once when made, so that one CheckpointedForward, read only, serves every
  // plan simulated at once (each simulation made its own and re-found them).
  std::vector<std::vector<const Allocation*>> outputs_;
};

class InPlaceOutputs;
class StepRegions;

// The highest live bytes during unit k's forward in `step` when unit k alone
// is checkpointed, `saved` its save-list's calls (empty: the whole unit),
// as the replay simulator counts them: the recorded level (`level`, over
// all of the trace's events, RecordedEvents) less the bytes its
// checkpointed forward frees early, plus the saved outputs autograd does
// not keep, which the cache holds past their recorded frees. -1 when it
// changes nothing (the recorded peak holds).
Bytes checkpointedForwardPeak(const Trace& trace, const AllocationFilter& filter, const CheckpointedForward& forward,
                              const InPlaceOutputs& inplace, LevelBefore& level,
                              const StepLayout& step, const StepRegions& reg, int k,
                              const std::vector<OpCall>& saved);

}  // namespace gcprof::advisor
