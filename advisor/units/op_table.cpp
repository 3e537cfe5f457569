#include "units/op_table.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "median.h"
#include "units/run_scalars.h"
#include "units/step_regions.h"

namespace gcprof::advisor {
namespace {

const std::string kPrefix = "op ";  // profiler/python/gcprof/op_ranges.py

// UnitOp::mutated_later, over one unit's calls in forward order.
void markMutated(std::vector<UnitOp>& ops) {
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!isInPlaceCall(ops[i].key)) continue;
    for (size_t j = i; j-- > 0;) {
      if (isInPlaceCall(ops[j].key) || ops[j].kept + ops[j].lingering == 0) continue;
      ops[j].mutated_later = true;
      break;
    }
  }
}

}  // namespace

bool isInPlaceCall(const std::string& key) {
  // "aten.relu_.default#0": the operator's name is the part after "aten."
  // up to the overload.
  std::string name = key.substr(0, key.rfind('#'));
  if (name.compare(0, 5, "aten.") == 0) name = name.substr(5);
  name = name.substr(0, name.find('.'));
  return !name.empty() && name.back() == '_';
}

bool isOpRange(const Range& r) {
  return r.phase == Phase::User && r.name.compare(0, kPrefix.size(), kPrefix) == 0;
}

OpIndex::OpIndex(const Trace& trace) {
  for (const Range& r : trace.ranges)
    if (isOpRange(r)) ops_.push_back(&r);
  std::sort(ops_.begin(), ops_.end(), [](const Range* a, const Range* b) { return a->start < b->start; });
  selective_ns_per_op_ = medianScalar(trace, "selective_ns_per_op");
}

size_t OpIndex::count(Ns from, Ns to) const {
  auto byStart = [](const Range* r, Ns t) { return r->start < t; };
  auto first = std::lower_bound(ops_.begin(), ops_.end(), from, byStart);
  auto past = std::upper_bound(ops_.begin(), ops_.end(), to,
                               [](Ns t, const Range* r) { return t < r->start; });
  return first < past ? static_cast<size_t>(past - first) : 0;
}

std::vector<OpCall> OpIndex::within(Ns from, Ns to) const {
  std::vector<OpCall> out;
  auto it = std::lower_bound(ops_.begin(), ops_.end(), from,
                             [](const Range* r, Ns t) { return r->start < t; });
  std::map<std::string, int> seen;
  for (; it != ops_.end() && (*it)->start <= to; ++it) {
    std::string op = (*it)->name.substr(kPrefix.size());
    int n = seen[op]++;
    out.push_back({op + "#" + std::to_string(n), (*it)->start, std::max((*it)->end, (*it)->start)});
  }
  return out;
}

std::vector<OpCall> savedCalls(const std::vector<OpCall>& calls, const std::vector<std::string>& save) {
  std::unordered_set<std::string> names(save.begin(), save.end());
  std::vector<OpCall> out;
  for (const OpCall& c : calls)
    if (names.count(c.key)) out.push_back(c);
  return out;
}

const OpCall* callAt(const std::vector<OpCall>& calls, Ns t) {
  auto c = std::upper_bound(calls.begin(), calls.end(), t,
                            [](Ns v, const OpCall& call) { return v < call.start; });
  if (c == calls.begin() || t > std::prev(c)->end) return nullptr;
  return &*std::prev(c);
}

OutputFate outputFate(const Allocation& a, const OpCall& call, const StepRegions& reg, int unit) {
  if (a.freed() && a.free <= call.end) return OutputFate::Workspace;
  int freed = a.freed() ? reg.regionOf(a.free) : StepRegions::kOutside;
  int back = reg.backward(unit);
  if (freed == back) return OutputFate::Kept;
  if (freed != StepRegions::kOutside && freed < back) return OutputFate::Lingering;
  return OutputFate::Other;
}

std::vector<std::vector<UnitOp>> unitOps(const Trace& trace, const AllocationFilter& filter,
                                         const RunLayout& layout) {
  size_t n = 0;
  for (const StepLayout& s : layout.steps) n = std::max(n, s.units.size());
  std::vector<std::vector<UnitOp>> out(n);
  OpIndex index(trace);
  if (index.empty()) return out;
  std::vector<bool> steady(layout.steps.size(), false);
  for (size_t i : layout.steady) steady[i] = true;
  // Per unit: key -> position in out[k]; times per key over the steady steps.
  std::vector<std::map<std::string, size_t>> pos(n);
  std::vector<std::vector<std::vector<Ns>>> times(n);
  for (size_t si = 0; si < layout.steps.size(); ++si) {
    const StepLayout& step = layout.steps[si];
    if (!step.complete) continue;
    StepRegions reg(step);
    for (size_t k = 0; k < step.units.size(); ++k) {
      const UnitWindow& u = step.units[k];
      std::vector<OpCall> calls = index.within(u.fwd_start, u.fwd_end);
      std::vector<Bytes> kept(calls.size(), 0), lingering(calls.size(), 0);
      std::vector<Ns> lingering_last_free(calls.size(), 0), lingering_last_birth(calls.size(), -1);
      Ns last_kept_birth = -1;
      auto first = std::lower_bound(trace.allocations.begin(), trace.allocations.end(), u.fwd_start,
                                     [](const Allocation& a, Ns t) { return a.alloc < t; });
      for (auto it = first; it != trace.allocations.end() && it->alloc <= u.fwd_end; ++it) {
        const Allocation& a = *it;
        if (!filter.matches(a) || a.bytes <= 0) continue;
        if (a.freed() && reg.regionOf(a.free) == reg.backward(static_cast<int>(k)))
          last_kept_birth = std::max(last_kept_birth, a.alloc);
        // The call that was running when it was made (none: between calls,
        // the shim, python).
        const OpCall* c = callAt(calls, a.alloc);
        if (!c) continue;
        size_t ci = static_cast<size_t>(c - calls.data());
        switch (outputFate(a, *c, reg, static_cast<int>(k))) {
          case OutputFate::Kept: kept[ci] += a.bytes; break;
          case OutputFate::Lingering:
            lingering[ci] += a.bytes;
            lingering_last_free[ci] = std::max(lingering_last_free[ci], a.free);
            lingering_last_birth[ci] = std::max(lingering_last_birth[ci], a.alloc);
            break;
          default: break;
        }
      }
      for (size_t ci = 0; ci < calls.size(); ++ci) {
        auto [p, fresh] = pos[k].emplace(calls[ci].key, out[k].size());
        if (fresh) {
          out[k].push_back({calls[ci].key, 0, 0, 0, false, false});
          times[k].emplace_back();
        }
        UnitOp& op = out[k][p->second];
        op.kept = std::max(op.kept, kept[ci]);
        op.lingering = std::max(op.lingering, lingering[ci]);
        if (lingering[ci] > 0)
          op.lingering_unpriced = op.lingering_unpriced || lingering_last_free[ci] > u.fwd_end ||
                                  lingering_last_birth[ci] > last_kept_birth;
        if (steady[si]) times[k][p->second].push_back(calls[ci].end - calls[ci].start);
      }
    }
  }
  for (size_t k = 0; k < n; ++k) {
    for (size_t i = 0; i < out[k].size(); ++i) out[k][i].ns = median(times[k][i]);
    markMutated(out[k]);
  }
  return out;
}

}  // namespace gcprof::advisor
