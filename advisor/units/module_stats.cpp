#include "units/module_stats.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <unordered_map>

#include "saturating.h"

namespace gcprof::advisor {
namespace {

// Sum of the lengths of the union of [start, end] intervals (overlapping
// backward ranges of one module must not count twice).
Ns unionLength(std::vector<std::pair<Ns, Ns>> iv) {
  std::sort(iv.begin(), iv.end());
  Ns total = 0, cur_s = 0, cur_e = -1;
  bool open = false;
  for (auto [s, e] : iv) {
    if (!open || s > cur_e) {
      if (open) sat::addTo(total, sat::sub(cur_e, cur_s));
      cur_s = s;
      cur_e = e;
      open = true;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (open) sat::addTo(total, sat::sub(cur_e, cur_s));
  return total;
}

using StepsByName = decltype(ModuleRanges::by_name);

// Forward order from every step, not from the run's first forward alone: a
// model trained with LayerDrop (HF Wav2Vec2, HuBERT) skips layers at random,
// so a layer skipped in the first step first runs after the later layers of
// that step. Each step orders the modules that ran in it; the order taken is
// one that agrees with every step (a topological sort of "a ran before b in
// some step"), the run's first-forward order where steps say nothing. Steps
// that disagree (a cycle) keep the first-forward order for what is left.
void orderByEveryStep(std::vector<ModuleStats>& out, const StepsByName& by_name) {
  std::unordered_map<std::string, size_t> pos;
  for (size_t i = 0; i < out.size(); ++i) pos[out[i].name] = i;
  std::map<int64_t, std::vector<std::pair<Ns, size_t>>> firsts;  // step -> (start, pos)
  for (const auto& [name, steps] : by_name) {
    auto p = pos.find(name);
    if (p == pos.end()) continue;
    for (const auto& [step, sr] : steps)
      if (!sr.forward.empty()) firsts[step].push_back({sr.forward.front()->start, p->second});
  }
  std::vector<std::vector<size_t>> after(out.size());
  std::vector<int> before_count(out.size(), 0);
  for (auto& [step, f] : firsts) {
    std::sort(f.begin(), f.end());  // by start; a parent before its first child (lower pos)
    for (size_t k = 0; k + 1 < f.size(); ++k) {
      after[f[k].second].push_back(f[k + 1].second);
      ++before_count[f[k + 1].second];
    }
  }
  std::vector<bool> placed(out.size(), false);
  std::vector<ModuleStats> ordered;
  ordered.reserve(out.size());
  std::vector<size_t> ready;  // a min-heap of positions
  auto push = [&](size_t i) {
    ready.push_back(i);
    std::push_heap(ready.begin(), ready.end(), std::greater<>());
  };
  for (size_t i = 0; i < out.size(); ++i)
    if (before_count[i] == 0) push(i);
  size_t next_unplaced = 0;
  while (ordered.size() < out.size()) {
    size_t i;
    if (ready.empty()) {  // steps disagree: take the earliest left
      while (placed[next_unplaced]) ++next_unplaced;
      i = next_unplaced;
    } else {
      std::pop_heap(ready.begin(), ready.end(), std::greater<>());
      i = ready.back();
      ready.pop_back();
      if (placed[i]) continue;
    }
    placed[i] = true;
    ordered.push_back(std::move(out[i]));
    for (size_t j : after[i])
      if (--before_count[j] == 0 && !placed[j]) push(j);
  }
  out = std::move(ordered);
}

}  // namespace

std::vector<ModuleStats> moduleStats(const Trace& trace) {
  return moduleStats(trace, primaryFilter(trace));
}

std::vector<ModuleStats> moduleStats(const Trace& trace, const AllocationFilter& filter) {
  const ModuleRanges ranges = moduleRanges(trace.ranges);
  SavedBytesSweep saved(ranges, filter);
  for (const Allocation& a : trace.allocations) saved.add(a);
  return moduleStats(ranges, saved);
}

std::vector<ModuleStats> moduleStats(const ModuleRanges& ranges, const SavedBytesSweep& saved) {
  const StepsByName& by_name = ranges.by_name;
  std::vector<ModuleStats> out;
  for (auto& [name, steps] : by_name) {
    const ModuleFacts& facts = ranges.facts.at(name);
    ModuleStats m;
    m.name = name;
    m.depth = facts.depth;
    m.first_forward = facts.first_forward;
    m.root = facts.root;
    int64_t n_steps = 0, calls = 0, bcalls = 0;
    Ns fwd = 0, bwd = 0;
    Bytes saved_bytes = 0, in = 0, out_b = 0;
    for (auto& [step, sr] : steps) {
      if (sr.forward.empty()) continue;  // a backward without its forward says nothing
      ++n_steps;
      calls += static_cast<int64_t>(sr.forward.size());
      bcalls += static_cast<int64_t>(sr.backward.size());
      for (const Range* f : sr.forward) {
        sat::addTo(fwd, rangeDuration(*f));
        sat::addTo(in, f->input_bytes);
        sat::addTo(out_b, f->output_bytes);
      }
      bool device = !sr.backward.empty() &&
                    std::all_of(sr.backward.begin(), sr.backward.end(),
                                [](const Range* b) { return b->device_ns >= 0; });
      if (device) {
        for (const Range* b : sr.backward) sat::addTo(bwd, b->device_ns);
      } else {
        std::vector<std::pair<Ns, Ns>> iv;
        for (const Range* b : sr.backward) iv.push_back({b->start, std::max(b->start, b->end)});
        sat::addTo(bwd, unionLength(std::move(iv)));
      }
      sat::addTo(saved_bytes, saved.savedIn(sr));
    }
    if (n_steps == 0) continue;
    m.steps = static_cast<int>(n_steps);
    m.calls = static_cast<double>(calls) / n_steps;
    m.backward_calls = static_cast<double>(bcalls) / n_steps;
    m.forward_ns = fwd / n_steps;
    m.backward_ns = bwd / n_steps;
    m.saved_bytes = saved_bytes / n_steps;
    m.input_bytes = in / calls;
    m.output_bytes = out_b / calls;
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const ModuleStats& a, const ModuleStats& b) {
    if (a.first_forward != b.first_forward) return a.first_forward < b.first_forward;
    return a.depth < b.depth;  // a parent starts with its first child
  });
  orderByEveryStep(out, by_name);
  return out;
}

}  // namespace gcprof::advisor
