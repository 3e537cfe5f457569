// Random unit chains for the solver tests: any numbers are valid inputs to
// the chain model, so the solvers must be exact on all of them.
#pragma once

#include <random>
#include <string>

#include "chain/unit_chain.h"

namespace gcprof::testing {

inline advisor::UnitChain randomChain(int n, std::mt19937_64& rng) {
  using advisor::DropBucket;
  std::uniform_int_distribution<int64_t> mem(0, 1000), small(0, 300), time(1, 100);
  advisor::UnitChain c;
  c.outside = 500 + small(rng);
  Bytes level = c.outside;
  for (int k = 0; k < n; ++k) {
    c.names.push_back("u" + std::to_string(k));
    c.forward_ns.push_back(time(rng));
    c.gap_ns.push_back(time(rng) / 4);
    level += small(rng);
    c.unit_peak.push_back(level + mem(rng));
    c.gap_peak.push_back(level + small(rng));
    c.before_backward.push_back(level + small(rng));
  }
  for (int p = 0; p < 2 * n - 1; ++p) {
    Bytes kept = small(rng);
    c.born_kept.push_back(kept);
    c.born_peak.push_back(kept + small(rng));
  }
  c.drops.assign(n, {});
  c.saved.assign(n, 0);
  for (int j = 0; j < n; ++j) {
    Bytes own = mem(rng);
    c.drops[j].push_back({j, own});
    c.saved[j] = own;
    if (j > 0 && rng() % 2) c.drops[j].push_back({j - 1, small(rng)});  // boundary tensors
    if (j > 2 && rng() % 4 == 0) c.drops[j].push_back({j - 3, small(rng)});
  }
  c.baseline_peak = c.outside;
  for (int k = 0; k < n; ++k)
    c.baseline_peak = std::max({c.baseline_peak, c.unit_peak[k], c.gap_peak[k]});
  c.step_ns = 10000;
  return c;
}

}  // namespace gcprof::testing
