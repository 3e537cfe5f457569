#include "units/unit_selection.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include <re2/re2.h>

#include "advice_error.h"
#include "saturating.h"
#include "units/block_families.h"

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
  for (size_t i = 0; i < ms.size() && i < max; ++i)
    s += (i ? ", " : "") + (ms[i]->name.empty() ? std::string("(the model)") : ms[i]->name);
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

// Without repeated blocks, a unit that saves most of the units' bytes and
// has no recorded sub-modules is one module doing the work of many (an
// nn.LSTM(num_layers=4), an nn.TransformerEncoder's fused path): it can only
// be checkpointed whole, recomputing all its layers at once. Said so.
std::string oneModuleHoldsMost(const std::vector<const ModuleStats*>& cands,
                               const std::vector<std::string>& units, const std::set<std::string>& composite) {
  const ModuleStats* most = nullptr;
  Bytes total = 0;
  for (const ModuleStats* m : cands) {
    if (std::find(units.begin(), units.end(), m->name) == units.end()) continue;
    sat::addTo(total, m->saved_bytes);
    if (!most || m->saved_bytes > most->saved_bytes) most = m;
  }
  if (!most || total <= 0 || composite.count(most->name) ||
      static_cast<double>(most->saved_bytes) < 0.5 * static_cast<double>(total))
    return "";
  int share = static_cast<int>(std::lround(100.0 * static_cast<double>(most->saved_bytes) / static_cast<double>(total)));
  return "; " + most->name + " saves " + std::to_string(share) +
         "% of what the units save and is one module with no recorded sub-modules (a multi-layer "
         "nn.LSTM or GRU is one): gcprof can only checkpoint it whole, which recomputes all its "
         "layers at once; to plan it layer by layer, build it of one module per layer (an "
         "nn.ModuleList of one-layer modules)";
}

// "Encoder[1]": the second live instance of one class among the job's
// roots, as the shim names it (root_names.py). Instances of one class look
// like a numbered list ("Encoder[#]") but are models of the job, each
// bringing its own blocks, never blocks themselves.
bool isRootInstance(const ModuleStats& m) {
  const std::string& n = m.name;
  size_t open = n.find('[');
  return m.root && open != std::string::npos && open > 0 && n.back() == ']' &&
         n.find('.') == std::string::npos && isNumber(n.substr(open + 1, n.size() - open - 2));
}

UnitSelection autoUnits(const std::vector<ModuleStats>& modules,
                        const std::vector<const ModuleStats*>& cands) {
  std::set<std::string> composite = composites(modules);
  std::vector<const ModuleStats*> blocks;
  for (const ModuleStats* m : cands)
    if (!m->name.empty() && composite.count(m->name) && !isRootInstance(*m)) blocks.push_back(m);
  std::vector<Family> fams = families(blocks);
  if (fams.empty()) fams = families(cands);  // ranges without sub-ranges (NVTX, C API)
  keepTheLeastCalled(fams);
  if (!fams.empty()) return blocksOfEveryRoot(modules, fams);
  // A composite called more often than the model itself is one block applied
  // several times (ALBERT's shared layer): its calls are the blocks, but they
  // share one name, so they cannot be told apart as units.
  double passes = 1;
  for (const ModuleStats& m : modules)
    if (m.name.empty()) passes = std::max(1.0, m.calls);
  for (const ModuleStats* m : blocks)
    if (m->calls > passes + 0.5)
      throw AdviceError(m->name + " is called " + std::to_string(std::lround(m->calls / passes)) +
                        " times per forward pass (one module applied several times: weight "
                        "sharing), and no other modules repeat: its calls share one name, and "
                        "so do its sub-modules', so gcprof cannot plan them one by one. Units "
                        "must run once per pass (--units REGEX among the modules around it); "
                        "to checkpoint each call, use the model's own checkpointing (Hugging "
                        "Face: gradient_checkpointing_enable())");
  // No repeated modules: the top-level modules in forward order.
  int min_depth = INT32_MAX;
  for (const ModuleStats* m : cands)
    if (m->depth > 0) min_depth = std::min(min_depth, m->depth);
  UnitSelection s;
  for (const ModuleStats* m : cands)
    if (m->depth == min_depth) s.names.push_back(m->name);
  if (s.names.size() < 2) {
    std::vector<const ModuleStats*> forward_only;
    for (const ModuleStats& m : modules)
      if (m.backward_calls <= 0 && m.calls > 0 && !m.name.empty()) forward_only.push_back(&m);
    std::string frozen;
    if (!forward_only.empty())
      frozen = ". The other " + std::to_string(forward_only.size()) +
               " recorded modules ran forward only (" + listNames(forward_only, 4) +
               "): no gradient flows through them (frozen, and nothing trainable below them), so "
               "they keep no activations for a backward and there is nothing to checkpoint there";
    throw AdviceError("no repeated blocks found among the modules with a backward (" + listNames(cands) +
                      ")" + frozen + "; choose units with --units depth=N or --units REGEX");
  }
  s.rule = "auto: depth " + std::to_string(min_depth) + " (no repeated blocks" + oneModuleHoldsMost(cands, s.names, composite) + ")";
  return s;
}

}  // namespace

std::string compiledModel(const Trace& trace) {
  static const std::string kMark = "torch.compile ";
  for (const Range& r : trace.ranges)
    if (r.phase == Phase::User && r.name.compare(0, kMark.size(), kMark) == 0)
      return r.name.substr(kMark.size());
  return "";
}

std::string familyPattern(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size();) {
    if (std::isdigit(static_cast<unsigned char>(name[i]))) {
      out += '#';
      while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
    } else {
      out += name[i++];
    }
  }
  return out;
}

std::vector<std::string> forwardOnlyBlocks(const std::vector<ModuleStats>& modules,
                                           const std::vector<std::string>& units) {
  std::set<std::string> families;
  for (const std::string& u : units) families.insert(familyPattern(u));
  std::vector<std::string> out;
  for (const ModuleStats& m : modules)
    if (m.backward_calls <= 0 && m.calls > 0 && families.count(familyPattern(m.name))) out.push_back(m.name);
  return out;
}

UnitSelection selectUnits(const std::vector<ModuleStats>& modules, const std::string& spec) {
  std::vector<const ModuleStats*> cands = withBackward(modules);
  if (cands.empty())
    throw AdviceError(modules.empty()
                          ? "the trace has no module ranges; record with the python shim, NVTX "
                            "ranges, or gcprof_range_start(name, GCPROF_FORWARD/GCPROF_BACKWARD) and "
                            "gcprof_range_end around the layers (C API: gcprof/gcprof.h)"
                          : "no module has a backward range, so nothing they save can be "
                            "measured; mark backward (phase 2) ranges for the layers");
  UnitSelection sel;
  if (spec.empty() || spec == "auto") {
    sel = autoUnits(modules, cands);
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
    // RE2 matches in time linear in the name whatever the pattern, with no
    // recursion: std::regex overflowed the stack on `(.)*` over a long name
    // and backtracked for ever on `(b+)+c`. Latin-1: names are matched byte
    // by byte, as before, whatever their encoding.
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingLatin1);
    options.set_log_errors(false);
    RE2 re(spec, options);
    if (!re.ok())
      throw AdviceError("--units '" + spec + "': not a valid regular expression (" + re.error() +
                        "; RE2 syntax: no backreferences or lookaround, docs/plan.md)");
    for (const ModuleStats* m : cands)
      if (RE2::FullMatch(m->name, re)) sel.names.push_back(m->name);
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

UnitSelection selectUnits(const Trace& trace, const std::vector<ModuleStats>& modules,
                          const std::string& spec) {
  try {
    return selectUnits(modules, spec);
  } catch (const AdviceError& e) {
    std::string compiled = compiledModel(trace);
    if (compiled.empty()) throw;
    throw AdviceError("the model (" + compiled + ") ran under torch.compile: its modules ran "
                      "inside compiled graphs, where the python shim cannot see them, so there "
                      "are no blocks to plan (" + e.what() + "). Record the job once with "
                      "TORCH_COMPILE_DISABLE=1 in its environment (gcprof record -- env "
                      "TORCH_COMPILE_DISABLE=1 python train.py ...); its plans apply to the "
                      "compiled model too (names match with or without `_orig_mod.`). To keep "
                      "torch.compile and find the activation_memory_budget that fits instead: "
                      "gcprof verify TRACE --compile-budgets 0.2,0.4,0.6,0.8 --budget SIZE");
  }
}

}  // namespace gcprof::advisor
