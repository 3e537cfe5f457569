// A diagnostic of the chain model (not a test): on a real recording, every plan of
// whole units (every set of disjoint contiguous segments), the unit chain's
// peak against the replay simulator's. The chain adds the checkpoints' held
// arguments only to the last gap (chain/chain_peak.cpp); where a plan's
// chain peak is below the simulator's, a moment the chain leaves out sets
// the real peak (the other gaps' held arguments, for one).
//
//   chain_check TRACE.db RUN [UNITS_REGEX]
//   chain_check TRACE.db RUN --steps [UNITS_REGEX]   (per complete step: the
//       recorded peak, the simulated peak of no plan, which must equal it,
//       and of every unit checkpointed; the chain's `every` against it)
//   chain_check TRACE.db RUN --pair OTHER_RUN   (the what-if's instants:
//       how many region moments of two runs of one job pair up instant by instant)
//   chain_check TRACE.db RUN --scaled SIZE RUN=SIZE RUN=SIZE...  (the what-if: the
//       chain scaled to SIZE from the listed runs against RUN's, number by number)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "chain/chain_peak.h"
#include "plan/advice.h"
#include "scale/size_predictor.h"
#include "solve/fixed_plans.h"
#include "simulate/replay_simulator.h"
#include "trace_store.h"

using namespace gcprof;
using namespace gcprof::advisor;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: chain_check TRACE.db RUN [UNITS_REGEX]\n");
    return 2;
  }
  TraceStore store(argv[1], TraceStore::Mode::ReadOnly);
  Trace trace = store.load(std::atoll(argv[2]));
  AdviceRequest r;
  r.strategy = Strategy::None;
  r.tree = false;
  r.moments = true;  // as the what-if asks
  if (argc > 4 && std::string(argv[3]) == "--pair") {
    UnitChain a = advise(trace, r).chain, b = advise(store.load(std::atoll(argv[4])), r).chain;
    int moments = 0, paired = 0;
    size_t instants = 0;
    using Field = std::vector<std::vector<std::vector<Bytes>>> UnitChain::*;
    for (Field f : {&UnitChain::unit_peak_instants, &UnitChain::backward_peak_instants, &UnitChain::gap_peak_instants})
      for (size_t k = 0; k < (a.*f).size() && k < (b.*f).size(); ++k)
        for (size_t j = 0; j < (a.*f)[k].size() && j < (b.*f)[k].size(); ++j) {
          ++moments;
          instants += (a.*f)[k][j].size();
          if ((a.*f)[k][j].size() == (b.*f)[k][j].size()) ++paired;
        }
    std::printf("%d of %d region moments pair up instant by instant (%zu instants in the first run)\n", paired,
                moments, instants);
    return 0;
  }
  if (argc > 5 && std::string(argv[3]) == "--scaled") {
    std::vector<Trace> traces;
    std::vector<int64_t> sizes;
    for (int i = 5; i < argc; ++i) {
      std::string a = argv[i];
      traces.push_back(store.load(std::atoll(a.substr(0, a.find('=')).c_str())));
      sizes.push_back(std::atoll(a.substr(a.find('=') + 1).c_str()));
    }
    std::vector<SizedAdvice> runs;
    for (size_t i = 0; i < traces.size(); ++i) runs.push_back({sizes[i], &traces[i], advise(traces[i], r)});
    std::sort(runs.begin(), runs.end(), [](const SizedAdvice& a, const SizedAdvice& b) { return a.size < b.size; });
    SizePredictor p(runs, std::nullopt);
    const UnitChain& got = p.chainAt(std::atoll(argv[4]));
    UnitChain want = advise(trace, r).chain;
    // Numbers off by more than 0.1% of the peak; the checkpoints' arguments
    // always (found by matching bytes, they can be 0 at a size where the
    // match failed).
    auto show = [&](const char* name, const std::vector<Bytes>& g, const std::vector<Bytes>& w, bool always = false) {
      for (size_t k = 0; k < g.size() && k < w.size(); ++k)
        if (always || std::llabs(g[k] - w[k]) * 1000 > want.baseline_peak)
          std::printf("%-16s %2zu scaled %12lld recorded %12lld  %+lld\n", name, k, static_cast<long long>(g[k]),
                      static_cast<long long>(w[k]), static_cast<long long>(g[k] - w[k]));
    };
    show("unit_peak", got.unit_peak, want.unit_peak);
    show("backward_peak", got.backward_peak, want.backward_peak);
    show("gap_peak", got.gap_peak, want.gap_peak);
    show("before_backward", got.before_backward, want.before_backward);
    show("born_kept", got.born_kept, want.born_kept);
    show("born_peak", got.born_peak, want.born_peak);
    show("saved", got.saved, want.saved);
    show("held_arguments", got.held_arguments, want.held_arguments, true);
    show("mid_after_args", {got.mid_after_arguments}, {want.mid_after_arguments}, true);
    show("outside", {got.outside}, {want.outside});
    show("persistent", {got.persistent}, {want.persistent});
    show("baseline_peak", {got.baseline_peak}, {want.baseline_peak});
    Segments every = everyUnit(got.size());
    ChainPeak a = evaluateChain(got, every), b = evaluateChain(want, every);
    std::printf("every: scaled %lld at %s; recorded %lld at %s\n", static_cast<long long>(a.peak),
                whereOf(got, a).c_str(), static_cast<long long>(b.peak), whereOf(want, b).c_str());
    return 0;
  }
  if (argc > 3 && std::string(argv[3]) == "--steps") {
    if (argc > 4) r.units = argv[4];
    Advice a = advise(trace, r);
    SimulationOptions o;
    o.want_curve = true;
    Segments every = everyUnit(a.chain.size());
    Simulation none = simulate(trace, a.filter, a.layout, {}, o), all = simulate(trace, a.filter, a.layout, every, o);
    auto peakIn = [](const Simulation& sim, std::pair<Ns, Ns> span) {
      Bytes most = 0;
      for (const MemoryPoint& p : sim.curve)
        if (p.time >= span.first && p.time <= span.second) most = std::max(most, p.live);
      return most;
    };
    MemoryCurve recorded = memoryCurve(trace, a.filter);
    for (size_t s = 0; s < a.layout.steps.size(); ++s) {
      const StepLayout& st = a.layout.steps[s];
      Bytes rec = 0;
      for (const MemoryPoint& p : recorded.points)
        if (p.time >= st.start && p.time <= st.end) rec = std::max(rec, p.live);
      std::string skipped;
      for (size_t k = 0; k < st.units.size(); ++k)
        if (st.units[k].skipped) skipped += " " + a.chain.names[k];
      std::printf("step %lld%s: recorded %lld  none %lld  every %lld%s%s\n", static_cast<long long>(st.step),
                  st.complete ? "" : " (not complete)", static_cast<long long>(rec),
                  static_cast<long long>(peakIn(none, none.step_bounds[s])),
                  static_cast<long long>(peakIn(all, all.step_bounds[s])), skipped.empty() ? "" : "  skipped:",
                  skipped.c_str());
    }
    ChainPeak c = evaluateChain(a.chain, every);
    std::printf("every: chain %lld at %s; simulator %lld\n", static_cast<long long>(c.peak),
                whereOf(a.chain, c).c_str(), static_cast<long long>(all.peak));
    return 0;
  }
  if (argc > 3) r.units = argv[3];
  Advice a = advise(trace, r);
  int n = a.chain.size(), plans = 0, low = 0;
  Bytes worst = 0;
  Segments plan;
  std::function<void(int)> each = [&](int k) {
    if (k >= n) {
      if (plan.empty()) return;
      Bytes chain = evaluateChain(a.chain, plan).peak, sim = simulate(trace, a.filter, a.layout, plan).peak;
      ++plans;
      std::string text;
      for (const Segment& s : plan) text += " [" + std::to_string(s.first) + ".." + std::to_string(s.last) + "]";
      std::printf("%-24s chain %12lld  simulator %12lld  chain - simulator %+lld\n", text.c_str(),
                  static_cast<long long>(chain), static_cast<long long>(sim), static_cast<long long>(chain - sim));
      if (chain < sim) ++low;
      worst = std::min(worst, chain - sim);
      return;
    }
    each(k + 1);  // unit k not checkpointed
    for (int last = k; last < n; ++last) {
      plan.push_back(Segment(k, last));
      each(last + 1);
      plan.pop_back();
    }
  };
  each(0);
  std::printf("%d plans over %d units; chain below the simulator on %d (most: %lld B)\n", plans, n, low,
              static_cast<long long>(-worst));
  return 0;
}
