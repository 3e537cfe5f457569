// The what-if table of a plan made for a size (advise --what-if --size N):
// predicted peak against size for each strategy, with the budget line and
// the largest size each strategy fits. Read from the plan's "what_if"
// section, so the reports need nothing but the stored plan.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace gcprof::advisor {

// Empty when `plan` has no what_if section.
std::string whatIfMarkdown(const nlohmann::json& plan);
std::string whatIfHtml(const nlohmann::json& plan);

}  // namespace gcprof::advisor
