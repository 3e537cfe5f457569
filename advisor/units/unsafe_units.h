// Units that must not be checkpointed because recomputing them would not
// replay their forward: modules seen changing an input in place (the python
// shim records the scalar "inplace <module>", module_ranges.py). Checkpointing
// torchvision's ReLU(inplace=True) crashed the job; a module whose
// input changes under it would recompute from the changed value.
#pragma once

#include <string>
#include <vector>

#include "units/unit_selection.h"
#include "trace.h"

namespace gcprof::advisor {

struct ExcludedUnit {
  std::string name;
  std::string reason;  // for people: "changes its input in place: ..."
};

// The modules of the run recorded as in-place, in name order.
std::vector<ExcludedUnit> inPlaceModules(const Trace& trace);

// The modules the job checkpoints itself (HF gradient_checkpointing_enable,
// torch.utils.checkpoint in the model): the shim records their recomputation
// in backward as the user range "recompute <module>" (module_ranges.py).
// Their activations are already dropped; a plan would nest a second
// checkpoint and pay a second recomputation for nothing. In name order.
std::vector<ExcludedUnit> jobCheckpointedModules(const Trace& trace);

// Whether `u` was left out because the job checkpoints it itself.
bool checkpointedByTheJob(const ExcludedUnit& u);

// Throws AdviceError when the job called backward with retain_graph=True (the
// shim's scalar "retain_graph", steps.py): two losses with two backward calls
// free the activations in the last backward, after the modules' backward
// ranges end, so what a unit keeps cannot be measured from the recording.
void refuseRetainedGraphs(const Trace& trace);

// In-place and job-checkpointed modules: the units no plan may checkpoint.
std::vector<ExcludedUnit> unsafeModules(const Trace& trace);

// Removes the excluded names from `units`; returns those it removed. Throws
// AdviceError when none is left, naming what was excluded and why.
std::vector<ExcludedUnit> excludeUnsafeUnits(UnitSelection& units, const std::vector<ExcludedUnit>& unsafe);

}  // namespace gcprof::advisor
