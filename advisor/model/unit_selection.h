// Which modules are the checkpointable units: `auto` (the repeated blocks,
// e.g. the transformer layers), `depth=N`, or a regular expression that
// matches whole qualified names. Units come out in forward order.
#pragma once

#include <string>
#include <vector>

#include "model/module_stats.h"

namespace gcprof::advisor {

struct UnitSelection {
  std::vector<std::string> names;  // in forward order
  std::string rule;                // how they were chosen, for humans ("auto: layers.#")
};

// Throws AdviceError (with the candidates it saw) when nothing matches or
// the chosen modules overlap in time (one nested in another).
UnitSelection selectUnits(const std::vector<ModuleStats>& modules, const std::string& spec);

// "layers.12" -> "layers.#"; names without a trailing number are returned as is.
std::string repeatPattern(const std::string& name);

}  // namespace gcprof::advisor
