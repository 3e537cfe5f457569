#include "chain/chain_peak.h"

#include <algorithm>

#include "saturating.h"

namespace gcprof::advisor {

SegmentSweep::SegmentSweep(const UnitChain& chain, int first)
    : c_(chain), first_(first), last_(first - 1) {}

void SegmentSweep::addPosition(int p) {
  // R_S = max over forward positions p of (bytes kept from earlier positions
  // of the segment + the most bytes born in p alive at once).
  replay_peak_ = std::max(replay_peak_, sat::add(born_prefix_, c_.born_peak[p]));
  sat::addTo(born_prefix_, c_.born_kept[p]);
  replay_peak_ = std::max(replay_peak_, born_prefix_);
}

void SegmentSweep::extend() {
  ++last_;
  if (last_ > first_) {
    addPosition(2 * last_ - 1);  // the gap FG_{last-1} is now inside the segment
    sat::addTo(recompute_, c_.gap_ns[last_ - 1]);
  }
  addPosition(2 * last_);
  sat::addTo(recompute_, c_.forward_ns[last_]);
  for (const DropBucket& b : c_.drops[last_])
    if (b.first >= first_) sat::addTo(dropped_, b.bytes);
}

Bytes SegmentSweep::recomputePeak() const {
  return sat::add(sat::add(sat::sub(c_.before_backward[last_], dropped_), replay_peak_), held());
}

SegmentEffect selectiveEffect(const UnitChain& c, int unit, const SegmentEffect& whole,
                              const SelectiveOption& option) {
  SegmentEffect e;
  e.dropped = whole.dropped - option.kept - option.lingering;
  e.recompute_peak = option.replay_peak >= 0
                         ? sat::add(sat::add(sat::sub(c.before_backward[unit], e.dropped), option.replay_peak),
                                    unit < static_cast<int>(c.held_arguments.size()) ? c.held_arguments[unit] : 0)
                         : sat::add(whole.recompute_peak, sat::add(option.kept, option.lingering));
  e.recompute_ns = std::max<Ns>(0, whole.recompute_ns - option.saved_ns);
  return e;
}

namespace {

// Where the peak lies, kept as numbers while searching: the solvers' brute
// force evaluates millions of plans and must not build strings for each.
enum class Moment { Outside, Unit, CheckpointedUnit, Gap, Recompute };

std::string describe(const UnitChain& c, Moment m, int a, int b) {
  int n = c.size();
  switch (m) {
    case Moment::Outside: return "memory no plan changes, " + c.outside_where;
    case Moment::Unit: return "in " + c.names[a];
    case Moment::CheckpointedUnit: return "in " + c.names[a] + " (checkpointed)";
    case Moment::Gap:
      return a + 1 < n ? "after " + c.names[a] : "between the last forward and the first backward";
    case Moment::Recompute:
      return "recomputing " + c.names[a] + (b > a ? ".." + c.names[b] : std::string());
  }
  return "";
}

}  // namespace

ChainPeak evaluateChain(const UnitChain& c, const Segments& plan) {
  ChainPeak out;
  out.peak = c.outside;
  Moment where = Moment::Outside;
  int wa = 0, wb = 0;
  auto consider = [&](Bytes v, Moment m, int a, int b) {
    if (v > out.peak) {
      out.peak = v;
      where = m;
      wa = a;
      wb = b;
    }
  };
  int n = c.size();
  Bytes dropped_before = 0;  // D: bytes of the segments that ended before unit k
  // Arguments held by the checkpoints that begin at or before unit k
  // (UnitChain::held_arguments): alive in k's backward and in every
  // recomputation from there on, which the recorded run did not have.
  Bytes held = 0;
  auto heldBackward = [&](int m, Moment kind) {
    if (held > 0 && m < static_cast<int>(c.backward_peak.size()))
      consider(sat::sub(sat::add(c.backward_peak[m], held), dropped_before), kind, m, m);
  };
  // The gap after unit k. The last one (the head and the loss, between the
  // last forward and the first backward) runs while every checkpoint holds
  // its arguments; the recorded run freed them in it, when the model's
  // forward returned, so what follows their free gets them back (HF GPT-2's
  // mask: uniform at batch 16 was 1 MiB low, its peak in the loss). The
  // other gaps' peaks are nearly always their forward halves, where the
  // recorded run still had the arguments (docs/plan.md).
  auto gap = [&](int k) {
    Bytes g = c.gap_peak[k];
    if (k + 1 == n && held > 0) g = std::max(g, sat::add(c.mid_after_arguments, held));
    consider(sat::sub(g, dropped_before), Moment::Gap, k, k);
  };
  size_t next = 0;
  for (int k = 0; k < n;) {
    if (next < plan.size() && plan[next].first == k) {
      const Segment& s = plan[next++];
      SegmentSweep sweep(c, k);
      Bytes own = sweep.held();  // in the sweep's recomputation peak
      held = std::max(held, own);
      // A reentrant checkpoint's holds (UnitChain::reentrant_held), alive
      // from its last unit's backward to its first's, gaps between included.
      Bytes reentrant = s.last < static_cast<int>(c.reentrant_held.size()) ? c.reentrant_held[s.last] : 0;
      for (int m = k; m <= s.last; ++m) {
        sweep.extend();
        consider(sat::sub(c.checkpointedUnitPeak(m, s.first, s.last, s.option), dropped_before),
                 Moment::CheckpointedUnit, m, m);
        heldBackward(m, Moment::CheckpointedUnit);
        if (reentrant > 0) {
          Bytes backward = m < static_cast<int>(c.backward_peak.size()) ? c.backward_peak[m] : c.unit_peak[m];
          consider(sat::sub(sat::add(sat::add(backward, held), reentrant), dropped_before),
                   Moment::CheckpointedUnit, m, m);
          if (m < s.last)
            consider(sat::sub(sat::add(c.gap_peak[m], reentrant), dropped_before), Moment::Gap, m, m);
        }
        if (m < s.last) gap(m);
      }
      SegmentEffect e{sweep.dropped(), sweep.recomputePeak(), sweep.recomputeNs()};
      if (s.selective()) e = selectiveEffect(c, k, e, c.selective.at(k).at(s.option - 1));
      consider(sat::sub(sat::add(e.recompute_peak, held - own), dropped_before), Moment::Recompute, s.first,
               s.last);
      sat::addTo(dropped_before, e.dropped);
      gap(s.last);
      sat::addTo(out.recompute_ns, e.recompute_ns);
      k = s.last + 1;
    } else {
      consider(sat::sub(c.unit_peak[k], dropped_before), Moment::Unit, k, k);
      heldBackward(k, Moment::Unit);
      gap(k);
      ++k;
    }
  }
  out.where_kind = static_cast<int>(where);
  out.where_first = wa;
  out.where_last = wb;
  return out;
}

std::string whereOf(const UnitChain& chain, const ChainPeak& p) {
  return describe(chain, static_cast<Moment>(p.where_kind), p.where_first, p.where_last);
}

}  // namespace gcprof::advisor
