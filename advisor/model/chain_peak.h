// A plan's peak and recompute time on the unit chain (unit_chain.h), and the
// incremental sweep over segments [first..last] that the solvers share.
#pragma once

#include <string>
#include <vector>

#include "model/unit_chain.h"

namespace gcprof::advisor {

// Consecutive units checkpointed as one: only the segment's input is kept,
// its forward is replayed when its backward begins.
struct Segment {
  int first = 0;
  int last = 0;
  bool operator==(const Segment& o) const { return first == o.first && last == o.last; }
};
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

 private:
  const UnitChain& c_;
  int first_;
  int last_;
  Bytes dropped_ = 0, replay_peak_ = 0, born_prefix_ = 0;
  Ns recompute_ = 0;
  void addPosition(int p);
};

}  // namespace gcprof::advisor
