#include "chain/in_place_outputs.h"

#include <algorithm>
#include <cstdlib>

#include "units/unsafe_units.h"

namespace gcprof::advisor {
namespace {
constexpr const char* kMark = "inplace output 0x";  // profiler/python/gcprof/module_ranges.py
}

uint64_t inPlaceOutputAddress(const std::string& name) {
  const std::string mark = kMark;
  if (name.size() <= mark.size() || name.compare(0, mark.size(), mark) != 0) return 0;
  const char* hex = name.c_str() + mark.size();
  char* end = nullptr;
  unsigned long long v = std::strtoull(hex, &end, 16);
  if (end == hex || *end != '\0') return 0;
  return static_cast<uint64_t>(v);
}

InPlaceOutputs::InPlaceOutputs(const Trace& trace, const AllocationFilter& filter)
    : trace_(trace), filter_(filter) {
  for (const ExcludedUnit& m : inPlaceModules(trace)) modules_.insert(m.name);
  if (modules_.empty()) return;
  std::unordered_map<int64_t, uint64_t> addresses;  // call's range id -> marked address
  for (const Range& r : trace.ranges) {
    if (r.domain == RangeDomain::Module && r.phase == Phase::Forward) forwards_.push_back(&r);
    if (r.domain == RangeDomain::User && r.parent != 0)
      if (uint64_t a = inPlaceOutputAddress(r.name)) addresses[r.parent] = a;
  }
  std::stable_sort(forwards_.begin(), forwards_.end(),
                   [](const Range* a, const Range* b) { return a->start < b->start; });
  for (const Range* call : forwards_) {
    auto a = addresses.find(call->id);
    if (a != addresses.end()) marked_[call->id] = atAddress(a->second, *call);
  }
}

// The last module call that starts inside the unit's forward, when it is one
// of a module recorded in place.
const Range* InPlaceOutputs::lastCall(const UnitWindow& unit) const {
  auto it = std::upper_bound(forwards_.begin(), forwards_.end(), unit.fwd_end,
                             [](Ns t, const Range* r) { return t < r->start; });
  if (it == forwards_.begin()) return nullptr;
  const Range* last = *--it;
  if (last->start <= unit.fwd_start || !modules_.count(last->name)) return nullptr;
  return last;
}

// The allocation at `address` live when the call ended: the latest one made
// there before the call ended (an address is reused only after a free).
const Allocation* InPlaceOutputs::atAddress(uint64_t address, const Range& call) const {
  auto end = std::upper_bound(trace_.allocations.begin(), trace_.allocations.end(), call.end,
                              [](Ns t, const Allocation& a) { return t < a.alloc; });
  for (auto it = end; it != trace_.allocations.begin();) {
    const Allocation& a = *--it;
    if (a.addr == address && filter_.matches(a)) return (!a.freed() || a.free > call.end) ? &a : nullptr;
  }
  return nullptr;
}

const Allocation* InPlaceOutputs::bySize(const StepRegions& reg, int k, const UnitWindow& unit,
                                         Bytes bytes) const {
  const int region = StepRegions::forward(k);
  auto begin = std::lower_bound(trace_.allocations.begin(), trace_.allocations.end(), unit.fwd_start,
                                [](const Allocation& a, Ns t) { return a.alloc < t; });
  const Allocation* first = nullptr;
  for (auto it = begin; it != trace_.allocations.end() && it->alloc <= unit.fwd_end; ++it) {
    if (!filter_.matches(*it) || it->bytes != bytes || !it->freed() || reg.regionOf(it->alloc) != region ||
        reg.backwardPosition(reg.regionOf(it->free)) != region)
      continue;
    if (!first || it->free < first->free) first = &*it;
  }
  return first;
}

const Allocation* InPlaceOutputs::bySizeOfOutput(const UnitWindow& unit) const {
  if (unit.output_bytes <= 0) return nullptr;
  // Latest first, from the forward's end back to its start: the output is
  // among the last rows, so the start is not searched for.
  auto end = std::upper_bound(trace_.allocations.begin(), trace_.allocations.end(), unit.fwd_end,
                              [](Ns t, const Allocation& a) { return t < a.alloc; });
  for (auto it = end; it != trace_.allocations.begin() && (it - 1)->alloc >= unit.fwd_start;) {
    const Allocation& a = *--it;
    if (filter_.matches(a) && a.bytes == unit.output_bytes && (!a.freed() || a.free > unit.fwd_end)) return &a;
  }
  return nullptr;
}

const Allocation* InPlaceOutputs::output(const StepLayout& step, const StepRegions& reg, int k,
                                         bool* exact) const {
  if (exact) *exact = false;
  if (k < 0 || k >= static_cast<int>(step.units.size())) return nullptr;
  const UnitWindow& unit = step.units[k];
  const Range* call = modules_.empty() ? nullptr : lastCall(unit);
  if (!call) return bySizeOfOutput(unit);
  // An in-place call that returns another size than the unit is not where
  // the unit ends when a tensor of the unit's output size is made after it:
  // an operation made the output (SqueezeNet's Fire concatenates its two
  // in-place ReLUs' outputs, which nothing holds then). Otherwise (a unit
  // returning a tuple) the in-place output is kept, as before.
  if (unit.output_bytes > 0 && call->output_bytes > 0 && call->output_bytes != unit.output_bytes)
    if (const Allocation* made_after = bySizeOfOutput(unit); made_after && made_after->alloc >= call->end)
      return made_after;
  auto marked = marked_.find(call->id);
  if (marked == marked_.end()) return bySize(reg, k, unit, call->input_bytes);
  if (exact) *exact = true;
  const Allocation* a = marked->second;
  // Made before the unit (it changed its own input in place): nothing of the
  // unit's to keep.
  return a && a->alloc >= unit.fwd_start ? a : nullptr;
}

}  // namespace gcprof::advisor
