#include "units/step_layout.h"

#include <algorithm>
#include <climits>
#include <unordered_map>

#include "units/module_stats.h"

namespace gcprof::advisor {

std::pair<Ns, Ns> runSpan(const Trace& t) {
  Ns lo = INT64_MAX, hi = INT64_MIN;
  for (const Allocation& a : t.allocations) {
    lo = std::min(lo, a.alloc);
    hi = std::max(hi, std::max(a.alloc, a.free));
  }
  for (const Range& r : t.ranges) {
    lo = std::min(lo, r.start);
    hi = std::max(hi, r.end);
  }
  if (lo > hi) lo = hi = 0;
  return {lo, hi};
}

namespace {

struct Span {
  Ns fs = INT64_MAX, fe = INT64_MIN, bs = INT64_MAX, be = INT64_MIN;
  Ns forward_ns = 0;
  Bytes input_bytes = 0, output_bytes = 0;
  bool device = true;
  int forwards = 0, backwards = 0;
  bool skipped = false;
};

// "model.decoder.layers.3" and "model.decoder.layers.2", or torchvision
// DenseNet's "features.denseblock4.denselayer16" and "...denselayer15": two
// entries of one numbered list of blocks (equal up to a number at the end).
bool neighboursInOneList(const std::string& a, const std::string& b) {
  auto stem = [](const std::string& s) {
    size_t last = s.find_last_not_of("0123456789");
    return last == std::string::npos ? 0 : last + 1;
  };
  size_t sa = stem(a), sb = stem(b);
  return sa > 0 && sa == sb && sa < a.size() && sb < b.size() && a.compare(0, sa, b, 0, sb) == 0;
}

// "up_blocks.0" and "down_blocks.1": the ends of two numbered lists of blocks
// under one parent, a U-Net's down and up paths (diffusers
// UNet2DConditionModel, where every block also reads the time embedding).
bool entriesOfSiblingLists(const std::string& a, const std::string& b) {
  auto list = [](const std::string& s) {
    size_t dot = s.rfind('.');
    bool numbered = dot != std::string::npos && dot + 1 < s.size() &&
                    s.find_first_not_of("0123456789", dot + 1) == std::string::npos;
    return numbered ? s.substr(0, dot) : std::string();
  };
  std::string la = list(a), lb = list(b);
  auto parent = [](const std::string& l) {
    size_t dot = l.rfind('.');
    return dot == std::string::npos ? std::string() : l.substr(0, dot);
  };
  return !la.empty() && !lb.empty() && la != lb && parent(la) == parent(lb) &&
         la.find_first_of("0123456789") == std::string::npos &&
         lb.find_first_of("0123456789") == std::string::npos;
}

// A unit's backward range ends when the gradients of all its inputs are
// complete (backward_ranges.py). Every decoder layer of an encoder-decoder
// (HF BART, Whisper) also reads the encoder's output, whose gradient
// completes only when the last decoder layer is done: all their backward
// windows end at that one moment, nested instead of following each other,
// though each layer's own work is over when the next one's backward starts.
// A torchvision DenseNet layer is passed the list of all earlier features of
// its dense block, the block's input among them: its window ends with the
// block's backward, for the same reason. Such a window is taken to end where the next one starts, only when all of
// this holds, which a sibling branch of one block does not pass (ResNet's
// bottleneck: `downsample` reads the block input with `conv1`, and its
// window nests bn3's..conv1's; ending it early let a plan through that
// verified 5.6% off, e2e.public.ResNet50):
// - the two are neighbours in one numbered list of blocks (layers.3, layers.2;
//   denselayer16, denselayer15), or the first of one list and the last of a
//   sibling list (a diffusers UNet's up_blocks.0 and down_blocks.1: every
//   block reads the time embedding, whose gradient completes at the end);
// - the next window starts inside this one and ends with it (the one
//   gradient completing ends both, 1/kTogether of the next window apart at most);
// - this unit is not passed exactly what the next one returns: it reads a
//   tensor besides the chain's (more bytes), or the next one's output also
//   goes elsewhere (fewer: a U-Net's down block returns its skip
//   connections too, diffusers' down_blocks.0 2.5 MiB to down_blocks.1's
//   276 KiB, which also reads the time embedding); unknown (0, without the
//   python shim): refused.
constexpr Ns kTogether = 10;  // at most 1/10 of the next window apart (a preempted hook)

void endLateBackwards(std::vector<Span>& spans, const std::vector<std::string>& names) {
  for (size_t k = spans.size() - 1; k > 0; --k) {
    Span &later = spans[k], &next = spans[k - 1];
    bool nested = next.bs >= later.bs && next.bs < later.be;
    Ns apart = later.be > next.be ? later.be - next.be : next.be - later.be;
    bool together = apart <= (next.be - next.bs) / kTogether;
    bool reads_more = later.forwards == 1 && next.forwards == 1 && next.output_bytes > 0 &&
                      later.input_bytes > 0 && later.input_bytes != next.output_bytes;
    bool neighbours = neighboursInOneList(names[k], names[k - 1]) ||
                      entriesOfSiblingLists(names[k], names[k - 1]);
    if (nested && together && reads_more && neighbours)
      later.be = next.bs;
  }
}

// A unit with neither a forward nor a backward in a step did not run in it:
// HF Wav2Vec2, HuBERT and other models trained with LayerDrop skip each
// layer at random per step (layerdrop=0.1 by default), so with a few layers
// nearly every step misses one. The step is still a chain of the units
// that ran; a skipped unit gets empty windows at its place in the chain
// (its forward where the previous unit's ends, its backward where the
// previous unit's starts), so a plan that checkpoints it changes nothing in
// that step, as when the job runs it. Needs one unit that ran.
void placeSkippedUnits(std::vector<Span>& spans) {
  auto skipped = [](const Span& s) { return s.forwards == 0 && s.backwards == 0; };
  if (std::all_of(spans.begin(), spans.end(), skipped)) return;
  for (size_t k = 0; k < spans.size(); ++k) {
    if (!skipped(spans[k])) continue;
    Span& s = spans[k];
    if (k > 0) {  // the previous one ran or was placed already
      s.fs = s.fe = spans[k - 1].fe;
      s.bs = s.be = spans[k - 1].bs;
    } else {
      size_t ran = 1;
      while (skipped(spans[ran])) ++ran;
      s.fs = s.fe = spans[ran].fs;
      s.bs = s.be = spans[ran].be;
    }
    s.forwards = s.backwards = 1;  // an empty call
    s.forward_ns = 0;
    s.skipped = true;
  }
}

std::string checkChain(std::vector<Span> spans, const std::vector<std::string>& names,
                       std::vector<UnitWindow>& out) {
  size_t n = spans.size();
  placeSkippedUnits(spans);
  for (size_t k = 0; k < n; ++k) {
    if (spans[k].forwards == 0) return "no forward of " + names[k];
    if (spans[k].backwards == 0) return "no backward of " + names[k];
  }
  // Forward 0..N-1 then backward N-1..0, each starting where the previous ended.
  for (size_t k = 0; k + 1 < n; ++k)
    if (spans[k + 1].fs < spans[k].fe)
      return "forward of " + names[k + 1] + " starts before " + names[k] + "'s ends";
  if (spans[n - 1].bs < spans[n - 1].fe)
    return "backward of " + names[n - 1] + " starts before its forward ends";
  endLateBackwards(spans, names);
  for (size_t k = n - 1; k > 0; --k)
    if (spans[k - 1].bs < spans[k].be)
      return "backward of " + names[k - 1] + " starts before " + names[k] + "'s ends";
  out.resize(n);
  for (size_t k = 0; k < n; ++k) {
    out[k] = {spans[k].fs, spans[k].fe, spans[k].bs, spans[k].be, spans[k].forward_ns,
              spans[k].device, spans[k].input_bytes, spans[k].output_bytes, spans[k].skipped};
  }
  return "";
}

// A unit's ranges in one step, by start time.
struct UnitRanges {
  std::vector<const Range*> forward, backward;
};

Span spanOf(const std::vector<const Range*>& forward, const std::vector<const Range*>& backward) {
  Span sp;
  for (const Range* r : forward) {
    sp.fs = std::min(sp.fs, r->start);
    sp.fe = std::max(sp.fe, r->end);
    sp.forward_ns += rangeDuration(*r);
    sp.device = sp.device && r->device_ns >= 0;
    sp.input_bytes += r->input_bytes;
    sp.output_bytes += r->output_bytes;
    ++sp.forwards;
  }
  for (const Range* r : backward) {
    sp.bs = std::min(sp.bs, r->start);
    sp.be = std::max(sp.be, r->end);
    ++sp.backwards;
  }
  return sp;
}

// Leaves out a unit's forward calls whose graph no backward went through: a
// WGAN's five critic steps each call the generator on fakes they detach (or
// make under no_grad), then the generator's own step calls it once more and
// runs its backward, all in one step (one training iteration). A call is
// kept when a backward of the unit starts before its next call; only when
// that leaves as many calls as backwards (a block called several times in
// one pass, with a backward for each call, stays as it is: weight sharing).
// The calls left out are carried as recorded, like an evaluation pass.
void dropForwardOnlyCalls(UnitRanges& u) {
  if (u.backward.empty() || u.forward.size() <= u.backward.size()) return;
  std::vector<const Range*> kept;
  size_t b = 0;
  for (size_t i = 0; i < u.forward.size(); ++i) {
    Ns next = i + 1 < u.forward.size() ? u.forward[i + 1]->start : INT64_MAX;
    while (b < u.backward.size() && u.backward[b]->start < u.forward[i]->end) ++b;
    if (b < u.backward.size() && u.backward[b]->start < next) kept.push_back(u.forward[i]);
  }
  if (kept.size() == u.backward.size()) u.forward = std::move(kept);
}

// The number of forward/backward passes every unit takes part in, once each,
// when that number is the same for all units and at least 2 (gradient
// accumulation); 0 otherwise.
size_t uniformPasses(const std::vector<UnitRanges>& units) {
  size_t k = units.empty() ? 0 : units.front().forward.size();
  for (const UnitRanges& u : units)
    if (u.forward.size() != k || u.backward.size() != k) return 0;
  return k >= 2 ? k : 0;
}

// Why units called several times in one step are not a chain, in the user's terms.
std::string repeatedCallProblem(const std::vector<UnitRanges>& units,
                                const std::vector<std::string>& names) {
  for (size_t k = 0; k < units.size(); ++k) {
    size_t calls = units[k].forward.size();
    if (calls < 2) continue;
    return names[k] + " is called " + std::to_string(calls) +
           " times per step while other units are not, or its calls interleave with theirs: a "
           "module called several times in one forward pass (weight sharing, a loop over one "
           "block) keeps every call's tensors under one name, so its savings and recomputation "
           "cannot be planned; choose units that run once per forward pass (--units REGEX: their "
           "callers or sub-modules that are not shared)";
  }
  return "";
}

// Why k passes of every unit are not micro-steps, when all their forwards
// run before any backward: one loss over several passes of the model (two
// views of a batch, a Siamese pair) holds every pass's activations at once,
// where the micro-steps of gradient accumulation follow each other. Empty
// when the passes are not of that kind.
std::string overlappingPassesProblem(const std::vector<UnitRanges>& units, size_t k) {
  Ns last_forward = INT64_MIN, first_backward = INT64_MAX;
  for (const UnitRanges& u : units) {
    for (const Range* r : u.forward) last_forward = std::max(last_forward, r->end);
    for (const Range* r : u.backward) first_backward = std::min(first_backward, r->start);
  }
  if (last_forward > first_backward) return "";
  return "every unit is called " + std::to_string(k) + " times per step, in " + std::to_string(k) +
         " forward passes whose backward runs after all of them (one loss over several passes of the "
         "model: two views of a batch, a Siamese pair); gcprof plans passes that follow each other "
         "(gradient accumulation), not passes held at once. To plan it, run the views as one batch "
         "(torch.cat them, split the output)";
}

// Splits a step of k forward/backward passes (gradient accumulation) into k
// micro-steps, each a chain of its own; false when a pass is not in chain order.
bool splitPasses(const StepLayout& step, const std::vector<UnitRanges>& units, size_t k,
                 const std::vector<std::string>& names, std::vector<StepLayout>& out) {
  std::vector<StepLayout> passes;
  for (size_t j = 0; j < k; ++j) {
    std::vector<Span> spans;
    for (const UnitRanges& u : units) spans.push_back(spanOf({u.forward[j]}, {u.backward[j]}));
    StepLayout pass{step.step, 0, 0, {}, false, ""};
    if (!checkChain(spans, names, pass.units).empty()) return false;
    pass.complete = true;
    passes.push_back(std::move(pass));
  }
  for (size_t j = 0; j < k; ++j) {
    passes[j].start = j == 0 ? step.start : passes[j - 1].end;
    passes[j].end = j + 1 == k ? step.end : passes[j].units.front().bwd_end;
    if (j > 0 && passes[j].start > passes[j].units.front().fwd_start) return false;
  }
  for (StepLayout& p : passes) out.push_back(std::move(p));
  return true;
}

// The steps the units are laid out in: the recorded ones or, without step
// markers, the whole run as one pseudo-step (-1).
std::vector<StepLayout> recordedSteps(const Trace& trace) {
  std::vector<StepLayout> steps;
  for (const Step& s : trace.steps) steps.push_back({s.index, s.start, s.end, {}, false, ""});
  if (steps.empty()) {
    auto [lo, hi] = runSpan(trace);
    steps.push_back({-1, lo, hi, {}, false, ""});
  }
  return steps;
}

// Each unit's forward and backward ranges, by step: [step][unit].
std::vector<std::vector<UnitRanges>> unitRangesByStep(const Trace& trace, const std::vector<std::string>& units,
                                                      const std::vector<StepLayout>& steps, bool pseudo) {
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < units.size(); ++i) index[units[i]] = i;
  std::unordered_map<int64_t, size_t> step_at;
  if (!pseudo)
    for (size_t i = 0; i < steps.size(); ++i) step_at[steps[i].step] = i;
  std::vector<std::vector<UnitRanges>> ranges(steps.size(), std::vector<UnitRanges>(units.size()));
  for (const Range& r : trace.ranges) {
    if (r.domain != RangeDomain::Module || r.phase == Phase::User) continue;
    auto u = index.find(r.name);
    if (u == index.end()) continue;
    size_t si = 0;
    if (!pseudo) {
      auto it = step_at.find(r.step);
      if (it == step_at.end()) continue;  // outside every step: carried as recorded
      si = it->second;
      // A range keeps the index of the last step begun, also after that step
      // ended: a validation pass under no_grad between optimizer steps is
      // not a second call of the units in the step. Carried as recorded.
      if (r.start > steps[si].end) continue;
    }
    UnitRanges& ur = ranges[si][u->second];
    (r.phase == Phase::Forward ? ur.forward : ur.backward).push_back(&r);
  }
  return ranges;
}

// Lays one step's units out into `layout` (as its passes, under gradient
// accumulation), or says there why they are not a chain in it.
void layOutStep(StepLayout st, std::vector<UnitRanges>& ur, const std::vector<std::string>& units, bool pseudo,
                RunLayout& layout) {
  if (units.empty()) {
    st.problem = "no units";
    layout.steps.push_back(std::move(st));
    return;
  }
  for (UnitRanges& u : ur) {
    auto byStart = [](const Range* a, const Range* b) { return a->start < b->start; };
    std::sort(u.forward.begin(), u.forward.end(), byStart);
    std::sort(u.backward.begin(), u.backward.end(), byStart);
    dropForwardOnlyCalls(u);
  }
  std::vector<Span> spans;
  for (const UnitRanges& u : ur) spans.push_back(spanOf(u.forward, u.backward));
  st.problem = checkChain(spans, units, st.units);
  // A unit called more often than the others can still look like a chain
  // (two calls back to back); its windows would then mix both calls.
  bool same_calls = std::all_of(ur.begin(), ur.end(), [&](const UnitRanges& u) {
    return u.forward.size() == ur.front().forward.size();
  });
  if (st.problem.empty() && !same_calls) st.problem = repeatedCallProblem(ur, units);
  if (!st.problem.empty()) {
    size_t k = uniformPasses(ur);
    if (k && splitPasses(st, ur, k, units, layout.steps)) {
      layout.complete += k;
      return;
    }
    std::string repeated = k ? overlappingPassesProblem(ur, k) : "";
    if (repeated.empty()) repeated = repeatedCallProblem(ur, units);
    if (!repeated.empty()) st.problem = repeated;
  }
  st.complete = st.problem.empty();
  if (st.complete) {
    ++layout.complete;
    if (pseudo) {  // the pseudo-step spans the units' work, not the set-up around it
      st.start = std::min(st.start, st.units.front().fwd_start);
      st.end = std::max(st.end, st.units.front().bwd_end);
    }
  }
  layout.steps.push_back(std::move(st));
}

// The complete steps but the first (with all its micro-steps), when others
// remain.
std::vector<size_t> steadySteps(const RunLayout& layout) {
  std::vector<size_t> complete;
  for (size_t si = 0; si < layout.steps.size(); ++si)
    if (layout.steps[si].complete) complete.push_back(si);
  if (complete.size() < 2) return complete;
  int64_t first = layout.steps[complete.front()].step;
  std::vector<size_t> later;
  for (size_t si : complete)
    if (layout.steps[si].step != first) later.push_back(si);
  if (later.empty()) later.assign(complete.begin() + 1, complete.end());
  return later;
}

}  // namespace

RunLayout stepLayouts(const Trace& trace, const std::vector<std::string>& units) {
  bool pseudo = trace.steps.empty();
  std::vector<StepLayout> steps = recordedSteps(trace);
  std::vector<std::vector<UnitRanges>> ranges = unitRangesByStep(trace, units, steps, pseudo);
  RunLayout layout;
  for (size_t si = 0; si < steps.size(); ++si) layOutStep(std::move(steps[si]), ranges[si], units, pseudo, layout);
  layout.steady = steadySteps(layout);
  return layout;
}

}  // namespace gcprof::advisor
