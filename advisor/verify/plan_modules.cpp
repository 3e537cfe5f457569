#include "verify/plan_modules.h"

#include <algorithm>
#include <vector>

#include "units/module_stats.h"
#include "units/unsafe_units.h"
#include "trace_store.h"

namespace gcprof::advisor {
namespace {

// Levenshtein with one row: module names are short.
size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

void checkPlanModulesExist(const PlanFile& plan, const Trace& baseline, const std::string& where) {
  std::vector<std::string> known;
  for (const auto& m : moduleStats(baseline)) known.push_back(m.name);
  for (const auto& segment : plan.checkpoint) {
    for (const std::string& unit : segment) {
      if (std::find(known.begin(), known.end(), unit) != known.end()) continue;
      std::vector<std::string> near = known;
      std::sort(near.begin(), near.end(), [&](const std::string& x, const std::string& y) {
        return editDistance(unit, x) < editDistance(unit, y);
      });
      near.resize(std::min<size_t>(3, near.size()));
      std::string list;
      for (const std::string& n : near) list += (list.empty() ? "" : ", ") + n;
      throw StoreError(where + ": unit '" + unit + "' is not a module of run " +
                       std::to_string(baseline.run.id) + (list.empty() ? "" : " (near: " + list + ")"));
    }
  }
  std::vector<ExcludedUnit> in_place = inPlaceModules(baseline);
  for (const auto& segment : plan.checkpoint)
    for (const std::string& unit : segment)
      for (const ExcludedUnit& m : in_place)
        if (m.name == unit)
          throw StoreError(where + ": checkpoints '" + unit + "', which run " + std::to_string(baseline.run.id) +
                           " recorded as changing its input in place (ReLU(inplace=True), x.add_(...)): "
                           "recomputing it would not replay its forward and the job would fail in backward; "
                           "remove it from the plan, or take the plan `gcprof advise` writes (it leaves such "
                           "modules out)");
}

}  // namespace gcprof::advisor
