// A plan's peak and recompute time on the unit chain (unit_chain.h), and the
// incremental sweep over segments [first..last] that the solvers share.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "chain/unit_chain.h"

namespace gcprof::advisor {

// Consecutive units checkpointed as one: only the segment's input is kept,
// its forward is replayed when its backward begins. A selective segment
// (option > 0, one unit) also keeps the outputs of the operator calls in
// `save` (UnitChain::selective[first][option - 1]) and replays the rest.
struct Segment {
  Segment() = default;
  Segment(int first_unit, int last_unit, int option_index = 0, std::vector<std::string> kept = {})
      : first(first_unit), last(last_unit), option(option_index), save(std::move(kept)) {}
  int first = 0;
  int last = 0;
  int option = 0;                 // 0: the whole unit(s) are recomputed
  std::vector<std::string> save;  // selective: operator calls kept ("aten.mm.default#0")
  bool operator==(const Segment& o) const {
    return first == o.first && last == o.last && option == o.option;
  }
  bool selective() const { return option > 0; }
};

// A selective option's effect on unit `unit`'s single-unit segment: `kept`
// bytes fewer dropped and `saved_ns` less recompute. During its replay the
// kept bytes are alive anyway (never dropped), and the replay re-makes all
// but the saved calls' memory, so its live bytes are exactly
//   before_backward - dropped + option.replay_peak
// as the simulator replays it. An option without a measured replay_peak is
// bounded by the whole replay's live bytes plus the kept and lingering
// ones. Lingering saved outputs (selective_options.h) count as bytes not
// dropped, alive when the replay begins and freed in it where the forward
// freed them (replay_peak); the unit's own forward holds them past their
// recorded free (forward_peak). Exact when they are freed within that
// forward and the replay reaches them (lingering_priced); the solver uses
// no other.
struct SegmentEffect {
  Bytes dropped = 0;
  Bytes recompute_peak = 0;  // before subtracting other segments' drops
  Ns recompute_ns = 0;
};
SegmentEffect selectiveEffect(const UnitChain& chain, int unit, const SegmentEffect& whole,
                              const SelectiveOption& option);
using Segments = std::vector<Segment>;  // ordered, disjoint

struct ChainPeak {
  Bytes peak = 0;
  Ns recompute_ns = 0;
  int where_kind = 0;  // the moment that sets the peak (whereOf)
  int where_first = 0, where_last = 0;
};

ChainPeak evaluateChain(const UnitChain& chain, const Segments& plan);
// The moment that sets `peak`, for humans ("recomputing layers.2..layers.4").
std::string whereOf(const UnitChain& chain, const ChainPeak& peak);

// Segment [first..last] quantities as `last` grows: call extend() for
// last = first, first+1, ... in order.
class SegmentSweep {
 public:
  SegmentSweep(const UnitChain& chain, int first);
  void extend();           // last += 1 (the first call makes last == first)
  int last() const { return last_; }
  Bytes dropped() const { return dropped_; }       // d_S
  Bytes replayPeak() const { return replay_peak_; } // R_S, an upper bound of the replay's live bytes
  Ns recomputeNs() const { return recompute_; }
  // Live bytes during the replay, before subtracting other segments' drops.
  Bytes recomputePeak() const;
  // What the segment's checkpoint keeps that the recorded run had freed
  // (UnitChain::held_arguments; none in chains built without it).
  Bytes held() const {
    return first_ < static_cast<int>(c_.held_arguments.size()) ? c_.held_arguments[first_] : 0;
  }


 private:
  const UnitChain& c_;
  int first_;
  int last_;
  Bytes dropped_ = 0, replay_peak_ = 0, born_prefix_ = 0;
  Ns recompute_ = 0;
  void addPosition(int p);
};

}  // namespace gcprof::advisor
