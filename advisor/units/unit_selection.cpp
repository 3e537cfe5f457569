#include "units/unit_selection.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include <re2/re2.h>

#include "advice_error.h"
#include "saturating.h"

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

// Modules that share a family pattern are repeats of one structure: the
// blocks of a model and, one level up, the stages that hold them.
struct Family {
  std::string pattern;
  std::vector<const ModuleStats*> members;  // forward order
  Bytes saved = 0;
};

bool nestedIn(const std::string& inner, const std::string& outer) {
  return inner.size() > outer.size() + 1 && inner.compare(0, outer.size(), outer) == 0 &&
         inner[outer.size()] == '.';
}

// A module with recorded sub-modules is a composite (a block, a stage); one
// without is a single operation (Linear, GELU), never what people call a block.
std::set<std::string> composites(const std::vector<ModuleStats>& modules) {
  std::set<std::string> out;
  for (const ModuleStats& m : modules)
    for (size_t dot = m.name.find('.'); dot != std::string::npos; dot = m.name.find('.', dot + 1))
      out.insert(m.name.substr(0, dot));
  return out;
}

// "Head[1]" of "Head[1].body": the instance of a root class a module lies
// in (root_names.py), "" for the model and roots named once.
std::string rootInstance(const std::string& name) {
  std::string first = name.substr(0, name.find('.'));
  return first.find('[') != std::string::npos && first.back() == ']' ? first : "";
}

// A family repeats a structure inside one model: "TextTower[#].layers.#"
// has four layers in each instance, while "Head[#].body" (the body of each
// of three heads the job calls itself, parallel branches off one trunk) is
// one module per instance, no blocks of any.
bool repeatsInOneInstance(const Family& f) {
  std::map<std::string, int> per_instance;
  for (const ModuleStats* m : f.members)
    if (++per_instance[rootInstance(m->name)] >= 2) return true;
  return false;
}

std::vector<Family> families(const std::vector<const ModuleStats*>& cands) {
  std::map<std::string, Family> by_pattern;
  for (const ModuleStats* m : cands) {
    std::string p = familyPattern(m->name);
    if (p == m->name) continue;
    Family& f = by_pattern[p];
    f.pattern = p;
    f.members.push_back(m);
    sat::addTo(f.saved, m->saved_bytes);
  }
  std::vector<Family> out;
  for (auto& [p, f] : by_pattern)
    if (f.members.size() >= 2 && repeatsInOneInstance(f)) out.push_back(std::move(f));
  return out;
}

double mostCalls(const Family& f) {
  double most = 0;
  for (const ModuleStats* m : f.members) most = std::max(most, m->calls);
  return most;
}

// Families whose members run more often per step than those of another are
// left out: such a module is applied several times in one step under one
// name (a GAN's discriminator: on real data, on detached fakes, then on the
// fakes for the generator's loss), so its calls cannot be planned one by
// one (step_layout.cpp refuses them), while the blocks called once can.
void keepTheLeastCalled(std::vector<Family>& fams) {
  if (fams.empty()) return;
  double least = mostCalls(fams.front());
  for (const Family& f : fams) least = std::min(least, mostCalls(f));
  fams.erase(std::remove_if(fams.begin(), fams.end(),
                            [&](const Family& f) { return mostCalls(f) > least + 0.5; }),
             fams.end());
}

bool moreWorth(const Family& a, const Family& b) {
  if (a.saved != b.saved) return a.saved > b.saved;
  return a.members.size() > b.members.size();
}

// Every member of `inner` lies inside some member of `outer`.
bool splits(const Family& inner, const Family& outer) {
  for (const ModuleStats* m : inner.members) {
    bool inside = std::any_of(outer.members.begin(), outer.members.end(),
                              [&](const ModuleStats* o) { return nestedIn(m->name, o->name); });
    if (!inside) return false;
  }
  return true;
}

// "encoder.block.#" -> "block.#": the family's pattern from its last named
// component on, what a model's parallel stacks share (T5's encoder and
// decoder blocks).
std::string stackTail(const std::string& pattern) {
  size_t hash = pattern.rfind('#');
  size_t dot = hash == std::string::npos ? std::string::npos : pattern.rfind('.', hash);
  if (dot == std::string::npos || dot == 0) return "";
  size_t start = pattern.rfind('.', dot - 1);
  return pattern.substr(start == std::string::npos ? 0 : start + 1);
}

// "down.#" -> "": where the family's list of modules lives (the list's
// parent), what a U-Net's down and up paths share; kNoList when the list's
// own name is numbered (ResNet's stages "layer#.#" are one family already)
// or the family is not a list.
const std::string kNoList = "\x01";
std::string listParent(const std::string& pattern) {
  size_t dot = pattern.rfind('.');
  if (dot == std::string::npos || pattern.compare(dot + 1, std::string::npos, "#") != 0) return kNoList;
  std::string list = pattern.substr(0, dot);
  if (list.find('#') != std::string::npos) return kNoList;
  size_t up = list.rfind('.');
  return up == std::string::npos ? "" : list.substr(0, up);
}

// The kinds of a module's recorded sub-modules: the family patterns, relative
// to it, of the sub-modules with no recorded module between them and it
// ("c#", "n#" for a U-Net block's c1, n1, c2, n2; "resnets.#",
// "attentions.#" for a diffusers block, whose ModuleLists are never called).
// Bare indexes ("#", an nn.Sequential's 0, 1, 2) say nothing of the kind and
// are left out.
std::set<std::string> childKinds(const std::vector<ModuleStats>& modules, const std::string& name) {
  std::set<std::string> inside;
  for (const ModuleStats& m : modules)
    if (nestedIn(m.name, name)) inside.insert(m.name);
  std::set<std::string> out;
  for (const std::string& n : inside) {
    bool shallowest = true;
    for (size_t dot = n.find('.', name.size() + 1); dot != std::string::npos && shallowest; dot = n.find('.', dot + 1))
      shallowest = !inside.count(n.substr(0, dot));
    std::string kind = familyPattern(n.substr(name.size() + 1));
    if (shallowest && kind != "#") out.insert(kind);
  }
  return out;
}

bool shareAKind(const std::set<std::string>& a, const std::set<std::string>& b) {
  return std::any_of(a.begin(), a.end(), [&](const std::string& k) { return b.count(k) > 0; });
}

bool overlaps(const Family& a, const Family& b) {
  for (const ModuleStats* x : a.members)
    for (const ModuleStats* y : b.members)
      if (x->name == y->name || nestedIn(x->name, y->name) || nestedIn(y->name, x->name)) return true;
  return false;
}

// An encoder-decoder model repeats one kind of block in two stacks
// (`encoder.block.#`, `decoder.block.#`): both are its blocks. A U-Net
// keeps its down and up paths in two sibling lists (`down.#`, `up.#`) of
// one kind of block, and the up path's blocks (which take the skip
// connections) hold about as much as the down path's: a sibling list joins
// when its first member has a kind of sub-module in common with the chosen
// family's first (a U-Net's blocks: c1, n1, c2, n2; a diffusers UNet's
// DownBlock2D and CrossAttnUpBlock2D: resnets.#), so unrelated lists under
// one parent stay out. Families with the chosen one's tail, or such siblings,
// that do not overlap it and hold at least kStackShare of its saved bytes
// join it.
constexpr double kStackShare = 0.25;

// See docs/plan.md, "Units": of the families of repeated composite modules,
// the one holding the most saved bytes; then, while a finer family splits
// each of its members into several and still holds kStageShare of its saved
// bytes, that finer family (stages -> their blocks).
constexpr double kStageShare = 0.9;

// The blocks of one model (fams: its families, not empty).
UnitSelection blocksOf(const std::vector<ModuleStats>& modules, const std::vector<Family>& fams) {
  const Family* best = &fams.front();
  for (const Family& f : fams)
    if (moreWorth(f, *best)) best = &f;
  std::vector<std::string> stages;
  const Family* stage = nullptr;
  for (bool descended = true; descended;) {
    descended = false;
    const Family* finer = nullptr;
    for (const Family& f : fams) {
      if (f.members.size() <= best->members.size() || !splits(f, *best)) continue;
      if (static_cast<double>(f.saved) < kStageShare * static_cast<double>(best->saved)) continue;
      if (!finer || moreWorth(f, *finer)) finer = &f;
    }
    if (finer) {
      stages.push_back(best->pattern);
      stage = best;
      best = finer;
      descended = true;
    }
  }
  std::vector<const Family*> stacks = {best};
  std::string tail = stackTail(best->pattern), parent = listParent(best->pattern);
  std::set<std::string> kinds = childKinds(modules, best->members.front()->name);
  for (const Family& f : fams) {
    bool same_tail = !tail.empty() && stackTail(f.pattern) == tail;
    bool sibling = parent != kNoList && listParent(f.pattern) == parent &&
                   shareAKind(childKinds(modules, f.members.front()->name), kinds);
    if (&f == best || !(same_tail || sibling)) continue;
    if (static_cast<double>(f.saved) < kStackShare * static_cast<double>(best->saved)) continue;
    if (std::any_of(stacks.begin(), stacks.end(), [&](const Family* g) { return overlaps(f, *g); })) continue;
    stacks.push_back(&f);
  }
  std::vector<const ModuleStats*> members;
  for (const Family* f : stacks) members.insert(members.end(), f->members.begin(), f->members.end());
  std::stable_sort(members.begin(), members.end(), [](const ModuleStats* a, const ModuleStats* b) {
    return a->first_forward < b->first_forward;
  });
  UnitSelection s;
  for (const ModuleStats* m : members) s.names.push_back(m->name);
  s.rule = "auto: " + best->pattern;
  for (size_t i = 1; i < stacks.size(); ++i) s.rule += " + " + stacks[i]->pattern;
  if (!stages.empty()) s.rule += " (the blocks of the stages " + stages.back() + ")";
  // Without a descent (the blocks held the most bytes themselves), the
  // nearest family the blocks lie in: the one with the most members.
  if (!stage)
    for (const Family& f : fams)
      if (f.members.size() < best->members.size() && splits(*best, f) &&
          (!stage || f.members.size() > stage->members.size()))
        stage = &f;
  if (stage) {
    for (const ModuleStats* m : stage->members) s.stage_names.push_back(m->name);
    s.stage_rule = "auto: " + stage->pattern;
  }
  return s;
}

// The roots other than the model that hold recorded sub-modules: the other
// models of a job (CLIP's text tower next to its image tower, a perceptual
// loss network), named by their class ("TextTower.layers.0"): one name
// component, as the shim names a root (traces whose ranges carry no parent,
// fabricated or NVTX ones, would make every "blocks.0" a root).
std::vector<std::string> otherRoots(const std::vector<ModuleStats>& modules) {
  std::set<std::string> composite = composites(modules);
  std::vector<std::string> out;
  for (const ModuleStats& m : modules)
    if (m.root && !m.name.empty() && m.name.find('.') == std::string::npos && composite.count(m.name))
      out.push_back(m.name);
  return out;
}

// The root a family's blocks belong to: one of `roots`, or "" (the model).
std::string rootOf(const Family& f, const std::vector<std::string>& roots) {
  for (const std::string& r : roots)
    if (nestedIn(f.members.front()->name, r)) return r;
  return "";
}

// Each model of the job brings its own blocks: a job that trains two roots
// on one loss (CLIP's image and text towers, separate modules under one
// optimizer) keeps the activations of both until its one backward, so the
// units are the blocks of each (chosen in each as for one model), in
// forward order.
UnitSelection blocksOfEveryRoot(const std::vector<ModuleStats>& modules, const std::vector<Family>& fams) {
  std::vector<std::string> roots = otherRoots(modules);
  std::map<std::string, std::vector<Family>> by_root;
  for (const Family& f : fams) by_root[rootOf(f, roots)].push_back(f);
  if (by_root.size() == 1) return blocksOf(modules, fams);
  std::map<std::string, Ns> first;
  for (const ModuleStats& m : modules) first[m.name] = m.first_forward;
  std::vector<UnitSelection> parts;
  for (const auto& [root, root_fams] : by_root) parts.push_back(blocksOf(modules, root_fams));
  std::sort(parts.begin(), parts.end(), [&](const UnitSelection& a, const UnitSelection& b) {
    return first[a.names.front()] < first[b.names.front()];
  });
  UnitSelection s;
  bool stages = true;
  for (const UnitSelection& p : parts) {
    s.names.insert(s.names.end(), p.names.begin(), p.names.end());
    s.rule += (s.rule.empty() ? "" : " + ") + p.rule.substr(p.rule.find(' ') + 1);
    stages = stages && !p.stage_names.empty();
  }
  // Every other root holding units, in forward order: one family can span
  // several instances of a class ("Encoder[#].layers.#").
  std::string others;
  for (const std::string& r : roots)
    if (std::any_of(s.names.begin(), s.names.end(), [&](const std::string& n) { return nestedIn(n, r); }))
      others += (others.empty() ? "" : ", ") + r;
  s.rule = "auto: " + s.rule + " (the blocks of every model the job trains: the first called and " +
           others + ")";
  for (const UnitSelection& p : parts) {
    if (!stages) break;
    s.stage_names.insert(s.stage_names.end(), p.stage_names.begin(), p.stage_names.end());
    s.stage_rule += (s.stage_rule.empty() ? "auto: " : " + ") + p.stage_rule.substr(p.stage_rule.find(' ') + 1);
  }
  std::stable_sort(s.names.begin(), s.names.end(),
                   [&](const std::string& a, const std::string& b) { return first[a] < first[b]; });
  std::stable_sort(s.stage_names.begin(), s.stage_names.end(),
                   [&](const std::string& a, const std::string& b) { return first[a] < first[b]; });
  return s;
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
                        "sharing), and no other modules repeat: its calls share one name, so "
                        "gcprof cannot plan them one by one. Choose units that run once per "
                        "pass with --units REGEX (its sub-modules, or the modules around it)");
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

// The python shim's marker of a torch.compile wrapper (module_ranges.py):
// "torch.compile GPT2LMHeadModel"; empty when the run has none.
std::string compiledModel(const Trace& trace) {
  static const std::string kMark = "torch.compile ";
  for (const Range& r : trace.ranges)
    if (r.phase == Phase::User && r.name.compare(0, kMark.size(), kMark) == 0)
      return r.name.substr(kMark.size());
  return "";
}

}  // namespace

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
                      "compiled model too (names match with or without `_orig_mod.`)");
  }
}

}  // namespace gcprof::advisor
