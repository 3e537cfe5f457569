// Uses both installed targets: the C API (steps and a scalar, recorded when
// run under `gcprof record`) and gcprof::torch's plan reader.
#include <gcprof/gcprof.h>
#include <gcprof/torch/plan.h>

#include <cstdio>

int main() {
  const char* text = R"({"format": "gcprof.plan/1", "units": ["a", "b", "c"],
                         "checkpoint": [["a", "b"]]})";
  auto plan = gcprof::torch::CheckpointPlan::parse(text, "inline");
  auto segments = plan.resolve({"a", "b", "c"});
  for (int step = 0; step < 2; ++step) {
    gcprof_step_begin(step);
    gcprof_scalar("loss", 1.0 / (step + 1));
    gcprof_step_end();
  }
  std::printf("segments %zu first %zu last %zu\n", segments.size(), segments[0].first,
              segments[0].last);
  return 0;
}
