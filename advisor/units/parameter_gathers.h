// FSDP parameter gathers (the python shim's "fsdp.unshard <module>" user
// ranges, fsdp_gathers.py): per module, how many gathers and how many bytes
// were allocated inside them, forward and backward together. Fed the
// allocations one at a time, in any order, so that `gcprof show` counts
// them from a run handed over a piece at a time as well as from loaded rows.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace.h"

namespace gcprof::advisor {

struct ParameterGather {
  std::string module;
  int64_t ranges = 0;  // gathers recorded, every step
  Bytes bytes = 0;     // allocated with a gather as the innermost open range
};

class ParameterGathers {
 public:
  explicit ParameterGathers(const std::vector<Range>& ranges);
  // No gathers recorded: the allocations need not be read.
  bool none() const { return module_of_.empty(); }
  void add(const Allocation& a);
  // By module name.
  const std::vector<ParameterGather>& byModule() const { return gathers_; }

 private:
  std::unordered_map<int64_t, size_t> module_of_;  // range id -> gathers_
  std::vector<ParameterGather> gathers_;
};

}  // namespace gcprof::advisor
