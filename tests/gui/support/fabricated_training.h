// Hand-built traces of a training loop, for the GUI's tests and benchmarks
// before (and besides) real recordings: an N-layer model whose parameters live
// throughout, whose layers allocate activations in their forward range and
// free them in their backward range, plus optimizer state made in step 0.
#pragma once

#include <set>
#include <string>

#include "trace.h"

namespace gcprof::testing {

struct TrainingShape {
  int layers = 8;
  int steps = 3;
  int saved_per_layer = 4;       // activations kept from forward to backward
  int transient_per_layer = 2;   // freed inside the layer's forward
  Bytes param_bytes = 48ll << 20;
  Bytes activation_bytes = 16ll << 20;  // each saved activation
  Ns layer_forward_ns = 2'000'000;
  std::set<int> checkpointed;    // layers re-run in backward (a verification run)
  int64_t baseline_run = 0;      // RunInfo links for a verification run
  int64_t plan_id = 0;
};

Trace fabricateTraining(const TrainingShape& shape);

// Appends `trace` as a new run of the file at `path`; returns the run id.
int64_t writeRun(const std::string& path, const Trace& trace);

// A plan document (gcprof.plan/1) for a fabricated trace checkpointing `layers`.
std::string planJson(int64_t run, int layers, const std::set<int>& checkpointed, Bytes budget);

}  // namespace gcprof::testing
