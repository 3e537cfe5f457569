#include "simulate/plan_events.h"

#include <algorithm>
#include <climits>
#include <unordered_map>

#include "chain/checkpoint_arguments.h"
#include "chain/recompute_cost.h"
#include "chain/reentrant_holds.h"
#include "memory/cache_allocations.h"
#include "saturating.h"

namespace gcprof::advisor {
namespace {

// FSDP's parameter gathers (ranges the python shim marks "fsdp.unshard
// <module>"): the recomputation in backward uses the parameters gathered for
// backward, which the trace holds already, so a replay must not repeat them.
std::unordered_set<int64_t> parameterGathers(const Trace& trace) {
  std::unordered_set<int64_t> out;
  for (const Range& r : trace.ranges)
    if (r.domain == RangeDomain::User && r.name.rfind("fsdp.unshard ", 0) == 0) out.insert(r.id);
  return out;
}

}  // namespace

PlanContext::PlanContext(const Trace& t, const AllocationFilter& f, const RunLayout& l)
    : trace(t), filter(f), gathers(parameterGathers(t)), ops(t), reentrant(reentrantCheckpoint(t)), forward(t, f),
      early_frees(t.allocations, l.steps.size()), casts(t, f, l) {
  const InPlaceOutputs inplace(t, f);
  kept_outputs_.resize(l.steps.size());
  first_rows_.resize(l.steps.size());
  const std::vector<Allocation>& rows = t.allocations;
  for (size_t si = 0; si < l.steps.size(); ++si) {
    const StepLayout& step = l.steps[si];
    if (!step.complete) continue;
    const StepRegions reg(step);
    for (int k = 0; k < static_cast<int>(step.units.size()); ++k) {
      kept_outputs_[si].push_back(inplace.output(step, reg, k));
      auto first = std::lower_bound(rows.begin(), rows.end(), step.units[static_cast<size_t>(k)].fwd_start,
                                    [](const Allocation& a, Ns at) { return a.alloc < at; });
      first_rows_[si].push_back(static_cast<size_t>(first - rows.begin()));
    }
  }
}

void sortInTimeOrder(std::vector<SimEvent>& events) {
  // A lambda, not `before` itself: std::sort then inlines the comparison
  // instead of calling through a function pointer.
  std::sort(events.begin(), events.end(), [](const SimEvent& x, const SimEvent& y) { return before(x, y); });
}

namespace {

// One segment in one step: where each allocation of its forward goes.
class SegmentEvents {
 public:
  SegmentEvents(const PlanContext& ctx, const StepLayout& step, size_t si, const StepRegions& reg,
                const Segment& seg, StepEvents& out)
      : ctx_(ctx), step_(step), si_(si), reg_(reg), seg_(seg), out_(out), first_(step.units[seg.first]),
        last_(step.units[seg.last]) {
    // A selective segment's kept operator calls in this step, as time
    // windows: what is born inside them is not dropped and not replayed, and
    // their time is not recomputed (chain/recompute_cost.h).
    if (seg.selective()) kept_ = keptCalls(ctx.ops, step, seg.first, seg.save);
    cost_ = stepRecomputeNs(step, seg.first, seg.last, kept_,
                            seg.selective() ? selectiveDispatchNs(ctx.ops, step, seg.first) : 0);
    anchor_ = last_.bwd_start;
    replay_phase_ = reg.regionOf(anchor_) == reg.backward(seg.last) ? 0 : 2;
    replay_end_ = sat::add(sat::sub(last_.fwd_end, first_.fwd_start), 1);
    lo_ = StepRegions::forward(seg.first);
    hi_ = StepRegions::forward(seg.last);
    back_first_ = reg.backward(seg.last);
    back_last_ = reg.backward(seg.first);
    // The segment's output when its last unit ends in place: its consumer
    // holds it, so checkpointing does not drop it (chain/in_place_outputs.h).
    kept_output_ = ctx.keptOutput(si, seg.last);
    // A reentrant checkpoint (the C++ runtime) holds the replayed output and
    // its gradient until the segment's backward ends (chain/reentrant_holds.h).
    if (ctx.reentrant) holds_ = reentrantHolds(ctx.trace, ctx.filter, step, seg.first, seg.last);
    if (holds_.output_grad) hold(*holds_.output_grad, holds_.output_grad->free);
    if (!kept_output_) kept_output_ = holds_.output;
  }

  Ns make() {
    const std::vector<Allocation>& rows = ctx_.trace.allocations;
    auto it = rows.begin() + static_cast<std::ptrdiff_t>(ctx_.firstRow(si_, seg_.first));
    RegionCursor born_in(reg_);
    for (; it != rows.end() && it->alloc <= last_.fwd_end; ++it) {
      const Allocation& a = *it;
      if (!ctx_.filter.counts(a) || keptByTheLibrary(a)) continue;
      int born = born_in.at(a.alloc);
      if (born < lo_ || born > hi_) continue;
      if (!ctx_.gathers.empty() && ctx_.gathers.count(a.range)) continue;
      place(a, born, freedIn(a, born));
    }
    out_.replay({anchor_, LLONG_MAX, 0, std::max<Ns>(cost_, 1), replay_phase_, nullptr});
    out_.endReplay();
    return cost_;
  }

 private:
  void hold(const Allocation& a, Ns recorded_free) {
    if (recorded_free >= holds_.until) return;
    out_.add({recorded_free, 0, a.bytes, 0, 1, &a});
    out_.add({holds_.until, 0, -a.bytes, 0, 1, &a});
  }

  void place(const Allocation& a, int born, int freed);

  // Where `a`, born in region `born`, is freed. Within the segment's
  // forward (the common case) only that is asked, so born stands for it
  // there without a search; in the segment's backward (what autograd
  // keeps) it is searched among those regions only: one for a segment of
  // one unit.
  int freedIn(const Allocation& a, int born) const {
    if (a.free >= a.alloc && a.free <= reg_.lastOf(hi_)) return born;
    if (a.freed() && a.free >= reg_.begin() && a.free > reg_.lastOf(back_first_ - 1) &&
        a.free <= reg_.lastOf(back_last_))
      return reg_.regionAmong(a.free, back_first_, back_last_);
    return reg_.regionOf(a.free);
  }

  // The latest birth, in the segment's forward, of an allocation freed in
  // its backward (what autograd keeps, the replay's last re-made tensor
  // included); found once, when a lingering output asks.
  Ns lastKeptBirth() {
    if (last_kept_birth_ >= 0) return last_kept_birth_;
    last_kept_birth_ = 0;
    const std::vector<Allocation>& rows = ctx_.trace.allocations;
    for (auto it = rows.begin() + static_cast<std::ptrdiff_t>(ctx_.firstRow(si_, seg_.first));
         it != rows.end() && it->alloc <= last_.fwd_end; ++it)
      if (ctx_.filter.counts(*it) && it->free >= last_.bwd_start && it->free <= first_.bwd_end)
        last_kept_birth_ = std::max(last_kept_birth_, it->alloc);
    return last_kept_birth_;
  }

  const PlanContext& ctx_;
  const StepLayout& step_;
  const size_t si_;
  const StepRegions& reg_;
  const Segment& seg_;
  StepEvents& out_;
  const UnitWindow& first_;
  const UnitWindow& last_;
  std::vector<OpCall> kept_;
  Ns cost_ = 0, anchor_ = 0, replay_end_ = 0;
  Ns last_kept_birth_ = -1;  // lastKeptBirth(), once asked
  uint8_t replay_phase_ = 0;
  int lo_ = 0, hi_ = 0;
  int back_first_ = 0, back_last_ = 0;  // the regions of its backward: B_last .. B_first
  const Allocation* kept_output_ = nullptr;
  ReentrantHolds holds_;
};

// The events of allocation `a` of the segment's forward, born in region
// `born` and freed in `freed`.
void SegmentEvents::place(const Allocation& a, int born, int freed) {
  const Ns rel = sat::sub(a.alloc, first_.fwd_start);
  if (const OpCall* call = kept_.empty() ? nullptr : callAt(kept_, a.alloc)) {
    if (outputFate(a, *call, reg_, seg_.last) == OutputFate::Lingering) {
      // An output autograd does not keep, saved anyway (torchtitan's rule):
      // the checkpoint's cache holds it from the forward until the replay,
      // which uses it where the forward did. Its recorded free is cancelled;
      // it is freed in the replay where it was in the forward, or when the
      // replay ends. A replay stops once autograd has all it keeps again
      // (PyTorch's early stop): a call born after the last of those is not
      // reached, and the cache holds its output until the checkpoint dies
      // with the segment's backward (the GPT sample's fc2 output).
      out_.add({a.free, 0, a.bytes, 0, 1, &a});
      if (first_.bwd_end > a.free && a.alloc > lastKeptBirth())
        out_.add({first_.bwd_end, 0, -a.bytes, 0, 1, &a});
      else
        out_.replay({anchor_, freed <= hi_ ? sat::sub(a.free, first_.fwd_start) : replay_end_, -a.bytes, 0,
                     replay_phase_, &a});
    }
    return;  // otherwise carried as recorded: kept to the backward, not re-made
  }
  out_.remade({anchor_, rel, a.bytes, 0, replay_phase_, &a});
  if (freed >= born && freed <= hi_) {  // transient: same lifetime in the replay
    out_.replay({anchor_, sat::sub(a.free, first_.fwd_start), -a.bytes, 0, replay_phase_, &a});
    return;
  }
  int bpos = reg_.backwardPosition(freed);
  if (&a == kept_output_ && bpos >= lo_ && bpos <= hi_) {
    // Held by its consumer until the replay: freed as the replay begins.
    out_.replay({anchor_, 0, -a.bytes, 0, replay_phase_, &a});
    if (&a == holds_.output) hold(a, a.free);  // the replayed copy
  } else if (bpos >= lo_ && bpos <= hi_) {
    // Dropped: freed as the segment's forward ends, or earlier, when the
    // sub-module that made it returns without it (checkpointed_forward.h);
    // the replayed copy is freed where the recorded one was.
    const UnitWindow& unit = step_.units[seg_.first + (born - lo_) / 2];
    Ns early = ctx_.early_frees.freeTime(ctx_.forward, si_, reg_, a, unit);
    // A parameter's autocast copy: the cache holds it until it is cleared
    // (chain/autocast_casts.h).
    if (Ns cleared = ctx_.casts.clearedAt(a, anchor_); cleared >= 0)
      out_.add({std::max(cleared, early), 0, -a.bytes, 0, 1, &a});
    else if (early < unit.fwd_end)
      out_.add({early, 0, -a.bytes, 0, 1, &a});
    else
      out_.add({last_.fwd_end, 0, -a.bytes, 0, 2, &a});
  } else if (&a == holds_.output) {
    out_.add({holds_.until, 0, -a.bytes, 0, 1, &a});  // the replayed copy
  } else {
    out_.replay({anchor_, replay_end_, -a.bytes, 0, replay_phase_, &a});
  }
}

}  // namespace

Ns applySegment(const PlanContext& ctx, const StepLayout& step, size_t si, const StepRegions& reg,
                const Segment& seg, StepEvents& out) {
  return SegmentEvents(ctx, step, si, reg, seg, out).make();
}

// The arguments of each segment's checkpointed call (chain/
// checkpoint_arguments.h) are held until the segment's backward ends; the
// recorded run may have freed them earlier (HF GPT-2's attention mask, when
// the model's forward returns). The latest of the frees is kept: every
// block is passed the same mask, and the first block's checkpoint, whose
// backward ends last, decides.
void holdArguments(const PlanContext& ctx, const StepLayout& step, const Segments& plan, StepEvents& out) {
  std::unordered_map<const Allocation*, Ns> until;
  for (const Segment& seg : plan) {
    const Range* call = checkpointedCall(ctx.trace, step, seg.first, seg.last);
    if (!call) continue;
    Ns end = step.units[seg.first].bwd_end;
    for (const Allocation* a : callArguments(ctx.trace, ctx.filter, step, *call))
      if (a->freed() && a->free < end) until[a] = std::max(until[a], end);
  }
  for (const auto& [a, end] : until) {
    out.add({a->free, 0, a->bytes, 0, 1, a});  // cancels the recorded free
    out.add({end, 0, -a->bytes, 0, 1, a});
  }
}


void StepEvents::endReplay() {
  auto order = [](const SimEvent& x, const SimEvent& y) { return before(x, y); };
  // Re-made in allocation order: in before() order but for allocations of
  // one instant, which go by size.
  if (!std::is_sorted(remade_.begin(), remade_.end(), order)) sortInTimeOrder(remade_);
  sortInTimeOrder(replay_);
  const size_t begin = runs_.size();
  runs_.resize(begin + remade_.size() + replay_.size());
  std::merge(remade_.begin(), remade_.end(), replay_.begin(), replay_.end(),
             runs_.begin() + static_cast<std::ptrdiff_t>(begin), order);
  if (runs_.size() > begin) run_of_.push_back({runs_[begin].time, runs_[begin].phase, begin, runs_.size()});
  remade_.clear();
  replay_.clear();
}

bool StepEvents::appendSorted(std::vector<SimEvent>& out) {
  auto order = [](const SimEvent& x, const SimEvent& y) { return before(x, y); };
  std::sort(run_of_.begin(), run_of_.end(),
            [](const Run& x, const Run& y) { return x.time != y.time ? x.time < y.time : x.phase < y.phase; });
  // Each replay's events share one instant and phase: runs of distinct ones,
  // in order, are in order one after another. Two at one instant (units
  // with no time between them) are sorted with the rest instead.
  bool apart = true;
  for (size_t i = 1; i < run_of_.size(); ++i)
    apart = apart && (run_of_[i].time != run_of_[i - 1].time || run_of_[i].phase != run_of_[i - 1].phase);
  ordered_.clear();
  std::vector<SimEvent>& to = apart ? ordered_ : loose_;
  for (const Run& r : run_of_)
    to.insert(to.end(), runs_.begin() + static_cast<std::ptrdiff_t>(r.begin),
              runs_.begin() + static_cast<std::ptrdiff_t>(r.end));
  sortInTimeOrder(loose_);
  const size_t at = out.size();
  out.resize(at + loose_.size() + ordered_.size());
  std::merge(loose_.begin(), loose_.end(), ordered_.begin(), ordered_.end(),
             out.begin() + static_cast<std::ptrdiff_t>(at), order);
  loose_.clear();
  runs_.clear();
  run_of_.clear();
  return at == 0 || at == out.size() || !before(out[at], out[at - 1]);
}

}  // namespace gcprof::advisor
