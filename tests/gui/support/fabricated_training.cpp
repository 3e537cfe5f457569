#include "fabricated_training.h"

#include <algorithm>
#include <string>
#include <vector>

#include "run_writer.h"

namespace gcprof::testing {
namespace {

class Builder {
 public:
  explicit Builder(Trace& t) : t_(t) {}
  Ns now = 1'000'000;

  int64_t open(const std::string& name, Phase phase, int64_t parent, int64_t step) {
    Range r;
    r.id = static_cast<int64_t>(t_.ranges.size()) + 1;
    r.name = name;
    r.domain = RangeDomain::Module;
    r.phase = phase;
    r.thread = 1;
    r.depth = name.empty() ? 0 : 1 + static_cast<int>(std::count(name.begin(), name.end(), '.'));
    r.parent = parent;
    r.start = now;
    r.end = now;
    r.step = step;
    t_.ranges.push_back(r);
    return r.id;
  }
  void close(int64_t id) { t_.ranges[id - 1].end = now; }
  size_t alloc(Bytes bytes, int64_t range, int64_t step) {
    Allocation a;
    a.id = static_cast<int64_t>(t_.allocations.size()) + 1;
    a.addr = 0x10000000ull + static_cast<uint64_t>(a.id) * 64;
    a.bytes = bytes;
    a.context = t_.contexts.intern({0, 1});  // stream 0, the ranges' thread
    a.alloc = now;
    a.range = range;
    a.step = step;
    t_.allocations.push_back(a);
    now += 50;
    return t_.allocations.size() - 1;
  }
  void free(size_t index) {
    t_.allocations[index].free = now;
    now += 50;
  }

 private:
  Trace& t_;
};

}  // namespace

Trace fabricateTraining(const TrainingShape& s) {
  Trace t;
  t.run.id = 0;
  t.run.name = s.checkpointed.empty() ? "fabricated" : "fabricated-verify";
  t.run.backend = "host";
  t.run.runtime = "python";
  t.run.status = "complete";
  t.run.started = 1'000'000;
  t.run.baseline_run = s.baseline_run;
  t.run.plan_id = s.plan_id;
  Builder b(t);
  for (int l = 0; l < s.layers; ++l) b.alloc(s.param_bytes, 0, -1);  // parameters
  b.now += 1'000'000;
  const Ns gap = s.layer_forward_ns / (s.saved_per_layer + s.transient_per_layer + 1);
  for (int step = 0; step < s.steps; ++step) {
    Step st{step, b.now, 0};
    std::vector<std::vector<size_t>> saved(s.layers);
    for (int l = 0; l < s.layers; ++l) {
      std::string name = "layers." + std::to_string(l);
      const Ns fwd_start = b.now;
      int64_t fwd = b.open(name, Phase::Forward, 0, step);
      int64_t inner = b.open(name + ".mlp", Phase::Forward, fwd, step);
      for (int k = 0; k < s.saved_per_layer; ++k) {
        saved[l].push_back(b.alloc(s.activation_bytes, inner, step));
        b.now += gap;
      }
      for (int k = 0; k < s.transient_per_layer; ++k) {
        size_t tmp = b.alloc(s.activation_bytes / 2, inner, step);
        b.now += gap / 2;
        b.free(tmp);
      }
      b.now = std::max(b.now, fwd_start + s.layer_forward_ns - 100);
      b.close(inner);
      if (s.checkpointed.count(l)) {  // dropped at the end of the forward
        for (size_t i : saved[l]) b.free(i);
        saved[l].clear();
      }
      b.close(fwd);
    }
    for (int l = s.layers - 1; l >= 0; --l) {
      std::string name = "layers." + std::to_string(l);
      int64_t bwd = b.open(name, Phase::Backward, 0, step);
      if (s.checkpointed.count(l)) {  // recomputed at the start of the backward
        for (int k = 0; k < s.saved_per_layer; ++k) {
          saved[l].push_back(b.alloc(s.activation_bytes, bwd, step));
          b.now += gap;
        }
      }
      size_t grad_tmp = b.alloc(s.activation_bytes, bwd, step);
      b.now += s.layer_forward_ns;
      for (size_t i : saved[l]) b.free(i);
      b.free(grad_tmp);
      if (step == 0) b.alloc(s.param_bytes, bwd, step);  // .grad, kept across steps
      b.close(bwd);
    }
    if (step == 0)
      for (int l = 0; l < s.layers; ++l) b.alloc(2 * s.param_bytes, 0, step);  // Adam state
    b.now += s.layer_forward_ns;
    st.end = b.now;
    t.steps.push_back(st);
    t.scalars.push_back({step, "loss", 4.0 / (step + 1)});
    b.now += 500'000;
  }
  t.run.ended = b.now;
  return t;
}

int64_t writeRun(const std::string& path, const Trace& t) { return RunWriter(path).appendRun(t); }

std::string planJson(int64_t run, int layers, const std::set<int>& checkpointed, Bytes budget) {
  std::string units, segs;
  for (int l = 0; l < layers; ++l) {
    std::string q = "\"layers." + std::to_string(l) + "\"";
    units += (l ? "," : "") + q;
    if (checkpointed.count(l)) segs += (segs.empty() ? "[" : ",[") + q + "]";
  }
  return "{\"format\":\"gcprof.plan/1\",\"trace_run\":" + std::to_string(run) +
         ",\"strategy\":\"optimal\",\"budget_bytes\":" + std::to_string(budget) +
         ",\"units\":[" + units + "],\"checkpoint\":[" + segs + "]" +
         ",\"predicted\":{\"peak_bytes\":0,\"recompute_ns\":0,\"step_ns\":0}}";
}

}  // namespace gcprof::testing
