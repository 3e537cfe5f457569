// The what-if table of a plan made for a size (advise --what-if --size N):
// predicted peak against size for each strategy, with the budget line and
// the largest size each strategy fits. Read from the plan's "what_if"
// section, so the reports need nothing but the stored plan.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gcprof::advisor {

// How far to trust the what-if (`what_if` is the section itself): the fit
// check and, when the farthest size asked is too far past the recorded
// ones, which size to record too. One sentence each; the terminal and the
// reports print the same.
std::vector<std::string> whatIfNotes(const nlohmann::json& what_if);

// Empty when `plan` has no what_if section.
std::string whatIfMarkdown(const nlohmann::json& plan);
std::string whatIfHtml(const nlohmann::json& plan);

}  // namespace gcprof::advisor
