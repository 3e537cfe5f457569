// Suggestions for a unit name the model does not have ("did you mean ...").
#include "gcprof/torch/plan.h"

#include <algorithm>
#include <utility>

namespace gcprof::torch {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  // Levenshtein with one row: names are short.
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

size_t common_prefix(const std::string& a, const std::string& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

std::vector<std::string> near_matches(const std::string& name,
                                      const std::vector<std::string>& candidates, size_t limit) {
  // A typo changes a few characters; a wrong index ("layers.12" in an
  // 8-layer model) keeps the prefix. Either makes a candidate plausible.
  const size_t typo_budget = std::max<size_t>(2, name.size() / 3);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(name, c);
    size_t prefix = common_prefix(name, c);
    bool plausible = d <= typo_budget || (prefix * 2 >= name.size() && prefix > 0);
    if (plausible && c != name) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < limit; ++i) out.push_back(scored[i].second);
  return out;
}

}  // namespace gcprof::torch
