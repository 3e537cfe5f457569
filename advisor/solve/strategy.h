// The checkpoint strategies a plan can come from, and what one segment may
// hold: the python shim checkpoints one module at a time ("module"); the C++
// helper (gcprof::torch) can checkpoint consecutive units as one region.
#pragma once

#include <string>

namespace gcprof::advisor {

// Matmuls: every unit (with `--units auto` every block, never its
// sub-modules) checkpointed with torchtitan's selective rule (its matrix
// products and attention kernels saved, every second mm recomputed:
// chain/selective_options.h; whole where a unit has none, or without
// operator ranges). For comparisons: budget-blind.
enum class Strategy { None, Every, Uniform, Optimal, Matmuls };
enum class SegmentKind { Module, Region };

std::string toString(Strategy s);
std::string toString(SegmentKind k);
// Throws AdviceError naming the accepted values.
Strategy parseStrategy(const std::string& s);
// "python" runs are consumed by torch.utils.checkpoint (single modules).
SegmentKind segmentKindFor(const std::string& runtime);

}  // namespace gcprof::advisor
