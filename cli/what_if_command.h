// `gcprof advise --what-if NAME`: the largest size that fits the budget per
// strategy, and with --size N the plan that makes size N fit
// (advisor/scale/what_if.h does the work).
#pragma once

#include <string>
#include <vector>

#include "plan/advice.h"

namespace gcprof::cli {

struct WhatIfArgs {
  std::string size_name;              // --what-if: what the runs' names count (batch, seq)
  std::vector<std::string> size_of;   // --size-of RUN=SIZE, instead of names
  int64_t size = 0;                   // --size: plan for it
  std::string fit = "auto";           // auto | affine | quadratic
  int64_t max_size = 1 << 20;
  bool side = false;                  // --side: the size is an image's side (fits over its square)
  int64_t size_step = 1;              // --size-step: the job takes only multiples of it
  bool enabled() const { return !size_name.empty() || !size_of.empty(); }
};

// Prints the answer (or JSON), writes and stores the plan for --size.
int runWhatIf(const WhatIfArgs& w, const std::string& trace, const advisor::AdviceRequest& request,
              const std::string& output, bool json, bool no_store);

}  // namespace gcprof::cli
