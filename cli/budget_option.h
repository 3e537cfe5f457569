// `--budget` as users write it, for advise and verify --compile-budgets:
// a share of the recorded peak ("60%") or a size ("300MiB").
#pragma once

#include <string>

#include "plan/advice.h"

namespace gcprof::cli {

// Throws std::invalid_argument naming the text and what is wrong: 0%, or a
// number without a unit ("60" is far more likely 60% or 60 GiB than 60 bytes).
advisor::Budget parseBudget(const std::string& text);

}  // namespace gcprof::cli
