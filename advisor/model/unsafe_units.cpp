#include "model/unsafe_units.h"

#include <algorithm>
#include <set>

#include "model/advice_error.h"

namespace gcprof::advisor {

namespace {
constexpr const char* kInPlacePrefix = "inplace ";
}

std::vector<ExcludedUnit> inPlaceModules(const Trace& trace) {
  std::set<std::string> names;
  const std::string prefix = kInPlacePrefix;
  for (const Scalar& s : trace.scalars)
    if (s.name.compare(0, prefix.size(), prefix) == 0) names.insert(s.name.substr(prefix.size()));
  std::vector<ExcludedUnit> out;
  for (const std::string& n : names) out.push_back({n, "changes its input in place"});
  return out;
}

std::vector<ExcludedUnit> excludeUnsafeUnits(UnitSelection& units, const std::vector<ExcludedUnit>& unsafe) {
  std::vector<ExcludedUnit> removed;
  std::vector<std::string> kept;
  for (const std::string& name : units.names) {
    auto hit = std::find_if(unsafe.begin(), unsafe.end(), [&](const ExcludedUnit& u) { return u.name == name; });
    if (hit == unsafe.end()) kept.push_back(name);
    else removed.push_back(*hit);
  }
  if (kept.empty() && !removed.empty()) {
    std::string list;
    for (size_t i = 0; i < removed.size() && i < 5; ++i) list += (i ? ", " : "") + removed[i].name;
    if (removed.size() > 5) list += ", ...";
    throw AdviceError("every unit (" + units.rule + ") " + removed.front().reason + " (" + list +
                      "); checkpointing them would recompute from changed inputs. Choose units that "
                      "contain them, e.g. --units with the enclosing blocks' names");
  }
  units.names = kept;
  return removed;
}

}  // namespace gcprof::advisor
