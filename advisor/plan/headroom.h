// The margin a plan keeps below the budget for what the recorded trace cannot
// show, sized from the trace by default: plans are solved against budget -
// headroom, so a verification that lands a little above the prediction still
// fits the budget. The default is the sum of
//   - the step-to-step jitter of the recorded peaks (a step may peak higher
//     than the one the plan was solved on);
//   - the checkpoint arguments not told apart by size
//     (chain/checkpoint_arguments.h, ArgumentHolds::untold): HF GPT-2's 2 MiB
//     attention mask, which its plans verified 2.0 MiB above the prediction;
//   - a share of the budget for the rest, by what applies the plan
//     (bench/RESULTS.md, "Headroom sized from the trace"):
//       1% where torch.utils.checkpoint (the python shim) does. Its holds
//         are matched from the recorded input bytes; every other python plan
//         verified at most 0.16 MiB (0.15% of its peak) above its prediction
//         (the python GPT's 20-budget sweep, HF GPT-2, Llama, ViT, ResNet-18,
//         gradient accumulation, the Megatron-style GPT at full size); the
//         1% leaves room for the models not measured.
//       3% where the C++ runtime's reentrant checkpoint does: what it holds
//         through the replay is inferred (chain/reentrant_holds.h), and
//         gpt_train with its last block checkpointed verified 1.7% above.
//       5% on CUDA: the caching allocator rounds blocks (512 B, 2 MiB / 20
//         MiB segments) and fragments, none of which the tensor-level trace
//         carries.
#pragma once

#include <optional>
#include <string>

#include "memory/memory_curve.h"
#include "memory/memory_events.h"
#include "trace.h"

namespace gcprof::advisor {

constexpr double kShimHeadroom = 0.01;
constexpr double kNativeHeadroom = 0.03;
constexpr double kDeviceHeadroom = 0.05;

// What the trace says about how far a plan's prediction may fall short.
struct TraceMargins {
  Bytes jitter = 0;             // spread of the per-step peaks from the steady step on
  Bytes untold_arguments = 0;   // UnitChain::untold_arguments
  bool device = false;          // tensors on a CUDA device
  bool native = false;          // plans applied by the C++ runtime's reentrant checkpoint
};

struct HeadroomRequest {
  bool given = false;     // --headroom was set: it replaces the default rule
  bool percent = false;
  double fraction = 0;    // of the budget
  Bytes bytes = 0;
  std::string text;
};

struct Headroom {
  Bytes bytes = 0;        // kept free below the budget
  TraceMargins margins;   // what it was sized from
  double fraction = 0;    // the share of the budget in `bytes` (without the bytes told)
  std::string rule;       // how it was chosen, for people: "1% of the budget + 1.2 MiB jitter + ..."
};

// The share of the budget the default rule keeps for `m`.
double defaultShare(const TraceMargins& m);

// The spread (max - min) of the peaks of the steps from `first_step` on.
// `recorded`: RecordedEvents(trace.allocations, filter) when the caller has them.
Bytes stepPeakJitter(const Trace& trace, const AllocationFilter& filter, int64_t first_step,
                     const RecordedEvents* recorded = nullptr);

Headroom resolveHeadroom(const HeadroomRequest& request, Bytes budget, const TraceMargins& margins);

// The least size at or above `b` that formatBytes prints exactly, so that a
// size a message names can be typed back as printed and mean no less
// (306.4 MiB prints "306 MiB": this gives 307 MiB).
Bytes printedCeiling(Bytes b);

// The least budget whose limit (the budget less the headroom the same rule
// keeps at that budget) holds `peak`, rounded up to what formatBytes prints:
// the size to name when a budget is out of reach, so that advise accepts it
// as typed. The headroom grows with the budget, so `peak + headroom at the
// budget asked` is not it. -1 when no budget is (a margin of 100% or more).
Bytes leastBudgetFor(Bytes peak, const HeadroomRequest& request, const TraceMargins& margins);

}  // namespace gcprof::advisor
