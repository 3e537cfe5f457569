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
//       {"layers.2", {block.ptr()}},   // the segment: its name, the modules fn runs
//       [&](const std::vector<at::Tensor>& in) { return std::vector<at::Tensor>{block(in[0])}; },
//       {x});
//
// The replay leaves the training state as one forward left it: the running
// state of the segment's modules (BatchNorm's and InstanceNorm's running_*
// and num_batches_tracked, and any buffer their forward updates in place) is
// put back after the replay, bit for bit, also when the replay throws. That
// is why a segment names its modules: a replay in training mode would
// otherwise count every batch twice in the statistics.
//
// This is the reentrant scheme (a custom autograd Function whose backward
// runs a nested backward). Parameters the segment uses get their gradients
// during that nested backward. Rules for `fn`: it must be deterministic given
// the RNG state and must return the same number of tensors every time it
// runs. A segment that changes one of its inputs in place (an in-place ReLU
// at its entry) could not be replayed from that input: checkpoint throws,
// naming the segment, before any gradient is computed; an input changed in
// place after the forward makes backward throw, naming the segment.
#ifndef GCPROF_TORCH_CHECKPOINT_H
#define GCPROF_TORCH_CHECKPOINT_H

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gcprof::torch {

using SegmentFn = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

// What is checkpointed: `name` (the plan's units, "layers.1" or
// "layers.1..layers.3") names it in errors; `modules` are the modules `fn`
// runs (their sub-modules are included), whose running state the replay puts
// back. A segment of functions only, with no module state, passes none.
struct Segment {
  std::string name;
  std::vector<std::shared_ptr<::torch::nn::Module>> modules;
};

// Runs fn(inputs) as one checkpointed region and returns its outputs. Inputs
// that do not require grad are fine (they get no gradient); when none does,
// the outputs still carry a graph so that parameters inside fn are trained.
// Throws std::runtime_error naming the segment when fn changed an input in
// place.
std::vector<at::Tensor> checkpoint(const Segment& segment, SegmentFn fn, const std::vector<at::Tensor>& inputs);

// True while checkpoint's backward is replaying a segment on this thread:
// lets `fn` tell its recomputation apart from its first forward (to mark it
// for a profiler, or to register backward hooks on the replayed graph).
bool is_recomputing();

}  // namespace gcprof::torch

#endif  // GCPROF_TORCH_CHECKPOINT_H
