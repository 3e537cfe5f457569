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

// Step s occupies [s*S, s*S + S) with S = 200*units + 400. Unit k's forward
// is [s*S + 100k + 10, +forward]; its backward [s*S + 100(units+2) + 100(units-1-k) + 10, +40].
// The last unit's output is freed between forward and backward (the head's
// backward consumes it).
inline Trace chainTrace(const ChainSpec& c) {
  TraceBuilder b;
  b.runtime(c.runtime);
  Ns S = 200 * c.units + 400;
  b.alloc(0, -1, c.params, -1, -1);
  for (int s = 0; s < c.steps; ++s) {
    Ns o = 100 + s * S;
    b.step(s, o, o + S - 1);
    Ns bwd0 = o + 100 * (c.units + 2);
    auto fwdAt = [&](int k) { return o + 100 * k + 10; };
    auto bwdAt = [&](int k) { return bwd0 + 100 * (c.units - 1 - k) + 10; };
    for (int k = 0; k < c.units; ++k) {
      Ns f = fwdAt(k), bw = bwdAt(k);
      b.range(unitName(k), Phase::Forward, f, f + c.forward, s);
      b.range(unitName(k), Phase::Backward, bw, bw + 40, s);
      if (c.transient) b.alloc(f + 5, f + 10, c.transient, -1, s);
      if (c.saved) b.alloc(f + 20, bw + 30, c.saved, -1, s);
      Ns out_free = k + 1 < c.units ? bwdAt(k + 1) + 35 : o + 100 * (c.units + 1);
      if (c.output) b.alloc(f + 30, out_free, c.output, -1, s);
      if (c.grad) b.alloc(bw + 20, -1, c.grad, -1, s);
    }
  }
  return b.build();
}

}  // namespace gcprof::testing
