#include "units/resident_memory.h"

#include <unordered_map>

#include "byte_text.h"
#include "saturating.h"

namespace gcprof::advisor {

std::string ResidentMemory::describe() const {
  std::string s;
  auto part = [&](Bytes b, const char* what) {
    if (b <= 0) return;
    s += (s.empty() ? "" : ", ") + std::string(what) + " " + formatBytes(b);
  };
  part(before_training, "made before the first step (parameters, buffers; on host runs also the runtime's own heap)");
  part(gradients, "gradients kept from the previous step");
  part(optimizer, "optimizer state");
  part(this_step, "this step's batch and the activations of the modules before the first unit");
  part(cached, "kept from an earlier step's forward (caches)");
  return s.empty() ? "nothing" : s;
}

ResidentMemory residentMemory(const Trace& trace, const AllocationFilter& filter,
                              const RunLayout& layout) {
  ResidentMemory r;
  if (layout.steady.empty()) return r;
  const StepLayout& now = layout.steps[layout.steady.front()];
  Ns t0 = now.units.front().fwd_start;
  const StepLayout* first = nullptr;
  for (const StepLayout& s : layout.steps)
    if (s.complete) {
      first = &s;
      break;
    }
  // The complete step an allocation was born in, if any (steps are by time).
  auto bornIn = [&](Ns t) -> const StepLayout* {
    const StepLayout* in = nullptr;
    for (const StepLayout& s : layout.steps)
      if (s.complete && s.start <= t) in = &s;
    return in;
  };
  // A head after the units (a detector's box head, an LM head) runs its
  // backward before the units' backward: what it keeps from there is a
  // gradient, not a cache, though it is born before the units' backward.
  std::unordered_map<int64_t, Phase> phase_of;
  for (const Range& r : trace.ranges) phase_of[r.id] = r.phase;
  auto inBackward = [&](const Allocation& a) {
    auto it = phase_of.find(a.range);
    return it != phase_of.end() && it->second == Phase::Backward;
  };
  for (const Allocation& a : trace.allocations) {
    if (a.alloc > t0) break;  // sorted by allocation time
    if (!filter.matches(a) || (a.freed() && a.free <= t0)) continue;
    const StepLayout* s = a.alloc < first->start ? nullptr : bornIn(a.alloc);
    if (!s) sat::addTo(r.before_training, a.bytes);
    else if (s == &now) sat::addTo(r.this_step, a.bytes);
    else if (a.alloc < s->units.back().bwd_start && !inBackward(a)) sat::addTo(r.cached, a.bytes);
    else if (a.alloc < s->units.front().bwd_end) sat::addTo(r.gradients, a.bytes);
    else sat::addTo(r.optimizer, a.bytes);
  }
  return r;
}

}  // namespace gcprof::advisor
