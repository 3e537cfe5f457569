// The running state of a checkpointed segment's modules, and putting it back.
//
// A replay runs the segment's forward again in training mode, so BatchNorm
// updates running_mean, running_var and num_batches_tracked a second time
// (a silent change to training that losses do not show; checkpointing.py
// does the same in python). The first forward tells which buffers are
// running state: those named as BatchNorm and InstanceNorm name them
// (some kernels update the statistics without moving the version counter),
// and any other buffer whose version counter moved during the forward. The
// replay copies those, and RunningStateRestore copies them back when it ends.
//
// Internal to gcprof_torch; header-only so that it adds no LibTorch TU.
#ifndef GCPROF_TORCH_RUNNING_STATE_H
#define GCPROF_TORCH_RUNNING_STATE_H

#include <ATen/core/Tensor.h>
#include <c10/core/GradMode.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace gcprof::torch::detail {

// The buffers of some modules and their sub-modules, each once, with the
// version each had when this was made.
class SegmentBuffers {
 public:
  explicit SegmentBuffers(const std::vector<std::shared_ptr<::torch::nn::Module>>& modules) {
    std::unordered_set<const c10::TensorImpl*> seen;
    for (const auto& module : modules) {
      if (!module) continue;
      for (const auto& item : module->named_buffers(/*recurse=*/true)) {
        const at::Tensor& b = item.value();
        // Inference tensors have no version counter and cannot be updated in a training forward.
        if (!b.defined() || b.is_inference() || !seen.insert(b.unsafeGetTensorImpl()).second) continue;
        buffers_.push_back({item.key(), b, b._version()});
      }
    }
  }

  // Those a training forward updates, judged since construction.
  std::vector<at::Tensor> running_state() const {
    std::vector<at::Tensor> out;
    for (const Buffer& b : buffers_) {
      if (is_named_running_state(b.name) || b.tensor._version() != b.version) out.push_back(b.tensor);
    }
    return out;
  }

 private:
  static bool is_named_running_state(const std::string& qualified) {
    const std::string leaf = qualified.substr(qualified.rfind('.') + 1);  // npos + 1 == 0
    return leaf.rfind("running_", 0) == 0 || leaf == "num_batches_tracked";
  }

  struct Buffer {
    std::string name;
    at::Tensor tensor;
    int64_t version;
  };
  std::vector<Buffer> buffers_;
};

// Copies `buffers` and puts the copies back when the scope ends, even when
// the replay throws: after the replay the statistics are bit for bit those
// of the first forward.
class RunningStateRestore {
 public:
  explicit RunningStateRestore(const std::vector<at::Tensor>& buffers) {
    for (const at::Tensor& b : buffers) saved_.emplace_back(b, b.clone());
  }
  ~RunningStateRestore() {
    c10::AutoGradMode no_grad(false);
    for (auto& [buffer, copy] : saved_) {
      try {
        buffer.copy_(copy);
      } catch (const std::exception& e) {  // a destructor must not throw; say it instead of staying silent
        std::cerr << "gcprof::torch::checkpoint: could not put a running-state buffer back after a replay: "
                  << e.what() << "\n";
      }
    }
  }
  RunningStateRestore(const RunningStateRestore&) = delete;
  RunningStateRestore& operator=(const RunningStateRestore&) = delete;

 private:
  std::vector<std::pair<at::Tensor, at::Tensor>> saved_;
};

}  // namespace gcprof::torch::detail

#endif  // GCPROF_TORCH_RUNNING_STATE_H
