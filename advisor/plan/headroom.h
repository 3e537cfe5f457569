// The margin a plan keeps below the budget for what the recorded trace cannot
// show: the CUDA caching allocator's rounding and fragmentation, and the
// run-to-run jitter of the peak. Plans are solved against budget - headroom,
// so a verification that lands a little above the prediction still fits the
// budget (without it, 4 of ~15 plans solved to the budget exceeded it by 0.5-8 MiB).
#pragma once

#include <optional>
#include <string>

#include "memory/memory_curve.h"
#include "memory/memory_events.h"
#include "trace.h"

namespace gcprof::advisor {

// The default share of the budget kept free, on top of the measured jitter.
// Host runs: prediction errors of 1-3% were seen on public models. CUDA: the
// caching allocator rounds blocks (512 B, 2 MiB / 20 MiB segments) and
// fragments, none of which the tensor-level trace carries.
constexpr double kHostHeadroom = 0.03;
constexpr double kDeviceHeadroom = 0.05;

struct HeadroomRequest {
  bool given = false;     // --headroom was set: it replaces the default rule
  bool percent = false;
  double fraction = 0;    // of the budget
  Bytes bytes = 0;
  std::string text;
};

struct Headroom {
  Bytes bytes = 0;        // kept free below the budget
  Bytes jitter = 0;       // spread of the per-step peaks from the steady step on
  double fraction = 0;    // the share of the budget in `bytes` (without jitter)
  std::string rule;       // how it was chosen, for people: "3% of the budget + 1.2 MiB jitter"
};

// The spread (max - min) of the peaks of the steps from `first_step` on.
// `recorded`: RecordedEvents(trace.allocations, filter) when the caller has them.
Bytes stepPeakJitter(const Trace& trace, const AllocationFilter& filter, int64_t first_step,
                     const RecordedEvents* recorded = nullptr);

Headroom resolveHeadroom(const HeadroomRequest& request, Bytes budget, Bytes jitter, bool device);

// The least size at or above `b` that formatBytes prints exactly, so that a
// size a message names can be typed back as printed and mean no less
// (306.4 MiB prints "306 MiB": this gives 307 MiB).
Bytes printedCeiling(Bytes b);

// The least budget whose limit (the budget less the headroom the same rule
// keeps at that budget) holds `peak`, rounded up to what formatBytes prints:
// the size to name when a budget is out of reach, so that advise accepts it
// as typed. The headroom grows with the budget, so `peak + headroom at the
// budget asked` is not it. -1 when no budget is (a margin of 100% or more).
Bytes leastBudgetFor(Bytes peak, const HeadroomRequest& request, Bytes jitter, bool device);

}  // namespace gcprof::advisor
