// The recording's own share of recorded forward times. A unit's forward range
// includes the python shim's hooks of every module called inside it; its
// recomputation in a verification run is not recorded inside and does not
// pay them, so recompute predicted from raw times came out 2-3x too high on
// small models. The shim measures its hook time per module call
// and records it per step as the scalar `hook_ns_per_call`.
#pragma once

#include "units/step_layout.h"
#include "trace.h"

namespace gcprof::advisor {

// What the recording cost per call, each the median over the run's steps and
// 0 when not recorded: the shim's hooks per module call (`hook_ns_per_call`;
// LibTorch programs' C API ranges cost nanoseconds) and `record --ops`'s
// time per operator call: the mode's own (`op_hook_ns_per_call`, each step)
// and PyTorch's dispatch into it (`op_dispatch_ns_per_call`, measured once,
// profiler/python/gcprof/dispatch_costs.py).
struct RecordingCost {
  Ns hook_ns_per_call = 0;
  Ns op_ns_per_call = 0;
  // Not the recording's: what PyTorch's selective checkpointing costs per
  // operator call, as the shim measured it in the job (`selective_ns_per_op`;
  // added to each save-list's recompute, OpIndex::selectiveNsPerOp), shown
  // beside the others.
  Ns selective_ns_per_op = 0;
};
RecordingCost recordingCost(const Trace& trace);

// Subtracts, from each unit's host forward time in every step, the hook cost
// for every module forward range and the operator cost for every operator
// range that starts inside the unit's forward window (its own included).
// Device times are left alone: hooks run on the host. A unit keeps at least
// a tenth of its recorded time.
void subtractRecordingCost(RunLayout& layout, const Trace& trace, const RecordingCost& cost);

}  // namespace gcprof::advisor
