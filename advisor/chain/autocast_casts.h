// Parameter copies that autocast's cache holds in a checkpointed forward.
//
// Under autocast a parameter is cast to the lower precision (a bf16 or fp16
// copy, half its fp32 bytes) once, and the copy is kept in autocast's cache
// until the outermost autocast context exits and clears it. The recorded run
// keeps each copy to the backward of the module that used it (autograd saved
// it), so the replay would drop it when a checkpointed segment's forward ends;
// but a checkpointed forward saves nothing, and the cache still holds the copy
// until the clear. HF Whisper under bf16 autocast: 20 x 131,072 B of attention
// weights and 4 x 524,288 B of MLP weights alive at the 85% plan's peak (in the
// loss, before the clear), 4.7 MB the prediction missed (1.6% low). The
// recomputation in backward casts again under its own autocast, as recorded.
//
// The clears are user ranges `autocast.clear_cache` that the python shim
// records (profiler/python/gcprof/autocast_clears.py); without them nothing
// is taken for a copy. Which allocations are copies the trace does not say
// (a size alone does not: Whisper's bf16 hidden states are half its fp32
// position table). It shows their gradients: the backward of the module
// that made a copy makes the parameter's fp32 gradient, twice the copy's
// bytes, which the optimizer reads after the backward; the gradient of a cast
// activation is freed within the backward. So a copy is an allocation that
// the recorded run held across a clear and whose module's backward, in the
// same step, made an allocation of twice its bytes that outlived the step.
// A job that keeps its gradients between steps (zero_grad(set_to_none=
// False)) accumulates into them and shows no such allocation: its copies are
// dropped at the segment's end as before, the prediction low by them.
#pragma once

#include <cstdint>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "memory/memory_curve.h"
#include "units/step_layout.h"
#include "trace.h"

namespace gcprof::advisor {

class AutocastCasts {
 public:
  AutocastCasts(const Trace& trace, const AllocationFilter& filter, const RunLayout& layout);

  // When the cache lets go of `a`, born in a checkpointed forward: the first
  // clear after its birth, if `a` is a parameter's copy (above) and that
  // clear comes before `before` (the segment's backward start, where the
  // recomputation casts again); -1 otherwise.
  Ns clearedAt(const Allocation& a, Ns before) const;

 private:
  std::vector<Ns> clears_;  // starts, in time order
  std::unordered_map<int64_t, std::string_view> module_of_;  // module range id -> its name
  // (module, step, bytes) of the allocations a module's backward made that
  // outlived the step: the parameters' gradients.
  std::set<std::tuple<std::string_view, int64_t, Bytes>> gradients_;
};

}  // namespace gcprof::advisor
