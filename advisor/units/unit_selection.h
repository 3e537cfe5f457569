// Which modules are the checkpointable units: `auto` (the repeated blocks of
// every stage, found by the structure of the recorded module tree; rule in
// docs/plan.md), `depth=N`, or a regular expression that
// matches whole qualified names. Units come out in forward order.
#pragma once

#include <string>
#include <vector>

#include "units/module_stats.h"

namespace gcprof::advisor {

struct UnitSelection {
  std::vector<std::string> names;  // in forward order
  std::string rule;                // how they were chosen, for humans ("auto: layers.#")
  // `auto` only: the stages the blocks were found in (the family the rule
  // descended from, docs/plan.md "Units", or else the family with the most
  // members that holds every block), in forward order; empty when no family
  // holds them. advise falls back to them when the blocks' own
  // backward ranges are not in chain order (DenseNet's dense layers take a
  // list of tensors, so their backward ends only with their block's).
  std::vector<std::string> stage_names;
  std::string stage_rule;
};

// Throws AdviceError (with the candidates it saw) when nothing matches or
// the chosen modules overlap in time (one nested in another).
UnitSelection selectUnits(const std::vector<ModuleStats>& modules, const std::string& spec);

// The same, for a recorded run: when nothing can be chosen because the model
// ran under torch.compile (the python shim's marker range), the error says so.
UnitSelection selectUnits(const Trace& trace, const std::vector<ModuleStats>& modules,
                          const std::string& spec);

// The python shim's marker of a torch.compile wrapper (module_ranges.py):
// "torch.compile GPT2LMHeadModel" gives "GPT2LMHeadModel"; empty when the
// run has none.
std::string compiledModel(const Trace& trace);

// Every run of digits replaced by '#': "layer3.1" -> "layer#.#",
// "encoder.layers.encoder_layer_11" -> "encoder.layers.encoder_layer_#".
// Modules with one pattern form a family (repeats of one structure).
std::string familyPattern(const std::string& name);

// The modules of the units' families (familyPattern) recorded with a forward
// but no backward range, in forward order: blocks a fine-tuning job froze
// (requires_grad_(False) with nothing trainable below them). Backward never
// runs through them, so they keep nothing for it and there is nothing to drop.
std::vector<std::string> forwardOnlyBlocks(const std::vector<ModuleStats>& modules,
                                           const std::vector<std::string>& units);

}  // namespace gcprof::advisor
