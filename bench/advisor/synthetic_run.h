// Synthetic training runs and unit chains of any size for the advisor
// benchmarks: N units per step, each with many small transient allocations,
// a few saved activations and an output kept for the next unit's backward,
// with a little variation so that no two units are alike.
#pragma once

#include <random>
#include <string>

#include "chain/unit_chain.h"
#include "trace.h"

namespace gcprof::bench {

struct RunShape {
  int units = 100;
  int steps = 4;
  int transients_per_unit = 100;  // each one alloc + free event in the forward
};

inline Trace syntheticRun(const RunShape& shape, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> jitter(0, 1 << 16);
  Trace t;
  t.run.id = 1;
  t.run.runtime = "native";
  int64_t id = 0;
  auto alloc = [&](Ns at, Ns free, Bytes bytes, int64_t step) {
    Allocation a;
    a.id = ++id;
    a.addr = static_cast<uint64_t>(id) * 64;
    a.bytes = bytes;
    a.alloc = at;
    a.free = free;
    a.step = step;
    t.allocations.push_back(a);
  };
  auto range = [&](const std::string& name, Phase p, Ns s, Ns e, int64_t step) {
    Range r;
    r.id = static_cast<int64_t>(t.ranges.size()) + 1;
    r.name = name;
    r.domain = RangeDomain::Module;
    r.phase = p;
    r.depth = 2;
    r.start = s;
    r.end = e;
    r.step = step;
    t.ranges.push_back(r);
  };
  const Ns slot = 10 * (shape.transients_per_unit + 10);
  alloc(0, -1, Bytes{1} << 30, -1);  // parameters
  Ns o = 1000;
  for (int s = 0; s < shape.steps; ++s) {
    Ns fwd0 = o + 100, bwd0 = fwd0 + slot * shape.units + 1000;
    auto fwdAt = [&](int k) { return fwd0 + slot * k; };
    auto bwdAt = [&](int k) { return bwd0 + slot * (shape.units - 1 - k); };
    for (int k = 0; k < shape.units; ++k) {
      std::string name = "layers." + std::to_string(k);
      Ns f = fwdAt(k), b = bwdAt(k);
      range(name, Phase::Forward, f, f + slot - 20, s);
      range(name, Phase::Backward, b, b + slot - 20, s);
      for (int i = 0; i < shape.transients_per_unit; ++i)
        alloc(f + 10 * i + 1, f + 10 * i + 5, (Bytes{1} << 20) + jitter(rng), s);
      Bytes saved = (Bytes{24} << 20) + jitter(rng) * 64;
      alloc(f + slot - 60, b + slot - 40, saved, s);
      Ns out_free = k + 1 < shape.units ? bwdAt(k + 1) + slot - 30 : bwd0 - 500;
      alloc(f + slot - 50, out_free, Bytes{4} << 20, s);
      alloc(b + 20, -1, Bytes{1} << 16, s);  // gradients
    }
    Ns end = bwd0 + slot * shape.units + 500;
    t.steps.push_back({s, o, end});
    o = end + 100;
  }
  std::sort(t.ranges.begin(), t.ranges.end(),
            [](const Range& a, const Range& b) { return a.start < b.start; });
  std::sort(t.allocations.begin(), t.allocations.end(),
            [](const Allocation& a, const Allocation& b) { return a.alloc < b.alloc; });
  return t;
}

}  // namespace gcprof::bench
