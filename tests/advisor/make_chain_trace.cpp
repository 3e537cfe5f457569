// make_chain_trace OUT.db [units] [steps] [runtime]: a synthetic training run
// (tests/advisor/chain_traces.h) in a trace file, for the CLI tests.
#include <cstdio>
#include <cstdlib>

#include "chain_traces.h"
#include "trace_file.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_chain_trace OUT.db [units] [steps] [python|native]\n");
    return 2;
  }
  gcprof::testing::ChainSpec spec;
  spec.units = argc > 2 ? std::atoi(argv[2]) : 8;
  spec.steps = argc > 3 ? std::atoi(argv[3]) : 3;
  spec.runtime = argc > 4 ? argv[4] : "native";
  // MiB-sized tensors, like a small transformer's layers.
  spec.params = 64 << 20;
  spec.transient = 8 << 20;
  spec.saved = 24 << 20;
  spec.output = 4 << 20;
  spec.grad = 1 << 20;
  spec.forward = 40;
  std::remove(argv[1]);
  gcprof::testing::writeTrace(argv[1], gcprof::testing::chainTrace(spec));
  return 0;
}
