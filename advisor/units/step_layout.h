// Where each unit's forward and backward lie in each recorded step. A step
// whose units are all present and in chain order (forward 0..N-1, then
// backward N-1..0) is "complete": the model and the simulator work on those
// and carry every other moment of the run exactly as recorded. A step of
// several forward/backward passes (gradient accumulation) whose passes are
// each in chain order becomes one layout per pass (micro-steps, same index).
#pragma once

#include <string>
#include <vector>

#include "trace.h"

namespace gcprof::advisor {

struct UnitWindow {
  Ns fwd_start = 0, fwd_end = 0;  // span of the unit's forward range(s) in the step
  Ns bwd_start = 0, bwd_end = 0;  // span of its backward range(s)
  Ns forward_ns = 0;              // device time when known, else host duration
  bool device_time = false;
  // Tensors passed into / returned by the unit's forward call(s), logical
  // bytes summed over the calls (python shim; 0 when not recorded).
  Bytes input_bytes = 0, output_bytes = 0;
  // The unit did not run in this step (LayerDrop): its windows are empty,
  // placed where it would have run (stepLayouts).
  bool skipped = false;
};

struct StepLayout {
  int64_t step = -1;   // -1: a run without step markers, taken as one step
  Ns start = 0, end = 0;
  std::vector<UnitWindow> units;
  bool complete = false;
  std::string problem;  // why the step is not complete
};

struct RunLayout {
  std::vector<StepLayout> steps;  // by time; micro-steps of one step share its index
  std::vector<size_t> steady;     // indexes of the steady-state steps (see stepLayouts)
  size_t complete = 0;
};

// The steady-state rule: every complete step except the first complete one
// when there are two or more (the first step warms up the allocator and
// creates the optimizer state lazily), else the single complete step.
// Times are the median over the steady steps.
RunLayout stepLayouts(const Trace& trace, const std::vector<std::string>& units);

// First and last event time of a run (allocations and ranges); {0, 0} when empty.
std::pair<Ns, Ns> runSpan(const Trace& t);

}  // namespace gcprof::advisor
