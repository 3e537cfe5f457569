#include "units/module_stats.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>

#include "saturating.h"

namespace gcprof::advisor {
namespace {

// One module's ranges within one step.
struct StepRanges {
  std::vector<const Range*> forward;
  std::vector<const Range*> backward;
};

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

// The first of `allocs` (sorted by allocation time) made at `t` or later,
// searched from `from` on when t is not before allocs[from - 1]: a module's
// next forward range starts a little after its last one, and galloping
// there reads a few rows near it where a binary search over all rows missed
// the cache at every step (40% of the module stats at 10M rows).
size_t firstFrom(const std::vector<Allocation>& allocs, Ns t, size_t from) {
  auto before = [](const Allocation& a, Ns v) { return a.alloc < v; };
  const size_t n = allocs.size();
  size_t lo = 0, hi = n;
  if (from > 0 && from <= n && allocs[from - 1].alloc < t) {
    // Every row before lo is made before t; the step doubles until a row
    // at t or later bounds the search.
    size_t step = 1;
    for (lo = from; lo + step <= n && allocs[lo + step - 1].alloc < t; step *= 2) lo += step;
    hi = std::min(n, lo + step);
  }
  return static_cast<size_t>(std::lower_bound(allocs.begin() + static_cast<std::ptrdiff_t>(lo),
                                              allocs.begin() + static_cast<std::ptrdiff_t>(hi), t, before) -
                             allocs.begin());
}

// Bytes allocated inside any of `forward` and freed inside the span of
// `backward` (allocations are sorted by allocation time). `from`: where the
// module's last forward range began in `allocs`, kept for the next.
Bytes savedBytes(const std::vector<Allocation>& allocs, const AllocationFilter& filter,
                 const StepRanges& sr, size_t& from) {
  if (sr.backward.empty()) return 0;
  Ns bs = sr.backward.front()->start, be = sr.backward.front()->end;
  for (const Range* b : sr.backward) {
    bs = std::min(bs, b->start);
    be = std::max(be, b->end);
  }
  Bytes total = 0;
  for (const Range* f : sr.forward) {
    from = firstFrom(allocs, f->start, from);
    for (auto it = allocs.begin() + static_cast<std::ptrdiff_t>(from); it != allocs.end() && it->alloc <= f->end; ++it) {
      if (filter.matches(*it) && it->freed() && it->free >= bs && it->free <= be)
        sat::addTo(total, it->bytes);
    }
  }
  return total;
}

using StepsByName = std::unordered_map<std::string, std::map<int64_t, StepRanges>>;

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
  // name -> step -> ranges; std::map keeps steps ordered.
  StepsByName by_name;
  std::unordered_map<std::string, ModuleStats> stats;
  for (const Range& r : trace.ranges) {
    if (r.domain != RangeDomain::Module) continue;
    if (r.phase == Phase::User) continue;
    StepRanges& sr = by_name[r.name][r.step];
    (r.phase == Phase::Forward ? sr.forward : sr.backward).push_back(&r);
    ModuleStats& m = stats[r.name];
    if (m.name.empty()) {
      m.name = r.name;
      m.depth = r.depth;
      m.first_forward = r.phase == Phase::Forward ? r.start : INT64_MAX;
    } else if (r.phase == Phase::Forward) {
      m.first_forward = std::min(m.first_forward, r.start);
    }
    if (r.phase == Phase::Forward && r.parent == 0) m.root = true;
  }
  std::vector<ModuleStats> out;
  for (auto& [name, steps] : by_name) {
    ModuleStats m = stats[name];
    int64_t n_steps = 0, calls = 0, bcalls = 0;
    Ns fwd = 0, bwd = 0;
    Bytes saved = 0, in = 0, out_b = 0;
    size_t from = 0;
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
      sat::addTo(saved, savedBytes(trace.allocations, filter, sr, from));
    }
    if (n_steps == 0) continue;
    m.steps = static_cast<int>(n_steps);
    m.calls = static_cast<double>(calls) / n_steps;
    m.backward_calls = static_cast<double>(bcalls) / n_steps;
    m.forward_ns = fwd / n_steps;
    m.backward_ns = bwd / n_steps;
    m.saved_bytes = saved / n_steps;
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
