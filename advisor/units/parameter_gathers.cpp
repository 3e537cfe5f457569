#include "units/parameter_gathers.h"

#include <map>

namespace gcprof::advisor {

ParameterGathers::ParameterGathers(const std::vector<Range>& ranges) {
  const std::string prefix = "fsdp.unshard ";
  std::map<std::string, int64_t> calls;
  std::vector<std::pair<int64_t, std::string>> gather_ranges;
  for (const Range& r : ranges) {
    if (r.domain != RangeDomain::User || r.name.rfind(prefix, 0) != 0) continue;
    gather_ranges.push_back({r.id, r.name.substr(prefix.size())});
    ++calls[gather_ranges.back().second];
  }
  std::map<std::string, size_t> index;
  for (const auto& [module, n] : calls) {
    index[module] = gathers_.size();
    gathers_.push_back({module, n, 0});
  }
  for (const auto& [id, module] : gather_ranges) module_of_[id] = index[module];
}

void ParameterGathers::add(const Allocation& a) {
  if (module_of_.empty()) return;
  auto m = module_of_.find(a.range);
  if (m != module_of_.end()) gathers_[m->second].bytes += a.bytes;
}

}  // namespace gcprof::advisor
