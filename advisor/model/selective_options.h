// Candidate save-lists for selective checkpointing of one unit: the unit is
// checkpointed, but the outputs of the listed operator calls are kept from
// its forward (PyTorch's selective checkpointing, MUST_SAVE) and only the
// other calls are recomputed. Against checkpointing the whole unit, a
// save-list drops `kept` bytes fewer and recomputes `saved_ns` less.
//
// Per unit a small set, so that the search over units stays exact and cheap:
//   - prefixes of the saveable calls sorted by the bytes they keep per ns of
//     recompute they save (cheapest first), at most kMaxPrefixes of them
//     spread over the list;
//   - "matmuls": the saveable matrix products and attention kernels, the
//     hand-written rule of torchtitan and Megatron's selective recompute.
// A call is saveable when it made an output that autograd keeps (kept > 0:
// views make none, and saving a view would keep its base alive, unpriced),
// saving it keeps nothing the trace does not price (op_table.h: no lingering
// bytes), it took time, and it is neither in-place, a factory filled in
// place afterwards, nor random (isSaveable). Lists that keep all the unit's
// dropped bytes are no use (they drop nothing) and are left out.
#pragma once

#include <string>
#include <vector>

#include "model/op_table.h"

namespace gcprof::advisor {

struct SelectiveOption {
  std::string label;               // "matmuls", "save 5 ops", for people
  std::vector<std::string> save;   // operator calls kept ("aten.mm.default#0"), forward order
  Bytes kept = 0;                  // bytes not dropped
  Ns saved_ns = 0;                 // recompute not done
};

constexpr size_t kMaxPrefixes = 6;

// Matrix products and attention kernels (mm, addmm, bmm, baddbmm, linear,
// convolution, scaled-dot-product attention).
bool isMatmulOp(const std::string& key);

bool isSaveable(const UnitOp& op, Bytes dropped);

// Options for one unit whose whole checkpoint drops `dropped` bytes.
std::vector<SelectiveOption> selectiveOptions(const std::vector<UnitOp>& ops, Bytes dropped);

}  // namespace gcprof::advisor
