// What is live at a moment of a step that no unit made, by the module that
// made it: the activations of modules that are not units, which no plan over
// the units drops (a detector's RPN and box heads after its backbone's
// blocks, a segmentation decoder, a language model's logits). Used to explain
// budgets that no plan reaches, next to resident_memory.h's part.
#pragma once

#include <string>
#include <vector>

#include "saturating.h"
#include "memory/memory_curve.h"
#include "units/step_layout.h"
#include "trace.h"

namespace gcprof::advisor {

struct ModuleBytes {
  std::string module;  // "" for code outside every module that is not a unit's ancestor
  Bytes bytes = 0;
};

struct OutsideUnits {
  Bytes total = 0;
  std::vector<ModuleBytes> by_module;  // largest first
  // "roi_heads 90.1 MiB, rpn 40.2 MiB, ..." (the `max` largest, then the rest)
  std::string describe(size_t max = 4) const;
};

// Allocations live at recorded time `at` that were made in its complete step
// after the first unit's forward began, outside every unit's forward and
// backward, grouped by the outermost module that made them and holds no unit
// (`roi_heads.box_head.fc6` -> `roi_heads`; in `backbone.fpn`, beside the units
// `backbone.body.layer#.#` -> `backbone.fpn`). Empty outside complete steps.
OutsideUnits outsideUnits(const Trace& trace, const AllocationFilter& filter, const RunLayout& layout,
                          const std::vector<std::string>& units, Ns at);

}  // namespace gcprof::advisor
