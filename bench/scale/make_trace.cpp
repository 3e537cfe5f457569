// Writes a trace of a steady transformer-like training run of about N
// allocations, through the store's own writer, as `gcprof record` of a
// python job would make it: module ranges forward and backward (qualified
// names, the shim's depths and parents), allocations inside them written at
// their free as the recorder does (live ones at the end), steps, the loss
// and the shim's per-call cost. For the scale benchmark (bench/RESULTS.md,
// "Scale: 10M-allocation traces"):
//
//   scale_make_trace OUT.db --allocations N [--layers L] [--seed S]
//
// A step of L layers holds about 400 allocations per layer (GPT-2 on CPU
// makes a few hundred per layer and step), so N sets the number of steps.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "run_writer.h"
#include "trace.h"

namespace {

using namespace gcprof;

struct Shape {
  long long allocations = 1'000'000;
  int layers = 24;
  uint64_t seed = 1;
  // Per sub-module of a layer and step: saved for backward, freed within
  // the forward, and made in the backward (gradients of the activations).
  int saved = 20;
  int transient = 30;
  int backward = 50;
};

const char* kParts[] = {"ln_1", "attn", "ln_2", "mlp"};
constexpr int kPartCount = 4;
// Relative activation size of each part (the MLP's are 4x wide).
const Bytes kPartBytes[] = {3 << 20, 6 << 20, 3 << 20, 12 << 20};

class TraceMaker {
 public:
  TraceMaker(const std::string& path, const Shape& s) : w_(path), s_(s), rng_(s.seed) {}

  void run() {
    RunInfo info;
    info.command = R"(["python3","train_gpt.py","--layers",")" + std::to_string(s_.layers) + "\"]";
    info.cwd = "/tmp";
    info.name = "scale";
    info.backend = "host";
    info.runtime = "python";
    info.status = "running";
    info.pid = 4242;
    info.started = now_;
    w_.createRun(info);
    for (int p = 0; p < s_.layers * kPartCount + 2; ++p) live_.push_back(alloc(8 << 20, 0, -1, 0));
    const long long per_step = static_cast<long long>(s_.layers) * kPartCount * (s_.saved + s_.transient + s_.backward);
    const long long steps = std::max<long long>(2, s_.allocations / per_step);
    for (long long step = 0; step < steps; ++step) writeStep(step);
    for (RecordedAllocation& a : live_) w_.add(a);  // still live at the end, as the recorder writes them
    w_.commit();
    info.status = "complete";
    info.ended = now_;
    w_.finish(info);
    std::printf("%lld allocations, %lld ranges, %lld steps\n", static_cast<long long>(next_alloc_ - 1),
                static_cast<long long>(next_range_ - 1), steps);
  }

 private:
  RecordedAllocation alloc(Bytes bytes, int64_t range, int64_t step, Ns lifetime) {
    RecordedAllocation a;
    a.id = next_alloc_++;
    a.addr = 0x7f0000000000ull + (static_cast<uint64_t>(a.id) % 65536) * 0x100000;
    a.bytes = bytes;
    a.thread = 1;
    a.alloc = now_;
    a.free = lifetime > 0 ? now_ + lifetime : -1;
    a.range = range;
    a.step = step;
    now_ += 2'000 + static_cast<Ns>(rng_() % 3'000);
    return a;
  }
  Bytes jittered(Bytes b) { return b + static_cast<Bytes>(rng_() % 4096) * 64; }

  Range open(const std::string& name, Phase phase, int64_t parent, int64_t step) {
    Range r;
    r.id = next_range_++;
    r.name = name;
    r.domain = RangeDomain::Module;
    r.phase = phase;
    r.thread = 1;
    r.depth = 1 + static_cast<int>(std::count(name.begin(), name.end(), '.'));
    r.parent = parent;
    r.start = now_;
    r.step = step;
    return r;
  }
  void close(Range& r, Bytes in, Bytes out) {
    now_ += 1'000;
    r.end = now_;
    r.input_bytes = in;
    r.output_bytes = out;
    w_.add(r);
  }
  // Frees what the recorder would have written by now, in free order.
  void writeFreed(std::vector<RecordedAllocation>& pending) {
    std::sort(pending.begin(), pending.end(),
              [](const RecordedAllocation& a, const RecordedAllocation& b) { return a.free < b.free; });
    for (const RecordedAllocation& a : pending) w_.add(a);
    pending.clear();
  }

  void writeStep(long long step) {
    w_.begin();
    Step st{step, now_, 0, 0};
    std::vector<RecordedAllocation> freed;
    // saved[l][p]: the part's activations, kept until its backward.
    std::vector<std::vector<std::vector<RecordedAllocation>>> saved(
        s_.layers, std::vector<std::vector<RecordedAllocation>>(kPartCount));
    for (int l = 0; l < s_.layers; ++l) {
      const std::string layer = "transformer.h." + std::to_string(l);
      Range lr = open(layer, Phase::Forward, 0, step);
      for (int p = 0; p < kPartCount; ++p) {
        Range pr = open(layer + "." + kParts[p], Phase::Forward, lr.id, step);
        for (int k = 0; k < s_.transient + s_.saved; ++k) {
          if (k % 3 == 0 && k / 3 < s_.saved) {
            saved[l][p].push_back(alloc(jittered(kPartBytes[p] / 4), pr.id, step, 0));
          } else {
            freed.push_back(alloc(jittered(kPartBytes[p] / 2), pr.id, step, 2'500));
          }
        }
        while (static_cast<int>(saved[l][p].size()) < s_.saved)
          saved[l][p].push_back(alloc(jittered(kPartBytes[p] / 4), pr.id, step, 0));
        close(pr, kPartBytes[p], kPartBytes[p]);
      }
      close(lr, kPartBytes[0], kPartBytes[0]);
    }
    now_ += 200'000;  // loss
    for (int l = s_.layers - 1; l >= 0; --l) {
      const std::string layer = "transformer.h." + std::to_string(l);
      Range lr = open(layer, Phase::Backward, 0, step);
      for (int p = kPartCount - 1; p >= 0; --p) {
        Range pr = open(layer + "." + kParts[p], Phase::Backward, lr.id, step);
        for (int k = 0; k < s_.backward; ++k) freed.push_back(alloc(jittered(kPartBytes[p] / 2), pr.id, step, 3'000));
        for (RecordedAllocation& a : saved[l][p]) {
          a.free = now_;
          freed.push_back(a);
          now_ += 500;
        }
        close(pr, kPartBytes[p], kPartBytes[p]);
      }
      close(lr, kPartBytes[0], kPartBytes[0]);
      writeFreed(freed);
    }
    now_ += 300'000;  // optimizer
    st.end = now_;
    w_.add(st);
    w_.add(Scalar{step, "loss", 4.0 / (1.0 + 0.01 * static_cast<double>(step))});
    w_.add(Scalar{step, "hook_ns_per_call", 4000});
    w_.commit();
    now_ += 50'000;
  }

  RunWriter w_;
  Shape s_;
  std::mt19937_64 rng_;
  Ns now_ = 1'000'000'000;
  int64_t next_alloc_ = 1;
  int64_t next_range_ = 1;
  std::vector<RecordedAllocation> live_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: %s OUT.db --allocations N [--layers L] [--seed S]\n", argv[0]);
    return 2;
  }
  Shape s;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--allocations")) s.allocations = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--layers")) s.layers = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seed")) s.seed = std::strtoull(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "%s: unknown option %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (s.allocations <= 0 || s.layers <= 0) {
    std::fprintf(stderr, "%s: --allocations and --layers must be above 0\n", argv[0]);
    return 2;
  }
  std::remove(argv[1]);
  try {
    TraceMaker(argv[1], s).run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  return 0;
}
