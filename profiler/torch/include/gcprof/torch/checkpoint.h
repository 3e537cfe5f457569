// gcprof::torch::checkpoint — gradient checkpointing for LibTorch training loops.
//
// Runs a segment of the model without keeping its activations: the forward
// runs with grad off and only the segment's inputs are saved; backward
// replays the forward with grad on, under the RNG state the forward saw
// (CPU, and every CUDA device the inputs live on), then backpropagates
// through the replay. Dropout therefore draws the same masks twice and the
// gradients equal those of the unchecked forward.
//
//   auto out = gcprof::torch::checkpoint(
//       [&](const std::vector<at::Tensor>& in) { return std::vector<at::Tensor>{block(in[0])}; },
//       {x});
//
// This is the reentrant scheme (a custom autograd Function whose backward
// runs a nested backward). Parameters the segment uses get their gradients
// during that nested backward. Rules for `fn`: it must be deterministic given
// the RNG state, must not modify its inputs in place, and must return the
// same number of tensors every time it runs.
#ifndef GCPROF_TORCH_CHECKPOINT_H
#define GCPROF_TORCH_CHECKPOINT_H

#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

namespace gcprof::torch {

using SegmentFn = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

// Runs fn(inputs) as one checkpointed region and returns its outputs. Inputs
// that do not require grad are fine (they get no gradient); when none does,
// the outputs still carry a graph so that parameters inside fn are trained.
std::vector<at::Tensor> checkpoint(SegmentFn fn, const std::vector<at::Tensor>& inputs);

// True while checkpoint's backward is replaying a segment on this thread:
// lets `fn` tell its recomputation apart from its first forward (to mark it
// for a profiler, or to register backward hooks on the replayed graph).
bool is_recomputing();

}  // namespace gcprof::torch

#endif  // GCPROF_TORCH_CHECKPOINT_H
