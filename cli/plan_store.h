// Storing a plan in the trace's plans table, so that verify and the reports
// find it by id.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "plan/advice.h"

namespace gcprof::cli {

// Throws StoreError when the trace cannot be written.
int64_t storePlan(const std::string& trace, const advisor::Advice& a, const nlohmann::json& doc);

}  // namespace gcprof::cli
