#include "kernel_time.h"

#include <map>
#include <unordered_map>

namespace gcprof {

std::vector<std::pair<int64_t, Ns>> kernelTimeByRange(const std::vector<Range>& ranges,
                                                      const std::vector<KernelSpan>& kernels) {
  std::unordered_map<int64_t, int64_t> parent;
  parent.reserve(ranges.size());
  for (const Range& r : ranges) parent.emplace(r.id, r.parent);
  std::map<int64_t, Ns> total;
  for (const KernelSpan& k : kernels) {
    // A damaged trace could make the chain a loop: no chain is longer than
    // the run has ranges.
    int64_t r = k.range;
    for (size_t up = 0; r != 0 && up <= ranges.size(); ++up) {
      total[r] += k.duration;
      auto p = parent.find(r);
      if (p == parent.end()) break;
      r = p->second;
    }
  }
  std::vector<std::pair<int64_t, Ns>> out;
  for (const auto& [range, ns] : total)
    if (parent.count(range)) out.emplace_back(range, ns);
  return out;
}

}  // namespace gcprof
