// The moment a simulated plan peaks, in the words of the recorded run: which
// unit, its forward, its backward or its recomputation, and which step. The
// replay simulator's peak is the truth advise reports; the unit-chain model
// is an envelope over steps and regions and can name another moment for the
// same number (closing4: "recomputing layer1.0" for a peak in layer2.0's
// backward).
#pragma once

#include <string>
#include <vector>

#include "chain/chain_peak.h"
#include "units/step_layout.h"
#include "simulate/replay_simulator.h"

namespace gcprof::advisor {

struct PeakMoment {
  enum class Kind {
    OutsideSteps,    // set-up, parameters, between steps
    IncompleteStep,  // a step whose units were not all recorded
    BeforeUnits,     // in a step, before the first unit's forward
    Forward,         // in unit's forward
    AfterForward,    // after unit's forward (the last one's: before the first backward)
    Backward,        // in unit's backward
    AfterBackward,   // after unit's backward, before the next one's
    AfterUnits,      // after the first unit's backward (optimizer step)
    Recompute,       // replaying unit's forward for segment [first..last]
  };
  Kind kind = Kind::OutsideSteps;
  int64_t step = -1;  // the recorded step index; -1 outside steps or without step markers
  int unit = -1;
  int first = -1, last = -1;  // Recompute: the segment

  // For "peak ... set <text>": "in the backward of layers.1, step 3".
  std::string describe(const std::vector<std::string>& unit_names) const;
};

// Where `sim` (a simulation of `plan` over `layout`) peaks.
PeakMoment peakMoment(const RunLayout& layout, const Segments& plan, const Simulation& sim);

}  // namespace gcprof::advisor
