// Synthetic training steps over a chain of units, with the memory of each
// unit spelled out so that tests can work the answers out by hand.
#pragma once

#include <string>
#include <vector>

#include "trace_builder.h"

namespace gcprof::testing {

struct ChainSpec {
  int units = 3;
  int steps = 1;
  Bytes params = 1000;     // allocated before the first step, never freed
  Bytes transient = 50;    // per unit forward: allocated at +15, freed at +20
  Bytes saved = 200;       // per unit forward at +30, freed in its own backward
  Bytes output = 100;      // per unit forward at +40, freed in the next unit's backward
  Bytes grad = 10;         // per unit backward at +20, never freed (gradients)
  Ns forward = 40;         // forward range length (starts at +10 of its 100 ns slot)
  std::string runtime = "native";
};

inline std::string unitName(int k) { return "layers." + std::to_string(k); }
inline std::vector<std::string> unitNames(int units) {
  std::vector<std::string> names;
  for (int k = 0; k < units; ++k) names.push_back(unitName(k));
  return names;
}

// Step s occupies [s*S, s*S + S) with S = 200*units + 400. Unit k's forward
// is [s*S + 100k + 10, +forward]; its backward [s*S + 100(units+2) + 100(units-1-k) + 10, +40].
// The last unit's output is freed between forward and backward (the head's
// backward consumes it).
inline Ns stepSpan(const ChainSpec& c) { return 200 * c.units + 400; }
inline Ns stepStart(const ChainSpec& c, int s) { return 100 + s * stepSpan(c); }
inline Ns forwardStart(const ChainSpec& c, int s, int k) { return stepStart(c, s) + 100 * k + 10; }
inline Ns backwardStart(const ChainSpec& c, int s, int k) {
  return stepStart(c, s) + 100 * (c.units + 2) + 100 * (c.units - 1 - k) + 10;
}

// Adds an allocation to a trace already built (a chainTrace the test
// extends by hand), with the next id and its own address, and sorts the
// trace as loaded again.
inline void addAllocation(Trace& t, Ns at, Ns free, Bytes bytes, int64_t step = 0) {
  appendAllocation(t, at, free, bytes, -1, step);
  sortAsLoaded(t);
}

inline Trace chainTrace(const ChainSpec& c) {
  TraceBuilder b;
  b.runtime(c.runtime);
  b.alloc(0, -1, c.params, -1, -1);
  for (int s = 0; s < c.steps; ++s) {
    Ns o = stepStart(c, s);
    b.step(s, o, o + stepSpan(c) - 1);
    for (int k = 0; k < c.units; ++k) {
      Ns f = forwardStart(c, s, k), bw = backwardStart(c, s, k);
      b.range(unitName(k), Phase::Forward, f, f + c.forward, s);
      b.range(unitName(k), Phase::Backward, bw, bw + 40, s);
      if (c.transient) b.alloc(f + 5, f + 10, c.transient, -1, s);
      if (c.saved) b.alloc(f + 20, bw + 30, c.saved, -1, s);
      Ns out_free = k + 1 < c.units ? backwardStart(c, s, k + 1) + 35 : o + 100 * (c.units + 1);
      if (c.output) b.alloc(f + 30, out_free, c.output, -1, s);
      if (c.grad) b.alloc(bw + 20, -1, c.grad, -1, s);
    }
  }
  return b.build();
}

// Unit `unit` of step 0 ends in an in-place activation (ResNet's
// `relu_(out + identity)`): a module range "<unit>.act" at the end of its
// forward, over the unit's output, which the activation saves, so the trace
// shows that output freed as the unit's backward begins, like a saved tensor.
// `recorded`: the python shim's scalar "inplace <module>" that says the
// module ran in place (runs without it cannot tell). Returns the output.
struct InPlaceActivation {
  int64_t range_id = 0;      // the activation's forward range
  int64_t output_id = 0;     // the unit's output allocation
};
inline InPlaceActivation inPlaceActivation(Trace& t, const ChainSpec& c, int unit, bool recorded = true) {
  Ns f = forwardStart(c, 0, unit);
  InPlaceActivation out;
  for (Allocation& a : t.allocations)
    if (a.step == 0 && a.alloc == f + 30 && a.bytes == c.output) {
      a.free = backwardStart(c, 0, unit) + 1;
      out.output_id = a.id;
    }
  Range act;
  act.id = static_cast<int64_t>(t.ranges.size()) + 1000;
  act.name = unitName(unit) + ".act";
  act.domain = RangeDomain::Module;
  act.phase = Phase::Forward;
  act.depth = 3;
  act.start = f + 35;
  act.end = f + 38;
  act.input_bytes = act.output_bytes = c.output;
  t.ranges.push_back(act);
  out.range_id = act.id;
  if (recorded) t.scalars.push_back(Scalar{0, "inplace " + act.name, 1.0});
  sortAsLoaded(t);
  return out;
}

}  // namespace gcprof::testing
