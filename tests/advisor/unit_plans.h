// Brute force over plans of single-unit segments: every unit left alone,
// checkpointed whole, or checkpointed with one of its save-lists.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "chain/chain_peak.h"
#include "chain/unit_chain.h"

namespace gcprof::testing {

// Calls `visit` once per plan. `offered` says which save-lists take part
// (all of them by default).
inline void forEachUnitPlan(
    const advisor::UnitChain& c, const std::function<void(const advisor::Segments&)>& visit,
    const std::function<bool(const advisor::SelectiveOption&)>& offered = nullptr) {
  advisor::Segments plan;
  std::function<void(int)> rec = [&](int k) {
    if (k == c.size()) {
      visit(plan);
      return;
    }
    rec(k + 1);
    int options = k < static_cast<int>(c.selective.size()) ? static_cast<int>(c.selective[k].size()) : 0;
    for (int o = 0; o <= options; ++o) {
      if (o > 0 && offered && !offered(c.selective[k][o - 1])) continue;
      plan.push_back({k, k, o, o > 0 ? c.selective[k][o - 1].save : std::vector<std::string>{}});
      rec(k + 1);
      plan.pop_back();
    }
  };
  rec(0);
}

}  // namespace gcprof::testing
