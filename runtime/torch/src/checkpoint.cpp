// The checkpoint autograd Function: forward without a graph, backward by replay.
#include "gcprof/torch/checkpoint.h"

#include "rng_snapshot.h"
#include "running_state.h"

#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/custom_class.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace gcprof::torch {
namespace {

using ::torch::autograd::AutogradContext;
using ::torch::autograd::variable_list;

thread_local int recompute_depth = 0;

struct RecomputeScope {
  RecomputeScope() { ++recompute_depth; }
  ~RecomputeScope() { --recompute_depth; }
};

// What backward needs besides the saved inputs. AutogradContext stores only
// IValues, so the segment function, the RNG snapshot and the running-state
// buffers travel in a capsule.
struct SegmentRecord : ::torch::CustomClassHolder {
  std::string name;
  SegmentFn fn;
  detail::RngSnapshot rng;
  std::vector<at::Tensor> running_state;  // the modules' own buffers, not copies
  size_t num_outputs = 0;
};

std::string segment_error(const std::string& name, const std::string& what) {
  return "gcprof::torch::checkpoint: segment \"" + name + "\" " + what;
}

// Versions of the inputs' version counters (0 for undefined and inference
// tensors, which have none and cannot change in place in a training step).
std::vector<int64_t> versions_of(at::TensorList tensors) {
  std::vector<int64_t> v;
  v.reserve(tensors.size());
  for (const at::Tensor& t : tensors) v.push_back(t.defined() && !t.is_inference() ? t._version() : 0);
  return v;
}

// The replay starts from the saved inputs: a segment that changed one in
// place would be replayed from the changed values and give wrong gradients.
void refuse_inputs_changed_in_place(const std::string& name, at::TensorList inputs,
                                    const std::vector<int64_t>& before) {
  const std::vector<int64_t> after = versions_of(inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (after[i] == before[i]) continue;
    throw std::runtime_error(segment_error(
        name, "changed its input " + std::to_string(i) +
                  " in place (an in-place op such as relu_ at its entry): the replay in backward would start "
                  "from the changed values and give wrong gradients. Make that op out of place (relu instead "
                  "of relu_, inplace(false)) or leave \"" + name + "\" out of the plan."));
  }
}

std::vector<c10::Device> cuda_devices_of(at::TensorList tensors) {
  std::vector<c10::Device> devices;
  for (const at::Tensor& t : tensors) {
    if (!t.defined() || !t.is_cuda()) continue;
    bool seen = false;
    for (const c10::Device& d : devices) seen = seen || d == t.device();
    if (!seen) devices.push_back(t.device());
  }
  return devices;
}

struct CheckpointFunction : public ::torch::autograd::Function<CheckpointFunction> {
  // `anchor` is an empty leaf that requires grad when no input does: without
  // it autograd would record no node and the parameters inside fn would get
  // no gradient.
  static variable_list forward(AutogradContext* ctx, const Segment& segment, const SegmentFn& fn,
                               at::TensorList inputs, const at::Tensor& anchor) {
    auto record = c10::make_intrusive<SegmentRecord>();
    record->name = segment.name;
    record->fn = fn;
    record->rng = detail::RngSnapshot::take(cuda_devices_of(inputs));
    std::vector<at::Tensor> in(inputs.begin(), inputs.end());
    const std::vector<int64_t> input_versions = versions_of(inputs);
    detail::SegmentBuffers buffers(segment.modules);
    std::vector<at::Tensor> out;
    {
      at::NoGradGuard no_grad;
      out = fn(in);
    }
    refuse_inputs_changed_in_place(segment.name, inputs, input_versions);
    record->running_state = buffers.running_state();
    record->num_outputs = out.size();
    ctx->save_for_backward(in);
    ctx->saved_data["segment"] = c10::IValue::make_capsule(record);
    // Outputs that got no gradient stay undefined instead of being filled
    // with zeros: no allocation for them, and the replay skips them.
    ctx->set_materialize_grads(false);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto holder = ctx->saved_data["segment"].toCapsule();
    auto* record = static_cast<SegmentRecord*>(holder.get());
    variable_list saved;
    try {
      saved = ctx->get_saved_variables();
    } catch (const c10::Error& e) {  // an input changed in place after the forward
      throw std::runtime_error(segment_error(
          record->name, "cannot be replayed: an input saved for its replay was changed in place after the "
                        "forward, so the replay would give wrong gradients (" +
                            std::string(e.what_without_backtrace()) + ")"));
    }

    std::vector<at::Tensor> detached;
    detached.reserve(saved.size());
    for (const at::Tensor& t : saved) {
      detached.push_back(t.defined() ? t.detach().requires_grad_(t.requires_grad()) : t);
    }

    // The statistics go back after the nested backward too: it may read
    // what the replay's ops saved of them, at the version they saved.
    detail::RunningStateRestore keep_running_state(record->running_state);
    std::vector<at::Tensor> replayed;
    {
      detail::RngRestoreGuard keep_current(record->rng.devices());
      record->rng.restore();
      RecomputeScope scope;
      at::AutoGradMode grad_on(true);
      replayed = record->fn(detached);
    }
    if (replayed.size() != record->num_outputs) {
      throw std::runtime_error(
          segment_error(record->name, "returned " + std::to_string(replayed.size()) +
                                          " tensors when replayed in backward but " +
                                          std::to_string(record->num_outputs) +
                                          " in forward; the segment function must return the same outputs every time"));
    }

    variable_list roots;
    variable_list root_grads;
    for (size_t i = 0; i < replayed.size() && i < grad_outputs.size(); ++i) {
      if (replayed[i].defined() && replayed[i].requires_grad() && grad_outputs[i].defined()) {
        roots.push_back(replayed[i]);
        root_grads.push_back(grad_outputs[i]);
      }
    }
    if (!roots.empty()) ::torch::autograd::backward(roots, root_grads);

    // One entry per forward argument: segment, fn, each input, the anchor.
    variable_list grads;
    grads.reserve(detached.size() + 3);
    grads.emplace_back();
    grads.emplace_back();
    for (const at::Tensor& d : detached) {
      grads.push_back(d.defined() && d.requires_grad() ? d.grad() : at::Tensor());
    }
    grads.emplace_back();
    return grads;
  }
};

}  // namespace

std::vector<at::Tensor> checkpoint(const Segment& segment, SegmentFn fn, const std::vector<at::Tensor>& inputs) {
  if (!fn) throw std::invalid_argument(segment_error(segment.name, "has an empty segment function"));
  for (size_t i = 0; i < segment.modules.size(); ++i) {
    if (!segment.modules[i]) {
      throw std::invalid_argument(segment_error(segment.name, "names a null module (modules[" + std::to_string(i) +
                                                                  "]): an empty module holder?"));
    }
  }
  bool any_requires_grad = false;
  for (const at::Tensor& t : inputs) any_requires_grad = any_requires_grad || (t.defined() && t.requires_grad());
  // Always defined (autograd records every tensor argument's metadata); it
  // holds no data, and requires grad only when no input does.
  at::Tensor anchor = at::empty({0}, at::TensorOptions().dtype(at::kFloat));
  if (!any_requires_grad && at::GradMode::is_enabled()) anchor.requires_grad_(true);
  return CheckpointFunction::apply(segment, fn, at::TensorList(inputs), anchor);
}

bool is_recomputing() { return recompute_depth > 0; }

}  // namespace gcprof::torch
