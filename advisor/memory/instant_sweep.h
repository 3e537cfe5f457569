// sweepInstants (live_sweep.h) one allocation at a time: for a run handed
// over a piece at a time (allocation_stream.h), whose rows are never all
// held. The same instants and levels: at the end of each instant at which
// the filter's allocations change, its frees counted before its
// allocations, allocations freed at the instant they were made never
// counted, only the live blocks' frees held.
#pragma once

#include <cstdint>

#include "memory/free_queue.h"
#include "memory/memory_curve.h"
#include "saturating.h"

namespace gcprof::advisor {

class InstantSweep {
 public:
  explicit InstantSweep(const AllocationFilter& filter) : filter_(filter) {}

  // The next allocation by time (any row: the filter picks). Calls
  // visit(time, live) for each instant that ends before it. False, with
  // nothing changed, when `a` is earlier than the last one added.
  template <class Visit>
  bool add(const Allocation& a, Visit&& visit) {
    if (a.alloc < last_) return false;
    last_ = a.alloc;
    if (!filter_.counts(a)) return true;
    if (!open_ || a.alloc != at_) {
      endBefore(a.alloc, visit);
      at_ = a.alloc;
      open_ = true;
    }
    sat::addTo(live_, a.bytes);
    if (a.freed()) frees_.push(a.free, a.bytes);
    return true;
  }

  // The instants after the last allocation: its own, then the frees'.
  template <class Visit>
  void finish(Visit&& visit) {
    if (open_) visit(at_, live_);
    open_ = false;
    while (!frees_.empty()) popInstant(visit);
  }

 private:
  // Ends the open instant and every instant of frees before `t`, and takes
  // the frees at `t` (they count before t's allocations).
  template <class Visit>
  void endBefore(Ns t, Visit& visit) {
    if (open_) visit(at_, live_);
    open_ = false;
    while (!frees_.empty() && frees_.topTime() < t) popInstant(visit);
    while (!frees_.empty() && frees_.topTime() == t) sat::addTo(live_, -frees_.pop());
  }

  // The soonest frees' instant, visited.
  template <class Visit>
  void popInstant(Visit& visit) {
    const Ns at = frees_.topTime();
    while (!frees_.empty() && frees_.topTime() == at) sat::addTo(live_, -frees_.pop());
    visit(at, live_);
  }

  AllocationFilter filter_;
  FreeQueue<Bytes> frees_;  // the bytes of each live block
  Bytes live_ = 0;
  Ns last_ = INT64_MIN;  // the last allocation's time (any row)
  Ns at_ = 0;            // the open instant's time
  bool open_ = false;    // allocations counted at at_, not yet visited
};

}  // namespace gcprof::advisor
