#include "chain/module_tree.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>

namespace gcprof::advisor {
namespace {

bool directChild(const std::string& block, const std::string& name) {
  return name.size() > block.size() + 1 && name.compare(0, block.size(), block) == 0 &&
         name[block.size()] == '.' && name.find('.', block.size() + 1) == std::string::npos;
}

}  // namespace

std::vector<int> ModuleTree::spanLast() const {
  std::vector<int> out(names.size(), -1);
  for (size_t b = 0; b < blocks.size(); ++b)
    if (split(static_cast<int>(b))) out[span[b].first] = span[b].second;
  return out;
}

std::string ModuleTree::moduleOf(const Segment& s) const {
  int b = block_of[s.first];
  if (split(b) && s.first == span[b].first && s.last == span[b].second) return blocks[b];
  return names[s.first];
}

Segments ModuleTree::fromBlockPlan(const Segments& block_plan) const {
  Segments out;
  for (const Segment& s : block_plan) out.push_back({span[s.first].first, span[s.last].second});
  return out;
}

ModuleTree flatTree(const std::vector<std::string>& blocks) {
  return moduleTree({}, blocks, {});
}

ModuleTree moduleTree(const std::vector<ModuleStats>& modules, const std::vector<std::string>& blocks,
                      const std::vector<ExcludedUnit>& unsafe) {
  std::set<std::string> in_place;
  for (const ExcludedUnit& u : unsafe) in_place.insert(u.name);
  std::unordered_map<std::string, const ModuleStats*> by_name;
  for (const ModuleStats& m : modules) by_name[m.name] = &m;

  std::set<std::string> job_checkpointed;
  for (const ExcludedUnit& u : unsafe)
    if (checkpointedByTheJob(u)) job_checkpointed.insert(u.name);

  ModuleTree t;
  t.blocks = blocks;
  for (size_t b = 0; b < blocks.size(); ++b) {
    auto block = by_name.find(blocks[b]);
    std::vector<const ModuleStats*> children;
    bool job_before = false, job_after = false;  // a job-checkpointed sibling before the first / after the last
    if (block != by_name.end()) {
      for (const ModuleStats& m : modules) {  // forward order
        if (!directChild(blocks[b], m.name) || m.backward_calls <= 0) continue;
        if (job_checkpointed.count(m.name)) (children.empty() ? job_before : job_after) = true;
        if (in_place.count(m.name)) continue;
        if (std::lround(m.calls) != std::lround(block->second->calls)) continue;
        children.push_back(&m);
        job_after = false;
      }
    }
    int first = static_cast<int>(t.names.size());
    if (children.size() >= 2) {
      for (const ModuleStats* c : children) {
        t.names.push_back(c->name);
        t.block_of.push_back(static_cast<int>(b));
        t.whole_only.push_back(false);
      }
      if (job_before) t.whole_only[first] = true;
      if (job_after) t.whole_only.back() = true;
    } else {
      t.names.push_back(blocks[b]);
      t.block_of.push_back(static_cast<int>(b));
      t.whole_only.push_back(false);
    }
    t.span.push_back({first, static_cast<int>(t.names.size()) - 1});
  }
  return t;
}

bool widenToBlocks(RunLayout& chain, const RunLayout& blocks, const ModuleTree& tree) {
  if (chain.steps.size() != blocks.steps.size()) return false;
  for (size_t s = 0; s < chain.steps.size(); ++s) {
    StepLayout& fine = chain.steps[s];
    const StepLayout& coarse = blocks.steps[s];
    if (fine.step != coarse.step || fine.complete != coarse.complete) return false;
    if (!fine.complete) continue;
    for (size_t b = 0; b < tree.blocks.size(); ++b) {
      if (!tree.split(static_cast<int>(b))) continue;
      const UnitWindow& block = coarse.units[b];
      UnitWindow& first = fine.units[tree.span[b].first];
      UnitWindow& last = fine.units[tree.span[b].second];
      // The block's own work before its first and after its last sub-module
      // is recomputed with either; on the host it is timed by the windows.
      if (!first.device_time) first.forward_ns += std::max<Ns>(0, first.fwd_start - block.fwd_start);
      if (!last.device_time) last.forward_ns += std::max<Ns>(0, block.fwd_end - last.fwd_end);
      first.fwd_start = std::min(first.fwd_start, block.fwd_start);
      first.bwd_end = std::max(first.bwd_end, block.bwd_end);
      last.fwd_end = std::max(last.fwd_end, block.fwd_end);
      last.bwd_start = std::min(last.bwd_start, block.bwd_start);
    }
  }
  return true;
}

ModuleTree treeOfPlan(const std::vector<std::string>& units, const std::vector<std::string>& blocks) {
  if (blocks.empty()) return flatTree(units);
  ModuleTree t;
  t.blocks = blocks;
  t.names = units;
  t.span.assign(blocks.size(), {-1, -1});
  size_t b = 0;
  for (size_t k = 0; k < units.size(); ++k) {
    auto inside = [&](size_t i) {
      return units[k] == blocks[i] || units[k].compare(0, blocks[i].size() + 1, blocks[i] + ".") == 0;
    };
    while (b < blocks.size() && !inside(b)) ++b;
    if (b == blocks.size()) return flatTree(units);  // not a tree plan of these blocks
    if (t.span[b].first < 0) t.span[b].first = static_cast<int>(k);
    t.span[b].second = static_cast<int>(k);
    t.block_of.push_back(static_cast<int>(b));
  }
  for (const auto& s : t.span)
    if (s.first < 0) return flatTree(units);
  t.whole_only.assign(units.size(), false);  // a plan's own segments are what it applies
  return t;
}

RunLayout treeLayout(const Trace& trace, const ModuleTree& tree) {
  RunLayout chain = stepLayouts(trace, tree.names);
  if (!tree.anySplit()) return chain;
  RunLayout blocks = stepLayouts(trace, tree.blocks);
  RunLayout widened = chain;
  return widenToBlocks(widened, blocks, tree) ? widened : chain;
}

}  // namespace gcprof::advisor
