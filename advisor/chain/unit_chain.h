// The unit chain: what the solvers see of a recorded run. For N units in
// forward order it holds, as an envelope over the complete steps (highest
// memory, lowest drop, so that a plan fitting the chain fits every step):
//
//   forward_ns[k]        f_k, recompute cost (median of the steady steps)
//   unit_peak[k]         A_k, highest live bytes during F_k or B_k
//   gap_peak[k]          G_k, highest live bytes in FG_k or BG_{k+1} (Mid for the last)
//   before_backward[k]   live bytes when B_k begins (where recomputation is inserted)
//   born_kept/born_peak  per forward position: bytes born there still alive when
//                        it ends, and the highest bytes born there alive at once
//   drops                bytes born in forward position a and freed in backward
//                        position b, filed under the segments that contain both
//
// With D = the bytes dropped by the segments that ended before a moment, a
// plan's peak is the maximum of: outside, A_k - D_<k, G_k - D_<=k, and for
// each segment S = [i..j] the recomputation Mb_j - D_<i - d_S + R_S
// (chain_peak.h). See docs/plan.md for the derivation.
#pragma once

#include <string>
#include <vector>

#include "memory/memory_curve.h"
#include "chain/selective_options.h"
#include "units/step_layout.h"
#include "trace.h"
#include "memory/memory_events.h"

namespace gcprof::advisor {

struct DropBucket {
  int first = 0;  // counted by segments [i..j] with i <= first (and j >= the bucket's list)
  Bytes bytes = 0;
};

struct UnitChain {
  std::vector<std::string> names;
  std::vector<Ns> forward_ns;
  std::vector<Ns> gap_ns;            // between forward k and k+1 (host timing; 0 on device)
  std::vector<Bytes> unit_peak;
  std::vector<Bytes> gap_peak;
  std::vector<Bytes> before_backward;
  std::vector<Bytes> born_kept;      // 2N-1 forward positions
  std::vector<Bytes> born_peak;
  std::vector<std::vector<DropBucket>> drops;  // indexed by the last unit a segment must reach
  std::vector<Bytes> saved;          // d_k of a single unit (bytes born in F_k, freed in B_k)
  // Per unit, the highest live bytes during F_k (backward_peak below is
  // B_k's; unit_peak is their maximum), and during F_k when unit k alone is
  // checkpointed: its forward frees early what autograd no longer keeps
  // (checkpointed_forward.h). Empty where not measured (a what-if's chain):
  // unit_peak then prices a checkpointed unit, on the high side.
  std::vector<Bytes> forward_peak, checkpointed_forward_peak;
  // Per unit, the selective checkpoints it may get (selective_options.h);
  // empty without operator ranges (`record --ops`) or for region plans.
  // Option o of unit k is the single-unit segment {k, k, o + 1}.
  std::vector<std::vector<SelectiveOption>> selective;
  // The highest live bytes of unit k's own moments (F_k, B_k) when it is
  // checkpointed in the segment [first..last] with `option` (0: whole; a
  // selective option only for first == last): the checkpointed forward's
  // peak, measured per option, or the recorded forward's where the option's
  // was not measured; unit_peak where nothing was measured.
  Bytes checkpointedUnitPeak(int k, int first, int last, int option) const;
  // The values whose maximum is each entry above: per complete step, and for
  // unit_peak the forward and the backward, for gap_peak the gap after the
  // forward and the one before the backward; in a fixed order, equal in
  // count for runs of one job. Which one is the maximum changes with the
  // job's size, so the what-if fits each of them over the sizes and takes
  // the maximum at the new size (scale/chain_scaling.h).
  std::vector<std::vector<Bytes>> unit_peak_moments, gap_peak_moments, before_backward_moments,
      born_kept_moments, born_peak_moments, backward_peak_moments;
  // Within one moment (a region of one step) the instant that is highest
  // moves too: HF GPT-2's loss had one more logits-sized tensor alive at its
  // peak at batch 16 than at 4. So for the moments that are a region's
  // maximum, each moment's candidate instants: the local maxima of the
  // region's live bytes in time order (entry level included), [k][moment]
  // parallel to the moments. Runs of one job make the same allocations in
  // the same order, so their instants pair up one to one; the what-if fits
  // each and takes the maximum, and falls back to the moment where the
  // counts differ.
  std::vector<std::vector<std::vector<Bytes>>> unit_peak_instants, backward_peak_instants, gap_peak_instants;

  // Per unit, the arguments of a checkpoint beginning with it
  // (checkpoint_arguments.h) that the recorded run frees before the backward
  // and the checkpoint holds through it: added to the live bytes of the
  // recomputation of a segment beginning there. The most over the complete
  // steps. (Earlier segments' arguments, alive then too, are not added: for
  // blocks all passed one mask they are the same tensors; the simulator
  // holds each exactly.)
  std::vector<Bytes> held_arguments;
  // The bytes some checkpoint may hold as its arguments that the match by
  // size cannot tell from those it took (ArgumentHolds::untold): what
  // predictions may miss. The most over the units and the complete steps
  // (blocks are passed the same tensors, as for held_arguments).
  Bytes untold_arguments = 0;
  // Per unit, what a reentrant checkpoint (the C++ runtime) ending with it
  // holds through the segment's backward beyond the recorded run: the
  // gradient of its output and the replayed output (chain/reentrant_holds.h).
  // Added to the backward moments of the segment's units. The most over the
  // complete steps; empty or 0 where none is held.
  std::vector<Bytes> reentrant_held;
  // Per unit, the highest live bytes during its backward alone (unit_peak
  // is the higher of forward and backward): the held arguments are added
  // to it, as the recorded forward had them already.
  std::vector<Bytes> backward_peak;
  // The highest live bytes in the last gap (the head and the loss) after the
  // recorded run freed the last of those arguments; 0 when it freed none
  // before the backward. A checkpoint holds them there, so the gap's moment
  // under a plan is at least this plus the held bytes (chain_peak.cpp). Per
  // complete step in the moments.
  Bytes mid_after_arguments = 0;
  std::vector<Bytes> mid_after_arguments_moments;
  Bytes outside = 0;                 // memory no plan changes
  std::string outside_where;         // where that maximum lies, for messages
  Bytes baseline_peak = 0;           // the recorded peak (all steps and moments)
  Ns step_ns = 0;                    // median steady step time
  Bytes persistent = 0;              // live when the first steady step begins
  int64_t steady_step = -1;          // the first steady step's index
  size_t complete_steps = 0;

  int size() const { return static_cast<int>(names.size()); }
  Ns recomputeNs(int first, int last) const;  // f over [first..last] plus inner gaps
  Bytes droppedBytes(int first, int last) const;
};

// Builds the chain of `layout`'s units from the allocations `filter` accepts.
// Throws AdviceError when no step is complete (with the first step's problem).
// `recorded`: RecordedEvents(trace.allocations, filter) when the caller has
// them (on a big trace, sorting them is most of the work); null: made here.
// `moments`: fill the per-step *_moments and *_instants (only the what-if
// reads them; on a 10M-allocation run they are ~250 MB); false leaves them
// empty (mid_after_arguments_moments, one per step, is always filled).
UnitChain buildUnitChain(const Trace& trace, const AllocationFilter& filter,
                         const RunLayout& layout, const std::vector<std::string>& names,
                         const RecordedEvents* recorded = nullptr, bool moments = true);

// Sets forward_peak of every selective option of `chain` (unit_chain.h).
void measureForwardPeaks(UnitChain& chain, const Trace& trace, const AllocationFilter& filter,
                         const RunLayout& layout, const RecordedEvents* recorded = nullptr);

// Fills chain.selective from the trace's operator ranges (no-op without them).
void addSelectiveOptions(UnitChain& chain, const Trace& trace, const AllocationFilter& filter,
                         const RunLayout& layout, const RecordedEvents* recorded = nullptr);

}  // namespace gcprof::advisor
