// Marking the layers of a LibTorch model for gcprof through its C API.
//
// Forward ranges are plain scopes. Backward ranges come from gradient hooks
// on the tensors between layers: the gradient wrt layer i's output arriving
// starts layer i's backward, the gradient wrt its input being complete ends
// it. The tensor between layer i and i+1 is both, so one hook per boundary
// does both (first ends i+1, then starts i). Hooks capture no tensor: they
// change nothing that autograd keeps alive.
//
// Without `gcprof record` every call is a no-op (see gcprof/gcprof.h).
#ifndef GCPROF_SAMPLES_LAYER_MARKS_H
#define GCPROF_SAMPLES_LAYER_MARKS_H

#include <gcprof/gcprof.h>
#include <torch/torch.h>

#include <string>
#include <vector>

// A range open for the lifetime of a scope.
class MarkedScope {
 public:
  MarkedScope(const std::string& name, int phase) : id_(gcprof_range_start(name.c_str(), phase)) {}
  ~MarkedScope() { gcprof_range_end(id_); }
  MarkedScope(const MarkedScope&) = delete;
  MarkedScope& operator=(const MarkedScope&) = delete;

 private:
  uint64_t id_;
};

class LayerMarks {
 public:
  explicit LayerMarks(int64_t layers) : open_(layers, 0) {
    for (int64_t i = 0; i < layers; ++i) {
      names_.push_back("layers." + std::to_string(i));
      recompute_names_.push_back("recompute layers." + std::to_string(i));
    }
  }

  const std::vector<std::string>& names() const { return names_; }
  const std::string& name(int64_t i) const { return names_[i]; }
  const std::string& recompute_name(int64_t i) const { return recompute_names_[i]; }

  // `x` is the input of layer 0: its gradient completes layer 0's backward.
  void watch_first_input(const torch::Tensor& x) {
    if (!x.requires_grad()) return;
    x.register_hook([this](const torch::Tensor&) { end_backward(0); });
  }

  // `y` is the output of layer i (the input of layer i+1). With
  // begin_i == false only layer i+1's backward ends here: a checkpointed
  // segment starts its last layer's backward on the replayed output instead,
  // after the recomputation.
  void watch_output(const torch::Tensor& y, int64_t i, bool begin_i = true) {
    if (!y.requires_grad()) return;
    y.register_hook([this, i, begin_i](const torch::Tensor&) {
      end_backward(i + 1);
      if (begin_i) begin_backward(i);
    });
  }

 private:
  void begin_backward(int64_t i) {
    end_backward(i);  // a step that never reached this layer's input
    open_[i] = gcprof_range_start(names_[i].c_str(), GCPROF_BACKWARD);
  }
  void end_backward(int64_t i) {
    if (i >= static_cast<int64_t>(open_.size()) || open_[i] == 0) return;
    gcprof_range_end(open_[i]);
    open_[i] = 0;
  }

  std::vector<std::string> names_;
  std::vector<std::string> recompute_names_;
  std::vector<uint64_t> open_;  // backward range ids, 0 = closed
};

#endif  // GCPROF_SAMPLES_LAYER_MARKS_H
