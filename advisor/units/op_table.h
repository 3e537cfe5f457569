// The aten operators each unit's forward ran (`gcprof record --ops`: user
// ranges "op <overload>" that the python shim opens around every operator
// call, docs/recording.md), numbered per operator within the unit's forward
// window as PyTorch's selective checkpointing numbers them when it applies a
// plan: "aten.mm.default#2" is the third mm of that forward.
//
// Per unit and operator call, over the complete steps:
//   ns         the call's time (median over the steady steps)
//   kept       bytes born in the call and freed in the unit's backward: what
//              autograd keeps of it, and what saving it keeps from dropping
//   lingering  bytes born in the call that outlive it but are freed before
//              the unit's backward (an output the next operator consumes, the
//              unit's output): saving the call holds them from that free
//              until the replay re-makes them (selective_options.h)
//   lingering_unpriced  some of them are freed after the unit's forward, or
//              born after the last bytes autograd keeps of it (the replay
//              stops before re-making them, and the cache holds them through
//              the unit's backward): the chain model does not price saving
//              the call, and no save-list it solves keeps it
//   mutated_later  an in-place call after it likely changes its output
//              (the first in-place call after it, over calls that make no
//              memory: relu_ after addmm and its view, add_ after a batch
//              norm); PyTorch's selective checkpointing refuses to replay a
//              cached output changed after it was cached
#pragma once

#include <string>
#include <vector>

#include "memory/memory_curve.h"
#include "units/step_layout.h"
#include "trace.h"

namespace gcprof::advisor {

struct OpCall {
  std::string key;  // "aten.mm.default#2"
  Ns start = 0, end = 0;
};

struct UnitOp {
  std::string key;
  Ns ns = 0;
  Bytes kept = 0;
  Bytes lingering = 0;
  bool lingering_unpriced = false;
  bool mutated_later = false;
};

// Whether "aten.relu_.default#0" names an in-place operator.
bool isInPlaceCall(const std::string& key);

// The operator ranges of a trace, by start time.
class OpIndex {
 public:
  explicit OpIndex(const Trace& trace);
  bool empty() const { return ops_.empty(); }
  // The calls that start in [from, to], numbered per operator from 0.
  std::vector<OpCall> within(Ns from, Ns to) const;
  // How many calls start in [from, to].
  size_t count(Ns from, Ns to) const;
  // What one operator call of a selective checkpoint's forward costs in
  // PyTorch's dispatch, its forward and its recomputation together, as the
  // shim measured it in the job (scalar `selective_ns_per_op`,
  // profiler/python/gcprof/dispatch_costs.py); 0 when not measured.
  Ns selectiveNsPerOp() const { return selective_ns_per_op_; }

 private:
  std::vector<const Range*> ops_;
  Ns selective_ns_per_op_ = 0;
};

// The calls of `calls` that a save-list names, in their order.
std::vector<OpCall> savedCalls(const std::vector<OpCall>& calls, const std::vector<std::string>& save);

// The call of `calls` (sorted by start, not overlapping) that `t` falls
// inside, or null: memory born there belongs to that call.
const OpCall* callAt(const std::vector<OpCall>& calls, Ns t);

// What became of memory born inside `call` in unit `unit`'s forward (op
// table's terms above): freed within the call, kept to the unit's backward,
// lingering (freed after the call, before that backward), or other (never
// freed, freed after the backward or outside the steps).
enum class OutputFate { Workspace, Kept, Lingering, Other };
class StepRegions;
OutputFate outputFate(const Allocation& a, const OpCall& call, const StepRegions& reg, int unit);

// Whether a range is an operator range of `record --ops`.
bool isOpRange(const Range& r);

// Per unit (layout order), its operator calls in forward order; empty lists
// when the trace has no operator ranges.
std::vector<std::vector<UnitOp>> unitOps(const Trace& trace, const AllocationFilter& filter,
                                         const RunLayout& layout);

}  // namespace gcprof::advisor
