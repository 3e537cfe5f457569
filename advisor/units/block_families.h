// The repeated blocks of a model: modules that share a family pattern
// ("transformer.h.#"), and which of those families `--units auto` takes as
// the blocks, the stages above them and the stacks beside them (docs/plan.md,
// "Units").
#pragma once

#include <set>
#include <string>
#include <vector>

#include "units/module_stats.h"
#include "units/unit_selection.h"

namespace gcprof::advisor {

// Modules that share a family pattern are repeats of one structure: the
// blocks of a model and, one level up, the stages that hold them.
struct Family {
  std::string pattern;
  std::vector<const ModuleStats*> members;  // forward order
  Bytes saved = 0;
};

// A module with recorded sub-modules is a composite (a block, a stage); one
// without is a single operation (Linear, GELU), never what people call a block.
std::set<std::string> composites(const std::vector<ModuleStats>& modules);

// The families among `cands`: numbered names of one pattern, two or more
// members repeating a structure inside one model.
std::vector<Family> families(const std::vector<const ModuleStats*>& cands);

// Families whose members run more often per step than those of another are
// left out: such a module is applied several times in one step under one
// name (a GAN's discriminator: on real data, on detached fakes, then on the
// fakes for the generator's loss), so its calls cannot be planned one by
// one (step_layout.cpp refuses them), while the blocks called once can.
void keepTheLeastCalled(std::vector<Family>& fams);

// Each model of the job brings its own blocks: a job that trains two roots
// on one loss (CLIP's image and text towers, separate modules under one
// optimizer) keeps the activations of both until its one backward, so the
// units are the blocks of each (chosen in each as for one model), in
// forward order.
UnitSelection blocksOfEveryRoot(const std::vector<ModuleStats>& modules, const std::vector<Family>& fams);

}  // namespace gcprof::advisor
