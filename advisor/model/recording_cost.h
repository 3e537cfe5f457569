// The recording's own share of recorded forward times. A unit's forward range
// includes the python shim's hooks of every module called inside it; its
// recomputation in a verification run is not recorded inside and does not
// pay them, so recompute predicted from raw times came out 2-3x too high on
// small models. The shim measures its hook time per module call
// and records it per step as the scalar `hook_ns_per_call`.
#pragma once

#include "model/step_layout.h"
#include "trace.h"

namespace gcprof::advisor {

// The median over the run's steps of `hook_ns_per_call`; 0 when not recorded
// (LibTorch programs: their C API ranges cost nanoseconds).
Ns hookCostPerCall(const Trace& trace);

// Subtracts `per_call` for every module forward range that starts inside a
// unit's forward window (its own included) from that unit's host forward time,
// in every step. Device times are left alone: hooks run on the host. A unit
// keeps at least a tenth of its recorded time.
void subtractRecordingCost(RunLayout& layout, const Trace& trace, Ns per_call);

// The same for `record --ops`: the operator mode's own time per call (scalar
// `op_hook_ns_per_call`, median over steps; 0 when not recorded), subtracted
// for every operator range inside a unit's forward window.
Ns opCostPerCall(const Trace& trace);
void subtractOperatorCost(RunLayout& layout, const Trace& trace, Ns per_call);

}  // namespace gcprof::advisor
