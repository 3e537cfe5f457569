// The tensor a unit returns when its forward ends in an in-place module
// (ResNet's Bottleneck: `out += identity; relu_(out)`). That module saves its
// own result, so the trace shows the unit's output freed early in the unit's
// backward, like a saved tensor; checkpointing the unit does not free it,
// because the next unit (or its checkpoint) holds it as its input (without
// this, ResNet-50 plans measured exactly those outputs over the prediction).
//
// Which allocation it is: the python shim leaves, inside every in-place call's
// forward range, a user range "inplace output 0x<address>" naming the storage
// it returned (module_ranges.py), so the allocation is found by address. Runs
// recorded before that mark (or by runtimes without it) fall back to a guess
// by size: of the tensors the unit made with the in-place module's input size
// and freed in its own backward, the one freed first.
//
// A unit can also end in an operation that is not a module and saves its own
// result: `F.relu(x, inplace=True)` in a U-Net block's forward, or any
// result-saving op (relu, sigmoid, tanh, exp). The trace then shows the same
// thing, the unit's output freed in the unit's own backward, but nothing marks
// it. Its consumers still hold it when the unit is checkpointed (a U-Net's
// max-pool saves it, its skip connection carries it to the up path), so the
// checkpoint does not drop it (the small U-Net of bench/robustness measured
// exactly its three down blocks' outputs, 7.88 MiB, over the prediction).
// For a unit not ending in a recorded in-place module, the output is taken
// from the unit's recorded output bytes: the latest-born tensor made in its
// forward, alive when the forward ends, of exactly that size (outputs are
// made last; a saved tensor made after the output, BatchNorm's batch
// statistics, is smaller). Taking a saved tensor of the same size for the
// output only keeps it (the prediction errs high); units without output
// bytes (the C++ runtime, NVTX ranges) have none.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "memory/memory_curve.h"
#include "units/step_layout.h"
#include "units/step_regions.h"
#include "trace.h"

namespace gcprof::advisor {

// The address in a range name "inplace output 0x<hex>"; 0 when `name` is not one.
uint64_t inPlaceOutputAddress(const std::string& name);

class InPlaceOutputs {
 public:
  InPlaceOutputs(const Trace& trace, const AllocationFilter& filter);

  // The allocation that unit `k` of `step` returns when it was made in the
  // unit's forward: by the in-place module call that ends the forward, or
  // else by the unit's output bytes (see above); nullptr when none is found.
  // `exact` (optional) tells whether a recorded address named it. Callers
  // keep it only where the trace frees it in the unit's own backward.
  const Allocation* output(const StepLayout& step, const StepRegions& regions, int k,
                           bool* exact = nullptr) const;

 private:
  const Range* lastCall(const UnitWindow& unit) const;
  const Allocation* atAddress(uint64_t address, const Range& call) const;
  const Allocation* bySize(const StepRegions& regions, int k, const UnitWindow& unit,
                           Bytes bytes) const;
  const Allocation* bySizeOfOutput(const UnitWindow& unit) const;

  const Trace& trace_;
  AllocationFilter filter_;
  std::unordered_set<std::string> modules_;          // recorded "inplace <module>"
  std::vector<const Range*> forwards_;               // module forward ranges by start
  // In-place call's range id -> the allocation its marked output address
  // names (nullptr when none was live there).
  std::unordered_map<int64_t, const Allocation*> marked_;
};

}  // namespace gcprof::advisor
