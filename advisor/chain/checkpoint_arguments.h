// The tensors a checkpoint keeps alive as its arguments, which a recorded run
// without checkpoints frees earlier (the what-if of HF GPT-2 came out low without them).
//
// torch.utils.checkpoint (non-reentrant) holds every tensor passed to the
// checkpointed call until that call's backward has finished: it needs them to
// replay the forward. The running hidden state is kept anyway (the call's
// first operation saves it), but other arguments may not be: Hugging Face
// GPT-2 passes each block the attention mask (batch x seq x seq floats) and
// the position ids, which the run without checkpoints frees when the model's
// forward returns. Under `every` they live until the first block's backward
// ends, so the checkpointed run's peak, in the backward, is higher by the
// mask (1.8 MiB at batch 29 on the 64-wide GPT-2 of the what-if bench).
//
// Which allocations a call's arguments are is found from the bytes the
// python shim records as its input (Range::input_bytes, logical bytes of the
// tensors passed): of the allocations born in the step before the call and
// alive until it ends, the largest-first selection (the later born first
// among equal sizes) that adds up to exactly that many bytes; when that
// leaves a remainder nothing adds up to, the same selection among them less
// the tensors the earlier units saved for their backward (HF Whisper under
// bf16 autocast: an encoder block's attention weights, taken first, hid the
// causal mask and the encoder's output that each decoder block holds). When none adds
// up (views, sizes not recorded, native runs) the call has no known
// arguments and nothing is held. Among equal sizes the guess may name the
// wrong tensor (GPT-2's token embeddings are the hidden state's size); that
// only matters for the tensors freed before the hold ends, and the extras
// that are are usually of a size of their own.
//
// On CUDA the match stays exact: gcprof records device tensors through
// PyTorch's cudaMallocAsync backend, which passes each storage's byte size
// to cudaMallocAsync unrounded (the native allocator's 512-byte rounding
// happens inside its segments, which are recorded as segments), and CUPTI's
// callback reports that size. Device memory is recorded whatever
// --min-bytes says, so small arguments (position ids) are there too. At
// segment level (the native allocator) no arguments are told.
#pragma once

#include <vector>

#include "memory/memory_curve.h"
#include "units/step_layout.h"
#include "trace.h"

namespace gcprof::advisor {

// The forward module calls of `step` that begin with unit k: its own and the
// enclosing ones that start with it (a block whose first sub-module is the
// unit), up to the end of the units' forward.
std::vector<const Range*> callsStartingAt(const Trace& trace, const StepLayout& step, int k);

// The call that checkpointing units first..last wraps: the widest call that
// begins with unit `first` and ends before unit last + 1 begins; nullptr
// when there is none.
const Range* checkpointedCall(const Trace& trace, const StepLayout& step, int first, int last);

// The allocations passed to `call` (empty when they cannot be told).
std::vector<const Allocation*> callArguments(const Trace& trace, const AllocationFilter& filter,
                                             const StepLayout& step, const Range& call);

// What a checkpoint beginning with unit k holds as its arguments, each the
// most over the calls that begin with unit k (one match of each call's
// arguments serves all three).
struct ArgumentHolds {
  // Bytes of the arguments that the recorded run frees before the units'
  // backward begins: the checkpoint holds them through every recomputation,
  // where the recorded run did not have them.
  Bytes held = 0;
  // Bytes it may hold that the match above cannot tell from what it took:
  // tensors of the size of an argument it took that the recorded run keeps
  // to that backward anyway, themselves freed before it ends. Had the call
  // been passed one of them, holding it would raise the peak by its bytes,
  // which no prediction counts: HF GPT-2 passes each block the attention
  // mask (2,097,152 B at batch 8, seq 256, 4 heads), of the size of the
  // previous block's attention dropout mask, which the match takes (the
  // later born); the prediction came out 2 MiB under. Per size, as many such
  // tensors as the match took of the others. The advisor keeps these bytes
  // free below the budget (plan/headroom.h).
  Bytes untold = 0;
  // When the recorded run had freed the last of the held arguments; -1 when
  // it frees none before the backward.
  Ns freed = -1;
};
ArgumentHolds argumentHolds(const Trace& trace, const AllocationFilter& filter, const StepLayout& step, int k);

}  // namespace gcprof::advisor
