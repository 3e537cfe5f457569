// The tensor a unit returns when its forward ends in an in-place module
// (ResNet's Bottleneck: `out += identity; relu_(out)`). That module saves its
// own result, so the trace shows the unit's output freed early in the unit's
// backward, like a saved tensor; checkpointing the unit does not free it,
// because the next unit (or its checkpoint) holds it as its input (issue 15:
// ResNet-50 plans measured exactly those outputs over the prediction).
//
// Which allocation it is: the python shim leaves, inside every in-place call's
// forward range, a user range "inplace output 0x<address>" naming the storage
// it returned (module_ranges.py), so the allocation is found by address. Runs
// recorded before that mark (or by runtimes without it) fall back to a guess
// by size: of the tensors the unit made with the in-place module's input size
// and freed in its own backward, the one freed first.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "model/memory_curve.h"
#include "model/step_layout.h"
#include "model/step_regions.h"
#include "trace.h"

namespace gcprof::advisor {

// The address in a range name "inplace output 0x<hex>"; 0 when `name` is not one.
uint64_t inPlaceOutputAddress(const std::string& name);

class InPlaceOutputs {
 public:
  InPlaceOutputs(const Trace& trace, const AllocationFilter& filter);

  // The allocation that unit `k` of `step` returns when its forward ends in an
  // in-place module call and that allocation was made in its forward; nullptr
  // otherwise. `exact` (optional) tells whether the recorded address named it.
  const Allocation* output(const StepLayout& step, const StepRegions& regions, int k,
                           bool* exact = nullptr) const;

 private:
  const Range* lastCall(const UnitWindow& unit) const;
  const Allocation* atAddress(uint64_t address, const Range& call) const;
  const Allocation* bySize(const StepRegions& regions, int k, const UnitWindow& unit,
                           Bytes bytes) const;

  const Trace& trace_;
  AllocationFilter filter_;
  std::unordered_set<std::string> modules_;          // recorded "inplace <module>"
  std::vector<const Range*> forwards_;               // module forward ranges by start
  // In-place call's range id -> the allocation its marked output address
  // names (nullptr when none was live there).
  std::unordered_map<int64_t, const Allocation*> marked_;
};

}  // namespace gcprof::advisor
