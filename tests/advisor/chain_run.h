// A trace together with what `advise` derives from it for a chain of units
// (the memory filter, the step layout, the unit chain), so that a test can
// ask the chain model and the replay simulator about the same run.
#pragma once

#include <string>
#include <vector>

#include "chain_traces.h"
#include "chain/chain_peak.h"
#include "chain/unit_chain.h"
#include "simulate/replay_simulator.h"

namespace gcprof::testing {

struct ChainRun {
  Trace trace;
  advisor::AllocationFilter filter;
  advisor::RunLayout layout;
  advisor::UnitChain chain;

  // `trace` sorted as loaded, its units `names` in forward order.
  ChainRun(Trace t, const std::vector<std::string>& names) : trace(std::move(t)) {
    filter = advisor::primaryFilter(trace);
    layout = advisor::stepLayouts(trace, names);
    chain = advisor::buildUnitChain(trace, filter, layout, names);
  }
  // Units named unitName(0..units-1), as chainTrace names them.
  ChainRun(Trace t, int units) : ChainRun(std::move(t), unitNames(units)) {}
  explicit ChainRun(const ChainSpec& spec) : ChainRun(chainTrace(spec), spec.units) {}

  advisor::Simulation simulate(const advisor::Segments& plan) const {
    return advisor::simulate(trace, filter, layout, plan);
  }
  Bytes simPeak(const advisor::Segments& plan) const { return simulate(plan).peak; }
  advisor::Simulation curve(const advisor::Segments& plan) const {
    advisor::SimulationOptions o;
    o.want_curve = true;
    return advisor::simulate(trace, filter, layout, plan, o);
  }
  const advisor::StepLayout& firstStep() const { return layout.steps.front(); }
};

// The live bytes of a simulated curve (want_curve) at time t.
inline Bytes liveAt(const advisor::Simulation& sim, Ns t) {
  Bytes live = 0;
  for (const advisor::MemoryPoint& p : sim.curve)
    if (p.time <= t) live = p.live;
  return live;
}

}  // namespace gcprof::testing
