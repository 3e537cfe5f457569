// A trace together with what `advise` derives from it for a chain of units
// (the memory filter, the step layout, the unit chain), so that a test can
// ask the chain model and the replay simulator about the same run.
#pragma once

#include <string>
#include <vector>

#include "chain_traces.h"
#include "model/chain_peak.h"
#include "model/unit_chain.h"
#include "simulate/replay_simulator.h"

namespace gcprof::testing {

struct ChainRun {
  Trace trace;
  advisor::AllocationFilter filter;
  advisor::RunLayout layout;
  advisor::UnitChain chain;

  // `trace` sorted as loaded, its units named unitName(0..units-1).
  ChainRun(Trace t, int units) : trace(std::move(t)) {
    std::vector<std::string> names = unitNames(units);
    filter = advisor::primaryFilter(trace);
    layout = advisor::stepLayouts(trace, names);
    chain = advisor::buildUnitChain(trace, filter, layout, names);
  }
  explicit ChainRun(const ChainSpec& spec) : ChainRun(chainTrace(spec), spec.units) {}

  advisor::Simulation simulate(const advisor::Segments& plan) const {
    return advisor::simulate(trace, filter, layout, plan);
  }
  Bytes simPeak(const advisor::Segments& plan) const { return simulate(plan).peak; }
};

}  // namespace gcprof::testing
