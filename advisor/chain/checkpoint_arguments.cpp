#include "chain/checkpoint_arguments.h"

#include <algorithm>
#include <map>

#include "saturating.h"

namespace gcprof::advisor {

std::vector<const Range*> callsStartingAt(const Trace& trace, const StepLayout& step, int k) {
  const std::vector<UnitWindow>& u = step.units;
  if (k < 0 || k >= static_cast<int>(u.size())) return {};
  // After the previous unit's forward (or the step's start), up to this one's.
  Ns after = k > 0 ? u[k - 1].fwd_end : step.start;
  auto it = std::upper_bound(trace.ranges.begin(), trace.ranges.end(), after,
                             [](Ns t, const Range& r) { return t < r.start; });
  std::vector<const Range*> out;
  for (; it != trace.ranges.end() && it->start <= u[k].fwd_start; ++it) {
    const Range& r = *it;
    if (r.domain != RangeDomain::Module || r.phase != Phase::Forward) continue;
    if (r.end < u[k].fwd_end || r.end > u.back().fwd_end) continue;
    out.push_back(&r);
  }
  return out;
}

const Range* checkpointedCall(const Trace& trace, const StepLayout& step, int first, int last) {
  const std::vector<UnitWindow>& u = step.units;
  bool has_next = last + 1 < static_cast<int>(u.size());
  const Range* widest = nullptr;
  for (const Range* r : callsStartingAt(trace, step, first)) {
    if (has_next && r->end > u[last + 1].fwd_start) continue;
    if (!widest || r->end - r->start > widest->end - widest->start) widest = r;
  }
  return widest;
}

namespace {

// Of `candidates` (largest first, the later born first among equal sizes),
// the largest-first selection that adds up to exactly `total`; empty when
// it does not add up.
std::vector<const Allocation*> largestFirst(const std::vector<const Allocation*>& candidates, Bytes total) {
  std::vector<const Allocation*> out;
  Bytes left = total;
  for (const Allocation* a : candidates) {
    if (a->bytes > left) continue;
    out.push_back(a);
    left -= a->bytes;
    if (left == 0) return out;
  }
  return {};
}

// A tensor the units before `call` saved for their backward: born in the
// forward of one of them and freed in the backward of one of them (with
// sub-module units, GELU's output is born in `activation_fn` and freed in
// `fc2`'s backward). Such a tensor is their business, not an argument of a
// later call.
bool savedByEarlierUnits(const Allocation& a, const StepLayout& step, const Range& call) {
  if (!a.freed()) return false;
  bool born = false, freed = false;
  for (const UnitWindow& u : step.units) {
    if (u.fwd_end > call.start) continue;
    born = born || (a.alloc >= u.fwd_start && a.alloc <= u.fwd_end);
    freed = freed || (a.free >= u.bwd_start && a.free <= u.bwd_end);
  }
  return born && freed;
}

// The match of a call's arguments, and the candidates it could have taken
// instead: not taken, of the size of one it took (the selection goes by
// size, so any of them adds up the same).
struct ArgumentMatch {
  std::vector<const Allocation*> taken;
  std::vector<const Allocation*> alike;
};

ArgumentMatch matchArguments(const Trace& trace, const AllocationFilter& filter, const StepLayout& step,
                             const Range& call) {
  if (call.input_bytes <= 0) return {};
  // Device memory read at segment level (the native caching allocator, when
  // the job set its own PYTORCH_CUDA_ALLOC_CONF): a segment holds many
  // tensors, so no set of segments is a call's arguments, even when their
  // sizes happen to add up (docs/cuda.md).
  if (filter.device && filter.kind == AllocKind::Segment) return {};
  std::vector<const Allocation*> candidates;
  auto begin = std::lower_bound(trace.allocations.begin(), trace.allocations.end(), step.start,
                                [](const Allocation& a, Ns t) { return a.alloc < t; });
  for (auto it = begin; it != trace.allocations.end() && it->alloc < call.start; ++it) {
    const Allocation& a = *it;
    if (!filter.matches(a) || a.bytes <= 0 || a.bytes > call.input_bytes) continue;
    if (a.freed() && a.free <= call.end) continue;
    candidates.push_back(&a);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const Allocation* a, const Allocation* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->alloc > b->alloc;
  });
  std::vector<const Allocation*> taken = largestFirst(candidates, call.input_bytes);
  if (taken.empty()) {
    // An earlier unit's saved activation can be the largest candidate and
    // leave a remainder nothing adds up to (HF Whisper under bf16 autocast:
    // an encoder block's 4,000,000-byte attention weights taken first for a
    // decoder block passed 4,048,000 bytes, its hidden state, the causal mask
    // and the encoder's output); without those the arguments are found.
    candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                    [&](const Allocation* a) { return savedByEarlierUnits(*a, step, call); }),
                     candidates.end());
    taken = largestFirst(candidates, call.input_bytes);
  }
  ArgumentMatch m;
  for (const Allocation* a : candidates) {
    bool is_taken = std::find(taken.begin(), taken.end(), a) != taken.end();
    bool size_taken = std::any_of(taken.begin(), taken.end(), [&](const Allocation* t) { return t->bytes == a->bytes; });
    if (!is_taken && size_taken) m.alike.push_back(a);
  }
  m.taken = std::move(taken);
  return m;
}

}  // namespace

std::vector<const Allocation*> callArguments(const Trace& trace, const AllocationFilter& filter,
                                             const StepLayout& step, const Range& call) {
  return matchArguments(trace, filter, step, call).taken;
}

ArgumentHolds argumentHolds(const Trace& trace, const AllocationFilter& filter, const StepLayout& step, int k) {
  ArgumentHolds out;
  if (k < 0 || k >= static_cast<int>(step.units.size())) return out;
  // A checkpoint beginning with unit k holds its arguments to the end of k's
  // backward at the latest (plan_events.cpp, holdArguments): what the
  // recorded run freed before then is what holding changes.
  const Ns until = step.units[k].bwd_end, backward = step.units.back().bwd_start;
  auto freedBefore = [](const Allocation* a, Ns t) { return a->freed() && a->free < t; };
  for (const Range* call : callsStartingAt(trace, step, k)) {
    ArgumentMatch m = matchArguments(trace, filter, step, *call);
    Bytes held = 0;
    for (const Allocation* a : m.taken)
      if (freedBefore(a, backward)) {
        held += a->bytes;
        out.freed = std::max(out.freed, a->free);
      }
    out.held = std::max(out.held, held);
    // Per size: as many of the tensors holding would change as the match
    // took of those it leaves as they are.
    std::map<Bytes, std::pair<int, int>> swaps;  // size -> (taken, not held; alike, held)
    for (const Allocation* t : m.taken)
      if (!freedBefore(t, until)) ++swaps[t->bytes].first;
    for (const Allocation* a : m.alike)
      if (freedBefore(a, until)) ++swaps[a->bytes].second;
    Bytes untold = 0;
    for (const auto& [size, n] : swaps) untold = sat::add(untold, sat::mul(size, std::min(n.first, n.second)));
    out.untold = std::max(out.untold, untold);
  }
  return out;
}

}  // namespace gcprof::advisor
