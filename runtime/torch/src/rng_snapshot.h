// The random-number state a checkpointed segment's forward ran under.
//
// Recomputation must draw the same dropout masks as the first forward, and
// the rest of the step must not notice that a replay happened: take() a
// snapshot at forward, and in backward take() the current state, restore()
// the forward's, replay, restore() the current one again.
//
// Internal to gcprof_torch; header-only so that it adds no LibTorch TU.
#ifndef GCPROF_TORCH_RNG_SNAPSHOT_H
#define GCPROF_TORCH_RNG_SNAPSHOT_H

#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <mutex>
#include <utility>
#include <vector>

namespace gcprof::torch::detail {

class RngSnapshot {
 public:
  // The CPU generator always; the default generator of each CUDA device in
  // `cuda_devices` (the devices the segment's inputs live on, as
  // torch.utils.checkpoint does).
  static RngSnapshot take(const std::vector<c10::Device>& cuda_devices) {
    RngSnapshot s;
    s.states_.emplace_back(c10::Device(c10::kCPU), state_of(c10::Device(c10::kCPU)));
    for (const c10::Device& d : cuda_devices) s.states_.emplace_back(d, state_of(d));
    return s;
  }

  void restore() const {
    for (const auto& [device, state] : states_) {
      at::Generator gen = at::globalContext().defaultGenerator(device);
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(state);
    }
  }

  const std::vector<c10::Device> devices() const {
    std::vector<c10::Device> out;
    for (const auto& entry : states_) {
      if (entry.first.is_cuda()) out.push_back(entry.first);
    }
    return out;
  }

 private:
  static at::Tensor state_of(const c10::Device& device) {
    at::Generator gen = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(gen.mutex());
    return gen.get_state();
  }

  std::vector<std::pair<c10::Device, at::Tensor>> states_;
};

// Restores the state current at construction when the scope ends, even when
// the replay throws: the RNG stream of the rest of the step stays untouched.
class RngRestoreGuard {
 public:
  explicit RngRestoreGuard(const std::vector<c10::Device>& cuda_devices)
      : saved_(RngSnapshot::take(cuda_devices)) {}
  ~RngRestoreGuard() { saved_.restore(); }
  RngRestoreGuard(const RngRestoreGuard&) = delete;
  RngRestoreGuard& operator=(const RngRestoreGuard&) = delete;

 private:
  RngSnapshot saved_;
};

}  // namespace gcprof::torch::detail

#endif  // GCPROF_TORCH_RNG_SNAPSHOT_H
