// Candidate save-lists for selective checkpointing of one unit: the unit is
// checkpointed, but the outputs of the listed operator calls are kept from
// its forward (PyTorch's selective checkpointing, MUST_SAVE) and only the
// other calls are recomputed. Against checkpointing the whole unit, a
// save-list drops `kept` bytes fewer and recomputes `saved_ns` less.
//
// Per unit a small set, so that the search over units stays exact and cheap:
//   - prefixes of the saveable calls sorted by the bytes they hold (kept,
//     or lingering: below) per ns of recompute they save (cheapest first),
//     at most kMaxPrefixes of them spread over the list;
//   - "matmuls": torchtitan's selective checkpointing rule, for comparison
//     (isTorchtitanSaved): every call of its save list (matrix products,
//     attention kernels, convolutions, max and topk), except every second
//     mm/linear of the forward, which it recomputes.
// Saved outputs autograd does not keep (an addmm whose output the next
// operator consumes) linger: PyTorch's selective checkpointing holds them
// from their recorded free until the recomputation, which frees them where
// the forward did. The chain model prices that exactly when they are freed
// within the unit's forward and the replay reaches them (op_table.h's
// lingering_unpriced); the solver picks no other option with lingering
// outputs (`lingering_priced`), which the replay simulator alone prices
// (torchtitan's rule may save such ones: the GPT sample's fc2 output, which
// the replay stops before).
// A call is saveable when it made an output that autograd keeps (kept > 0:
// views make none, and saving a view would keep its base alive, unpriced),
// it lingers nothing (op_table.h), it took time, and it is neither in-place,
// a factory filled in place afterwards, random, nor changed later by an
// in-place call (op_table.h's mutated_later) (isSaveable); or when it
// lingers, priced, under the same rules. Dropouts are the exception: their
// calls are saved together (CUDA's native_dropout; on a CPU the empty_like,
// bernoulli_ and div_ that make the mask), and a list that saves one saves
// every later random call of the unit too, or it is left out: the replay
// starts from the RNG state the forward started with and a call taken from
// the cache draws nothing, so a later random call would draw other numbers
// (results would change silently). A unit with other in-place calls saves
// no CPU dropout (its filled mask is a cache entry mutated after it was
// cached, which the python side then allows, checkpointing.py, and would
// then allow for any saved output). Lists that keep all the unit's dropped
// bytes are no use (they drop nothing) and are left out.
#pragma once

#include <string>
#include <vector>

#include "units/op_table.h"

namespace gcprof::advisor {

struct SelectiveOption {
  std::string label;               // "matmuls", "save 5 ops", for people
  std::vector<std::string> save;   // operator calls kept ("aten.mm.default#0"), forward order
  Bytes kept = 0;                  // bytes not dropped
  Ns saved_ns = 0;                 // recompute not done
  // Bytes of saved outputs autograd does not keep: held from the forward
  // until the replay re-makes them (only "matmuls", torchtitan's rule).
  Bytes lingering = 0;
  bool lingers() const { return lingering > 0; }
  // Whether the chain model prices its lingering outputs exactly (none of
  // its calls' is lingering_unpriced, op_table.h): the solver picks only
  // such options.
  bool lingering_priced = true;
  // The most bytes its replay makes alive at once, the saved calls' memory
  // left out (selective_replay_peak.h); -1 when not measured.
  Bytes replay_peak = -1;
  // The highest live bytes during the unit's forward with this save-list
  // (its checkpointed forward frees early what it neither saves nor returns,
  // checkpointed_forward.h); -1 when not measured (lingering outputs, whose
  // recorded frees the simulator cancels, are not).
  Bytes forward_peak = -1;
};

constexpr size_t kMaxPrefixes = 6;

// Whether torchtitan's selective checkpointing list names the call's
// operator: mm, addmm, bmm, linear, convolution, _scaled_mm, the
// scaled-dot-product attention kernels (the CPU flash kernel included: the
// CPU's counterpart of the CUDA ones), max and topk.
bool isTorchtitanSaved(const std::string& key);
// The mm/linear calls torchtitan counts to recompute every second one.
bool isCountedMatmul(const std::string& key);

bool isSaveable(const UnitOp& op, Bytes dropped);

// The option that saves the calls named `keys` (label for people).
SelectiveOption optionOfCalls(const std::string& label, const std::vector<UnitOp>& ops,
                              const std::vector<std::string>& keys);
// Appends `o` to `options` unless it saves nothing, keeps all `dropped`
// bytes (it would drop nothing) or is already there.
void addOption(std::vector<SelectiveOption>& options, SelectiveOption o, Bytes dropped);

// Options for one unit whose whole checkpoint drops `dropped` bytes.
std::vector<SelectiveOption> selectiveOptions(const std::vector<UnitOp>& ops, Bytes dropped);

}  // namespace gcprof::advisor
