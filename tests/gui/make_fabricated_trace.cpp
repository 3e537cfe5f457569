// Writes a fabricated 8-layer training trace for the screenshot tests:
//   gui_make_trace out.db            baseline run only
//   gui_make_trace out.db --overlay  plus a plan (layers 1, 3, 5) and its verification run
//   gui_make_trace out.db --allocations N   a 32-layer run of about N allocations (scale)
//   gui_make_trace out.db --damaged-steps   steps 100 ns apart at 2^60 ns, the rest as usual
//                                           (a damaged steps table: 36 years after the allocations)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fabricated_training.h"
#include "trace_store.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s out.db [--overlay]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const bool overlay = argc > 2 && std::strcmp(argv[2], "--overlay") == 0;
  const bool damaged = argc > 2 && std::strcmp(argv[2], "--damaged-steps") == 0;
  const long long allocations = argc > 3 && std::strcmp(argv[2], "--allocations") == 0 ? std::atoll(argv[3]) : 0;
  std::remove(path.c_str());
  using namespace gcprof;
  testing::TrainingShape shape;
  if (allocations > 0) {
    shape.layers = 32;
    shape.saved_per_layer = static_cast<int>(allocations / (shape.steps * shape.layers * 2));
    shape.transient_per_layer = shape.saved_per_layer;
    shape.activation_bytes = 64ll << 10;
    shape.layer_forward_ns = static_cast<Ns>(shape.saved_per_layer) * 400;
  }
  Trace trace = testing::fabricateTraining(shape);
  if (damaged)
    for (size_t i = 0; i < trace.steps.size(); ++i) {
      trace.steps[i].start = (Ns{1} << 60) + static_cast<Ns>(i) * 100;
      trace.steps[i].end = trace.steps[i].start + 50;
    }
  int64_t base = testing::writeRun(path, trace);
  if (overlay) {
    const std::set<int> layers = {1, 3, 5};
    const Bytes budget = 1950ll << 20;
    int64_t plan = 0;
    {
      TraceStore store(path, TraceStore::Mode::ReadWrite);
      plan = store.savePlan({0, base, 1, "optimal", budget,
                             testing::planJson(base, shape.layers, layers, budget)});
    }
    testing::TrainingShape verify = shape;
    verify.checkpointed = layers;
    verify.baseline_run = base;
    verify.plan_id = plan;
    int64_t run = testing::writeRun(path, testing::fabricateTraining(verify));
    TraceStore store(path, TraceStore::Mode::ReadWrite);
    store.saveVerification({0, plan, base, run, "PASS", 2, "{}"});
  }
  std::printf("%s: run %lld%s\n", path.c_str(), static_cast<long long>(base),
              overlay ? " with a plan and a verification run" : "");
  return 0;
}
