#include "model/unit_selection.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "model/advice_error.h"

namespace gcprof::advisor {
namespace {

bool isNumber(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(c); });
}

// A module is a unit candidate only when both its forward and its backward
// were seen: without a backward nothing it saves can be measured.
std::vector<const ModuleStats*> withBackward(const std::vector<ModuleStats>& modules) {
  std::vector<const ModuleStats*> out;
  for (const ModuleStats& m : modules)
    if (m.backward_calls > 0) out.push_back(&m);
  return out;
}

std::string listNames(const std::vector<const ModuleStats*>& ms, size_t max = 8) {
  std::string s;
  for (size_t i = 0; i < ms.size() && i < max; ++i) s += (i ? ", " : "") + ms[i]->name;
  if (ms.size() > max) s += ", ... (" + std::to_string(ms.size()) + " in all)";
  return s.empty() ? "(none)" : s;
}

// Units must form a chain: a module nested in another would be checkpointed twice.
void checkNoNesting(const std::vector<const ModuleStats*>& units) {
  std::set<std::string> names;
  for (const ModuleStats* m : units) names.insert(m->name);
  for (const ModuleStats* m : units) {
    const std::string& n = m->name;
    if (n.empty() && units.size() > 1)
      throw AdviceError("the root module (empty name) cannot be a unit next to others; choose "
                        "units at one level (--units depth=N)");
    for (size_t dot = n.find('.'); dot != std::string::npos; dot = n.find('.', dot + 1)) {
      std::string parent = n.substr(0, dot);
      if (names.count(parent))
        throw AdviceError("units '" + parent + "' and '" + n +
                          "' are nested; choose units at one level (--units depth=N or a "
                          "regex that matches only one of them)");
    }
  }
}

UnitSelection autoUnits(const std::vector<const ModuleStats*>& cands) {
  // Group siblings that differ only by a trailing index: the repeated blocks.
  std::map<std::string, std::vector<const ModuleStats*>> groups;
  for (const ModuleStats* m : cands) {
    std::string p = repeatPattern(m->name);
    if (p != m->name) groups[p].push_back(m);
  }
  // The group that holds the most activation memory is the one worth
  // checkpointing; a block's own sub-blocks (mlp.0, mlp.2) hold a fraction.
  const std::vector<const ModuleStats*>* best = nullptr;
  std::string best_pattern;
  Bytes best_bytes = -1;
  for (const auto& [pattern, ms] : groups) {
    if (ms.size() < 2) continue;
    Bytes total = 0;
    for (const ModuleStats* m : ms) total += m->saved_bytes;
    bool better = total > best_bytes ||
                  (total == best_bytes && best && ms.size() > best->size());
    if (better) {
      best = &ms;
      best_pattern = pattern;
      best_bytes = total;
    }
  }
  if (best) {
    UnitSelection s;
    for (const ModuleStats* m : *best) s.names.push_back(m->name);
    s.rule = "auto: " + best_pattern;
    return s;
  }
  // No repeated blocks: the top-level modules in forward order.
  int min_depth = INT32_MAX;
  for (const ModuleStats* m : cands)
    if (m->depth > 0) min_depth = std::min(min_depth, m->depth);
  UnitSelection s;
  for (const ModuleStats* m : cands)
    if (m->depth == min_depth) s.names.push_back(m->name);
  if (s.names.size() < 2)
    throw AdviceError("no repeated blocks found among the recorded modules (" + listNames(cands) +
                      "); choose units with --units depth=N or --units REGEX");
  s.rule = "auto: depth " + std::to_string(min_depth) + " (no repeated blocks)";
  return s;
}

}  // namespace

std::string repeatPattern(const std::string& name) {
  size_t dot = name.rfind('.');
  std::string last = dot == std::string::npos ? name : name.substr(dot + 1);
  if (!isNumber(last)) return name;
  return (dot == std::string::npos ? std::string() : name.substr(0, dot + 1)) + "#";
}

UnitSelection selectUnits(const std::vector<ModuleStats>& modules, const std::string& spec) {
  std::vector<const ModuleStats*> cands = withBackward(modules);
  if (cands.empty())
    throw AdviceError(modules.empty()
                          ? "the trace has no module ranges; record with the python shim, NVTX "
                            "ranges or gcprof_range_push/pop around the layers"
                          : "no module has a backward range, so nothing they save can be "
                            "measured; mark backward (phase 2) ranges for the layers");
  UnitSelection sel;
  if (spec.empty() || spec == "auto") {
    sel = autoUnits(cands);
  } else if (spec.rfind("depth=", 0) == 0) {
    std::string n = spec.substr(6);
    if (!isNumber(n) || n.size() > 6)
      throw AdviceError("--units " + spec + ": depth must be a number from 1 to 999999 (depth=2)");
    int depth = std::stoi(n);
    for (const ModuleStats* m : cands)
      if (m->depth == depth) sel.names.push_back(m->name);
    sel.rule = spec;
    if (sel.names.empty())
      throw AdviceError("--units " + spec + ": no module at that depth has a backward range; "
                        "modules seen: " + listNames(cands));
  } else {
    std::regex re;
    try {
      re = std::regex(spec, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw AdviceError("--units '" + spec + "': not a valid regular expression (" + e.what() + ")");
    }
    for (const ModuleStats* m : cands)
      if (std::regex_match(m->name, re)) sel.names.push_back(m->name);
    sel.rule = "regex: " + spec;
    if (sel.names.empty())
      throw AdviceError("--units '" + spec + "' matches no module with a backward range; "
                        "modules seen: " + listNames(cands));
  }
  std::set<std::string> picked(sel.names.begin(), sel.names.end());
  std::vector<const ModuleStats*> chosen;
  for (const ModuleStats* m : cands)
    if (picked.count(m->name)) chosen.push_back(m);
  checkNoNesting(chosen);
  sel.names.clear();
  for (const ModuleStats* m : chosen) sel.names.push_back(m->name);  // forward order
  return sel;
}

}  // namespace gcprof::advisor
