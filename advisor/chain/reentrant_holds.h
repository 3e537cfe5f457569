// What the C++ runtime's checkpoint holds through a segment's backward.
//
// gcprof::torch::checkpoint (runtime/torch/src/checkpoint.cpp) is
// reentrant: its backward replays the segment with a graph and runs a nested
// backward from the replayed outputs, holding, until that nested backward
// ends (the first unit's backward end):
//   - the gradient of the segment's output it was called with, which the
//     recorded run frees early in the last unit's backward (ResNet's final
//     relu_ makes a new gradient and drops it);
//   - the replayed output itself, which the recorded run frees when its
//     last user's backward runs (or, for the python shim's non-reentrant
//     checkpoint, the simulator frees as the replay ends).
// And the segment's output, when the last unit ends in an op that saves it
// (`out += identity; relu_(out)`), is held by its consumer, not dropped.
//
// Native traces (C API, NVTX) record no output bytes, so the output is told
// by its gradient: of the tensors born in the step's backward before the last
// unit's backward starts, alive then and freed in that unit's backward, the
// latest-born is the output's gradient; the output is the latest-born tensor
// made in the last unit's forward, alive when it ends, of the same size.
// resnet_train (`--layers 4 --width 16 --image 32 --batch 32`) measured
// exactly these three, 3 x 2 MiB, over the prediction
// (bench/history/robustness-sweep.md). Where none is found nothing is held.
#pragma once

#include "memory/memory_curve.h"
#include "units/step_layout.h"
#include "trace.h"

namespace gcprof::advisor {

struct ReentrantHolds {
  const Allocation* output_grad = nullptr;  // the recorded gradient of the segment's output
  const Allocation* output = nullptr;       // the segment's recorded output
  Ns until = 0;                             // the segment's backward end (its first unit's)
};

// True when the trace's plans are applied by a reentrant checkpoint (the C++
// runtime, `runtime: native`).
bool reentrantCheckpoint(const Trace& trace);

// What segment [first..last] of `step` holds to its backward end.
ReentrantHolds reentrantHolds(const Trace& trace, const AllocationFilter& filter, const StepLayout& step,
                              int first, int last);

}  // namespace gcprof::advisor
