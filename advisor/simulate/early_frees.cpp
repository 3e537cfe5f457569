#include "simulate/early_frees.h"

#include <algorithm>

namespace gcprof::advisor {

EarlyFrees::EarlyFrees(const std::vector<Allocation>& rows, size_t steps)
    : rows_(rows), steps_(new Step[steps]), step_count_(steps) {}

Ns EarlyFrees::freeTime(const CheckpointedForward& forward, size_t si, const StepRegions& reg, const Allocation& a,
                        const UnitWindow& unit) const {
  if (si >= step_count_ || reg.units() == 0) return forward.freeTime(a, unit.fwd_start, unit.fwd_end);
  Step& s = steps_[si];
  std::call_once(s.made, [&] {
    // Made when a plan first drops something in this step: a step no plan
    // touches costs nothing.
    auto by_alloc = [](const Allocation& r, Ns t) { return r.alloc < t; };
    auto first = std::lower_bound(rows_.begin(), rows_.end(), reg.begin(), by_alloc);
    auto end = std::upper_bound(first, rows_.end(), reg.lastOf(2 * reg.units() - 2),
                                [](Ns t, const Allocation& r) { return t < r.alloc; });
    s.first = static_cast<size_t>(first - rows_.begin());
    s.count = static_cast<size_t>(end - first);
    s.offset.reset(new std::atomic<uint32_t>[s.count]);
    for (size_t i = 0; i < s.count; ++i) s.offset[i].store(kUnknown, std::memory_order_relaxed);
  });
  const size_t row = static_cast<size_t>(&a - rows_.data());
  if (row < s.first || row - s.first >= s.count) return forward.freeTime(a, unit.fwd_start, unit.fwd_end);
  std::atomic<uint32_t>& slot = s.offset[row - s.first];
  // Relaxed: two threads asking at once both compute the same answer.
  const uint32_t known = slot.load(std::memory_order_relaxed);
  if (known < kTooFar) return unit.fwd_start + static_cast<Ns>(known);
  const Ns t = forward.freeTime(a, unit.fwd_start, unit.fwd_end);
  if (known == kUnknown) {
    const Ns offset = t - unit.fwd_start;
    slot.store(offset >= 0 && offset < static_cast<Ns>(kTooFar) ? static_cast<uint32_t>(offset) : kTooFar,
               std::memory_order_relaxed);
  }
  return t;
}

}  // namespace gcprof::advisor
