#include "units/saved_bytes_sweep.h"

#include <algorithm>

#include "advice_error.h"
#include "saturating.h"

namespace gcprof::advisor {

SavedBytesSweep::SavedBytesSweep(const ModuleRanges& ranges, const AllocationFilter& filter) : filter_(filter) {
  for (const auto& [name, steps] : ranges.by_name) {
    for (const auto& [step, sr] : steps) {
      // Without a backward range nothing is held for it.
      if (sr.backward.empty() || sr.forward.empty()) continue;
      const auto slot = static_cast<uint32_t>(saved_.size());
      saved_.push_back(0);
      slot_of_[&sr] = slot;
      const auto [bs, be] = backwardSpan(sr);
      for (const Range* f : sr.forward)
        if (f->end >= f->start) windows_.push_back({f->start, f->end, bs, be, slot});
    }
  }
  std::sort(windows_.begin(), windows_.end(), [](const Window& a, const Window& b) { return a.start < b.start; });
}

// Opens the windows that started by `t` and closes those that ended before
// it: the allocations come by time, so a window closed is never reopened.
void SavedBytesSweep::open(Ns t) {
  for (; next_ < windows_.size() && windows_[next_].start <= t; ++next_) {
    const Window& w = windows_[next_];
    if (w.end < t) continue;
    open_.push_back(w);
    open_until_ = std::min(open_until_, w.end);
  }
  if (t <= open_until_) return;
  open_until_ = INT64_MAX;
  open_.erase(std::remove_if(open_.begin(), open_.end(), [&](const Window& w) { return w.end < t; }), open_.end());
  for (const Window& w : open_) open_until_ = std::min(open_until_, w.end);
}

void SavedBytesSweep::add(const Allocation& a) {
  if (a.alloc < last_) throw AdviceError("the allocations are not in time order (is the trace damaged?)");
  last_ = a.alloc;
  // Only a block freed inside some backward span can be saved.
  if (!a.freed() || !filter_.matches(a)) return;
  open(a.alloc);
  for (const Window& w : open_)
    if (a.free >= w.backward_start && a.free <= w.backward_end) sat::addTo(saved_[w.slot], a.bytes);
}

Bytes SavedBytesSweep::savedIn(const StepRanges& sr) const {
  auto it = slot_of_.find(&sr);
  return it == slot_of_.end() ? 0 : saved_[it->second];
}

}  // namespace gcprof::advisor
