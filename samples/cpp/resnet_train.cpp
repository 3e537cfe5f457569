// resnet_train: trains a small ResNet with BatchNorm on random images (LibTorch).
//
//   build/bin/resnet_train --layers 4 --steps 4
//   gcprof record -o resnet.db -- build/bin/resnet_train --layers 4 --steps 4
//   GCPROF_PLAN=plan.json build/bin/resnet_train ...   # checkpoint what the plan says
//
// Prints one line per step, `step <i> loss <value>`, then one line with the
// running state every BatchNorm keeps, `buffers <norm> num_batches_tracked
// <n>`: a plan must change neither (a replay that updated the statistics a
// second time shows in the second line only). Marks steps, the loss and every
// block as gpt_train does, and after each step records what `gcprof verify`
// compares besides the loss: `grad_norm` and `buffer_norm`, float64 L2 norms
// of the gradients and of the buffers (as the python shim does, docs/report.md).
#include "planned_blocks.h"
#include "resnet_model.h"

#include <CLI/CLI.hpp>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace {

struct TrainOptions {
  ResNetConfig model;
  int64_t image = 32;
  int64_t batch = 32;
  int64_t steps = 4;
  uint64_t seed = 0;
  double lr = 0.05;
  double momentum = 0.9;
  std::string device = "cpu";
};

torch::Tensor forward_pass(ResNet& model, LayerMarks& marks, const std::vector<int64_t>& segment_end,
                           const torch::Tensor& images) {
  torch::Tensor x;
  {
    MarkedScope range("stem", GCPROF_FORWARD);
    x = model->stem(images);
  }
  x = forward_blocks(model->blocks, marks, segment_end, x);
  MarkedScope range("head", GCPROF_FORWARD);
  return model->head(torch::flatten(torch::adaptive_avg_pool2d(x, {1, 1}), 1));
}

// L2 norm of all tensors together, summed in float64: deterministic on CPU,
// so equal runs give equal values and verify can compare them closely.
double float64_norm(const std::vector<torch::Tensor>& tensors) {
  double squares = 0;
  for (const torch::Tensor& t : tensors) {
    if (t.defined() && t.numel() > 0) squares += t.detach().to(torch::kDouble).square().sum().item<double>();
  }
  return std::sqrt(squares);
}

std::vector<torch::Tensor> gradients_of(ResNet& model) {
  std::vector<torch::Tensor> grads;
  for (const torch::Tensor& p : model->parameters()) grads.push_back(p.grad());
  return grads;
}

int64_t most_batches_tracked(ResNet& model) {
  int64_t most = 0;
  for (const auto& b : model->named_buffers()) {
    if (b.key().ends_with("num_batches_tracked")) most = std::max(most, b.value().item<int64_t>());
  }
  return most;
}

int train(const TrainOptions& o) {
  if (o.device == "cuda" && !torch::cuda::is_available()) {
    std::cerr << "resnet_train: --device cuda but no CUDA device is available; use --device cpu\n";
    return 2;
  }
  const torch::Device device(o.device == "cuda" ? torch::kCUDA : torch::kCPU);
  LayerMarks marks(o.model.layers);
  std::vector<int64_t> segment_end;
  try {
    segment_end = segments_from_plan(marks);
  } catch (const gcprof::torch::PlanError& e) {
    std::cerr << "resnet_train: " << e.what() << "\n";
    return 2;
  }

  torch::manual_seed(o.seed);
  ResNet model(o.model);
  model->to(device);
  model->train();
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(o.lr).momentum(o.momentum));
  at::Generator data = at::make_generator<at::CPUGeneratorImpl>(o.seed + 1);

  for (int64_t step = 0; step < o.steps; ++step) {
    gcprof_step_begin(step);
    torch::Tensor images = torch::randn({o.batch, 3, o.image, o.image}, data, torch::kFloat).to(device);
    torch::Tensor labels = torch::randint(0, o.model.classes, {o.batch}, data, torch::kLong).to(device);
    optimizer.zero_grad();
    torch::Tensor logits = forward_pass(model, marks, segment_end, images);
    torch::Tensor loss = torch::nn::functional::cross_entropy(logits, labels);
    loss.backward();
    optimizer.step();
    const double value = loss.item<double>();
    gcprof_scalar("loss", value);
    gcprof_scalar("grad_norm", float64_norm(gradients_of(model)));
    gcprof_scalar("buffer_norm", float64_norm(model->buffers()));
    gcprof_step_end();
    std::printf("step %lld loss %.6f\n", static_cast<long long>(step), value);
    std::fflush(stdout);
  }
  std::printf("buffers %.17g num_batches_tracked %lld\n", float64_norm(model->buffers()),
              static_cast<long long>(most_batches_tracked(model)));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  TrainOptions o;
  CLI::App app{"Train a small ResNet with BatchNorm on random images (LibTorch)."};
  app.add_option("--layers", o.model.layers, "residual blocks")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--width", o.model.width, "channels of the first blocks")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--classes", o.model.classes, "classes")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--image", o.image, "image side in pixels")->capture_default_str()->check(CLI::Range(2, 4096));
  app.add_option("--batch", o.batch, "images per step (BatchNorm needs 2 or more)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1 << 20));
  app.add_option("--steps", o.steps, "training steps")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--seed", o.seed, "seed of weights and data")->capture_default_str();
  app.add_option("--lr", o.lr, "SGD learning rate")->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--device", o.device, "cpu or cuda")->capture_default_str()->check(CLI::IsMember({"cpu", "cuda"}));
  CLI11_PARSE(app, argc, argv);
  try {
    return train(o);
  } catch (const std::exception& e) {
    std::cerr << "resnet_train: " << e.what() << "\n";
    return 1;
  }
}
