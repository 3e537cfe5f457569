// Diagnostic for issue 12 (not a test): on a real recording, every plan of
// whole units (every set of disjoint contiguous segments), the unit chain's
// peak against the replay simulator's. The chain adds the checkpoints' held
// arguments only to the last gap (model/chain_peak.cpp); where a plan's
// chain peak is below the simulator's, a moment the chain leaves out sets
// the real peak (the other gaps' held arguments, for one).
//
//   chain_check TRACE.db RUN [UNITS_REGEX]
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "model/chain_peak.h"
#include "plan/advice.h"
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
