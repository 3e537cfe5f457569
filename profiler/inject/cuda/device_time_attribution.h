// Range device time from kernels (CUDA): a range's device_ns is the summed
// duration of the kernels launched while it was open on the launching thread,
// its nested ranges included. Kernels carry only the innermost range open at
// launch (recorder.h recordKernel), so each kernel's time is added to that
// range and to every enclosing range through the parent links.
//
// Sum, not union: kernels of one range overlap only when the job runs
// several streams at once, and then the sum is the device work done for the
// range, which is what recomputing it would cost again.
#pragma once

#include <unordered_map>
#include <vector>

#include "trace.h"

namespace gcprof {

// Sets device_ns on every range: -1 when the trace has no kernels at all
// (host backend), otherwise the attributed time (0 for ranges without any).
inline void assignDeviceTime(std::vector<Range>& ranges, const std::vector<Kernel>& kernels) {
  if (kernels.empty()) {
    for (Range& r : ranges) r.device_ns = -1;
    return;
  }
  std::unordered_map<int64_t, size_t> index;
  index.reserve(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    ranges[i].device_ns = 0;
    index.emplace(ranges[i].id, i);
  }
  for (const Kernel& k : kernels) {
    const Ns duration = k.end > k.start ? k.end - k.start : 0;
    // Bounded walk: a corrupt parent cycle must not hang the reader.
    int64_t id = k.range;
    for (size_t hops = 0; id != 0 && hops <= ranges.size(); ++hops) {
      auto it = index.find(id);
      if (it == index.end()) break;
      ranges[it->second].device_ns += duration;
      id = ranges[it->second].parent;
    }
  }
}

}  // namespace gcprof
