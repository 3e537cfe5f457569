// Running a sample's blocks `layers.i` in order, checkpointing the segments
// a plan (GCPROF_PLAN) names, and marking each block's forward, backward and
// recomputation for gcprof (layer_marks.h). Shared by gpt_train and
// resnet_train: `Block` is a module holder whose forward takes and returns
// one tensor.
#ifndef GCPROF_SAMPLES_PLANNED_BLOCKS_H
#define GCPROF_SAMPLES_PLANNED_BLOCKS_H

#include "layer_marks.h"

#include <gcprof/torch/checkpoint.h>
#include <gcprof/torch/plan.h>

#include <torch/torch.h>

#include <vector>

// segment_end[i] = last block of the checkpointed segment starting at i, or
// -1. Throws gcprof::torch::PlanError when GCPROF_PLAN names an invalid plan.
inline std::vector<int64_t> segments_from_plan(const LayerMarks& marks) {
  std::vector<int64_t> segment_end(marks.names().size(), -1);
  if (auto plan = gcprof::torch::plan_from_env()) {
    for (const auto& s : plan->resolve(marks.names())) segment_end[s.first] = static_cast<int64_t>(s.last);
  }
  return segment_end;
}

// Runs blocks [first, last] as one checkpointed region (named
// "layers.1..layers.3" in errors). On replay (inside
// backward) the blocks are marked as user-phase "recompute layers.i" ranges,
// so recomputation is visible but not counted as forward time, and the
// replayed graph gets the backward hooks the first forward could not have.
template <typename Block>
torch::Tensor checkpointed_blocks(std::vector<Block>& blocks, LayerMarks& marks, int64_t first, int64_t last,
                                  const torch::Tensor& x) {
  auto fn = [&blocks, &marks, first, last](const std::vector<torch::Tensor>& in) {
    const bool replay = gcprof::torch::is_recomputing();
    torch::Tensor h = in[0];
    for (int64_t k = first; k <= last; ++k) {
      {
        MarkedScope range(replay ? marks.recompute_name(k) : marks.name(k), replay ? GCPROF_USER : GCPROF_FORWARD);
        h = blocks[k]->forward(h);
      }
      if (replay) marks.watch_output(h, k);
    }
    return std::vector<torch::Tensor>{h};
  };
  // The blocks' BatchNorm statistics are put back after the replay.
  gcprof::torch::Segment segment{marks.name(first) + (last > first ? ".." + marks.name(last) : ""), {}};
  for (int64_t k = first; k <= last; ++k) segment.modules.push_back(blocks[k].ptr());
  torch::Tensor y = gcprof::torch::checkpoint(segment, fn, {x})[0];
  marks.watch_output(y, last, /*begin_i=*/false);
  return y;
}

// x through every block, checkpointing where segment_end says.
template <typename Block>
torch::Tensor forward_blocks(std::vector<Block>& blocks, LayerMarks& marks, const std::vector<int64_t>& segment_end,
                             torch::Tensor x) {
  marks.watch_first_input(x);
  const int64_t n = static_cast<int64_t>(blocks.size());
  for (int64_t i = 0; i < n;) {
    if (segment_end[i] >= 0) {
      x = checkpointed_blocks(blocks, marks, i, segment_end[i], x);
      i = segment_end[i] + 1;
      continue;
    }
    {
      MarkedScope range(marks.name(i), GCPROF_FORWARD);
      x = blocks[i]->forward(x);
    }
    marks.watch_output(x, i);
    ++i;
  }
  return x;
}

#endif  // GCPROF_SAMPLES_PLANNED_BLOCKS_H
