// Plans over the module tree: the chain the solver sees when it may
// checkpoint a whole block, or only some of the block's direct sub-modules
// (only its attention, only its MLP), whichever fits with less recompute.
//
// The chain is built one level finer than the blocks: each block that has
// at least two checkpointable direct sub-modules is replaced by them, in
// forward order; other blocks stay as they are. A segment is then either
// one unit of that chain (a sub-module, or an unsplit block), or exactly the
// span of one block's sub-modules, which is checkpointing the block itself.
// Spans never nest, so the modules of a plan never do either.
//
// A block does more than its sub-modules (residual adds between and after
// them); wrapping it recomputes and drops that too. So the windows of each
// block's first and last sub-module are widened to the block's own
// (widenToBlocks): a span is then replayed over exactly the block's forward
// and backward, as torch.utils.checkpoint on the block does.
#pragma once

#include <string>
#include <vector>

#include "chain/chain_peak.h"
#include "units/module_stats.h"
#include "units/step_layout.h"
#include "units/unsafe_units.h"

namespace gcprof::advisor {

struct ModuleTree {
  std::vector<std::string> blocks;  // the units of one level, forward order
  std::vector<std::string> names;   // the finer chain, forward order
  std::vector<int> block_of;        // per chain unit, the block it is or belongs to
  std::vector<std::pair<int, int>> span;  // per block, its chain units [first, last]
  // Per chain unit: a block's first or last sub-module whose window, widened
  // to the block's edge (widenToBlocks), covers a sibling the job
  // checkpoints itself (its MLP). Alone it would be simulated as
  // checkpointing that sibling too -- dropping the input the job's own
  // checkpoint holds -- while the runtime wraps only the sub-module; so it
  // is checkpointed only with its whole block.
  std::vector<bool> whole_only;

  bool split(int block) const { return span[block].first < span[block].second; }
  bool anySplit() const { return names.size() > blocks.size(); }
  // Per chain unit: the last unit of the block span starting there, -1 when
  // no split block starts there (what SolverOptions::tree_span_last takes).
  std::vector<int> spanLast() const;
  // The module a segment checkpoints: the block for a block span, else the unit.
  std::string moduleOf(const Segment& s) const;
  // A plan over the blocks (indexes of `blocks`) as a plan over the chain.
  Segments fromBlockPlan(const Segments& block_plan) const;
};

// A block's sub-modules the job checkpoints itself (unsafe_units.h) are no
// candidates; a candidate at the block's edge with one of them beyond it is
// whole_only.
// The candidates of a block are its direct sub-modules that have a recorded
// backward, run as often as the block does (once per pass: a module called
// twice in one forward, like ResNet's shared ReLU, cannot be planned call by
// call), and do not change their input in place. A block with fewer than two
// candidates stays whole.
// The tree of blocks none of which is split: plans over the blocks alone.
ModuleTree flatTree(const std::vector<std::string>& blocks);

ModuleTree moduleTree(const std::vector<ModuleStats>& modules, const std::vector<std::string>& blocks,
                      const std::vector<ExcludedUnit>& unsafe);

// Widens, in every step complete in both layouts, the windows of each split
// block's first and last sub-module to the block's forward and backward,
// host forward times included. `chain` is the layout of tree.names, `blocks`
// of tree.blocks, over the same trace. False when the two layouts do not
// pair up step by step (the caller then plans over the blocks alone).
bool widenToBlocks(RunLayout& chain, const RunLayout& blocks, const ModuleTree& tree);

// The tree of a plan file: its `units` (the chain) and `blocks` (v2 plans
// over the module tree); a unit belongs to the block its name extends.
// Empty `blocks`: the flat tree of `units`.
ModuleTree treeOfPlan(const std::vector<std::string>& units, const std::vector<std::string>& blocks);

// The step layout of the tree's chain with the blocks' windows applied
// (widenToBlocks): what advise solved on, for the reports and the GUI to
// replay a plan the same way. Falls back to the chain's own layout.
RunLayout treeLayout(const Trace& trace, const ModuleTree& tree);

}  // namespace gcprof::advisor
