#include "units/block_families.h"

#include <algorithm>
#include <map>

#include "saturating.h"

namespace gcprof::advisor {
namespace {

bool nestedIn(const std::string& inner, const std::string& outer) {
  return inner.size() > outer.size() + 1 && inner.compare(0, outer.size(), outer) == 0 &&
         inner[outer.size()] == '.';
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

double mostCalls(const Family& f) {
  double most = 0;
  for (const ModuleStats* m : f.members) most = std::max(most, m->calls);
  return most;
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

// A numbered list inside some module ("decoder.layers.#", not the model's
// own "down.#") whose members are made of at least two kinds of layer.
bool stackOfBlocks(const std::string& pattern, const std::set<std::string>& kinds) {
  std::string parent = listParent(pattern);
  return parent != kNoList && !parent.empty() && kinds.size() >= 2;
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
// join it. So does a list of blocks in another part of the model under any
// name, when both are blocks of layers (at least two kinds of sub-module
// each, a list inside some module): a masked autoencoder's encoder
// (`vit.layers.#`) and decoder (`decoder.decoder_layers.#`), a captioning
// model's ViT encoder (`encoder.layers.#`) and GPT-2 decoder
// (`decoder.transformer.h.#`) both hold their activations until the one
// backward. A list of single layers (an FPN's `inner_blocks.#`, whose only
// sub-modules are an nn.Sequential's indexes) is not such a stack.
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
    std::set<std::string> f_kinds = childKinds(modules, f.members.front()->name);
    bool sibling = parent != kNoList && listParent(f.pattern) == parent && shareAKind(f_kinds, kinds);
    bool other_stack = stackOfBlocks(f.pattern, f_kinds) && stackOfBlocks(best->pattern, kinds);
    if (&f == best || !(same_tail || sibling || other_stack)) continue;
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

}  // namespace

std::set<std::string> composites(const std::vector<ModuleStats>& modules) {
  std::set<std::string> out;
  for (const ModuleStats& m : modules)
    for (size_t dot = m.name.find('.'); dot != std::string::npos; dot = m.name.find('.', dot + 1))
      out.insert(m.name.substr(0, dot));
  return out;
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

void keepTheLeastCalled(std::vector<Family>& fams) {
  if (fams.empty()) return;
  double least = mostCalls(fams.front());
  for (const Family& f : fams) least = std::min(least, mostCalls(f));
  fams.erase(std::remove_if(fams.begin(), fams.end(),
                            [&](const Family& f) { return mostCalls(f) > least + 0.5; }),
             fams.end());
}

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

}  // namespace gcprof::advisor
