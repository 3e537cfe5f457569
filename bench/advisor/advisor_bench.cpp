// Advisor solve times (bench/RESULTS.md): the exact optimal search on unit
// chains of 100, 1,000 and 10,000 units, and a whole `advise` (units, chain,
// search, simulations) on a trace of about a million allocation events.
#include <benchmark/benchmark.h>

#include <map>

#include "units/step_layout.h"
#include "plan/advice.h"
#include "simulate/replay_simulator.h"
#include "solve/optimal_solver.h"
#include "synthetic_run.h"

namespace gcprof::bench {
namespace {

using namespace gcprof::advisor;

// The chain of a synthetic run with `units` units (one step, few transients:
// building it is not what is measured here).
const UnitChain& chainOf(int units) {
  static std::map<int, UnitChain> cache;
  auto it = cache.find(units);
  if (it != cache.end()) return it->second;
  RunShape shape{units, 2, 4};
  Trace t = syntheticRun(shape, units);
  std::vector<std::string> names;
  for (int k = 0; k < units; ++k) names.push_back("layers." + std::to_string(k));
  RunLayout layout = stepLayouts(t, names);
  return cache[units] = buildUnitChain(t, primaryFilter(t), layout, names);
}

void solve(benchmark::State& state, SegmentKind kind, double budget_fraction, bool unthinned = false) {
  const UnitChain& c = chainOf(static_cast<int>(state.range(0)));
  SolverOptions o = defaultSolverOptions(c.size(), kind);
  if (unthinned) {  // no thinning, no cap on region length
    o = SolverOptions{};
    o.kind = kind;
  }
  Bytes budget = static_cast<Bytes>(budget_fraction * static_cast<double>(c.baseline_peak));
  size_t states = 0;
  bool feasible = false, exact = false;
  Ns recompute = 0;
  for (auto _ : state) {
    Solution s = solveOptimal(c, budget, o);
    recompute = s.recompute_ns;
    states = s.states;
    feasible = s.feasible;
    exact = s.exact;
    benchmark::DoNotOptimize(s.recompute_ns);
  }
  state.counters["states"] = static_cast<double>(states);
  state.counters["feasible"] = feasible;
  state.counters["exact"] = exact;
  state.counters["recompute_ns"] = static_cast<double>(recompute);
}

void BM_OptimalModule60(benchmark::State& s) { solve(s, SegmentKind::Module, 0.6); }
void BM_OptimalRegion60(benchmark::State& s) { solve(s, SegmentKind::Region, 0.6); }
void BM_OptimalRegion30(benchmark::State& s) { solve(s, SegmentKind::Region, 0.3); }
BENCHMARK(BM_OptimalModule60)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OptimalRegion60)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OptimalRegion30)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);
// The same searches without thinning or a cap on region length (exact).
void BM_ExactModule60(benchmark::State& s) { solve(s, SegmentKind::Module, 0.6, true); }
void BM_ExactRegion60(benchmark::State& s) { solve(s, SegmentKind::Region, 0.6, true); }
BENCHMARK(BM_ExactModule60)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ExactRegion60)->Arg(100)->Unit(benchmark::kMillisecond);

void BM_MinimumPeak(benchmark::State& state) {
  const UnitChain& c = chainOf(static_cast<int>(state.range(0)));
  SolverOptions o;
  for (auto _ : state) benchmark::DoNotOptimize(minimumPeak(c, o).peak);
}
BENCHMARK(BM_MinimumPeak)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

// ~1M allocation events: 100 units x 10 steps x (500 transients + 3) x 2 events.
const Trace& millionEventRun() {
  static Trace t = syntheticRun(RunShape{100, 10, 500});
  return t;
}

void BM_AdviseMillionEvents(benchmark::State& state) {
  const Trace& t = millionEventRun();
  AdviceRequest r;
  r.budget = Budget::share(0.6);
  for (auto _ : state) benchmark::DoNotOptimize(advise(t, r).chosen.peak);
  state.counters["events"] = static_cast<double>(t.allocations.size() * 2);
}
BENCHMARK(BM_AdviseMillionEvents)->Unit(benchmark::kMillisecond)->Iterations(3)->MeasureProcessCPUTime();

void BM_SimulateMillionEvents(benchmark::State& state) {
  const Trace& t = millionEventRun();
  std::vector<std::string> names;
  for (int k = 0; k < 100; ++k) names.push_back("layers." + std::to_string(k));
  RunLayout layout = stepLayouts(t, names);
  Segments every;
  for (int k = 0; k < 100; ++k) every.push_back({k, k});
  AllocationFilter f = primaryFilter(t);
  for (auto _ : state) benchmark::DoNotOptimize(simulate(t, f, layout, every).peak);
}
BENCHMARK(BM_SimulateMillionEvents)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace gcprof::bench

BENCHMARK_MAIN();
