// gpt_train: trains the sample decoder-only transformer on synthetic tokens (LibTorch).
//
//   build/bin/gpt_train --layers 8 --steps 4
//   gcprof record -o gpt.db -- build/bin/gpt_train --layers 8 --steps 4
//   GCPROF_PLAN=plan.json build/bin/gpt_train ...      # checkpoint what the plan says
//
// Prints one line per step, `step <i> loss <value>`; on CPU the losses are the
// same run to run for a given --seed, with or without a plan. It marks steps,
// the loss and every layer's forward and backward through gcprof's C API,
// which costs nothing when the program is not recorded.
#include "gpt_model.h"
#include "planned_blocks.h"

#include <CLI/CLI.hpp>
#include <ATen/CPUGeneratorImpl.h>

#include <cstdio>
#include <iostream>

namespace {

struct TrainOptions {
  GptConfig model;
  int64_t batch = 24;
  int64_t steps = 4;
  uint64_t seed = 0;
  double lr = 3e-4;
  std::string device = "cpu";
};

torch::Tensor forward_pass(Gpt& model, LayerMarks& marks, const std::vector<int64_t>& segment_end,
                           const torch::Tensor& idx) {
  torch::Tensor positions = torch::arange(idx.size(1), idx.options());
  torch::Tensor x;
  {
    MarkedScope range("tok", GCPROF_FORWARD);
    x = model->tok(idx);
  }
  {
    MarkedScope range("pos", GCPROF_FORWARD);
    x = x + model->pos(positions);
  }
  x = forward_blocks(model->blocks, marks, segment_end, x);
  {
    MarkedScope range("ln_f", GCPROF_FORWARD);
    x = model->ln_f(x);
  }
  MarkedScope range("head", GCPROF_FORWARD);
  return model->head(x);
}

int train(const TrainOptions& o) {
  if (o.device == "cuda" && !torch::cuda::is_available()) {
    std::cerr << "gpt_train: --device cuda but no CUDA device is available; use --device cpu\n";
    return 2;
  }
  const torch::Device device(o.device == "cuda" ? torch::kCUDA : torch::kCPU);
  LayerMarks marks(o.model.layers);
  std::vector<int64_t> segment_end;
  try {
    segment_end = segments_from_plan(marks);
  } catch (const gcprof::torch::PlanError& e) {
    std::cerr << "gpt_train: " << e.what() << "\n";
    return 2;
  }

  torch::manual_seed(o.seed);
  Gpt model(o.model);
  model->to(device);
  model->train();
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(o.lr));
  // Data has its own generator so that it does not depend on dropout's draws.
  at::Generator data = at::make_generator<at::CPUGeneratorImpl>(o.seed + 1);

  for (int64_t step = 0; step < o.steps; ++step) {
    gcprof_step_begin(step);
    torch::Tensor tokens =
        torch::randint(0, o.model.vocab, {o.batch, o.model.seq + 1}, data, torch::kLong).to(device);
    torch::Tensor inputs = tokens.slice(1, 0, o.model.seq), targets = tokens.slice(1, 1);
    optimizer.zero_grad();
    torch::Tensor logits = forward_pass(model, marks, segment_end, inputs);
    torch::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({-1, o.model.vocab}),
                                                              targets.reshape({-1}));
    loss.backward();
    optimizer.step();
    const double value = loss.item<double>();
    gcprof_scalar("loss", value);
    gcprof_step_end();
    std::printf("step %lld loss %.6f\n", static_cast<long long>(step), value);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  TrainOptions o;
  CLI::App app{"Train a small decoder-only transformer on synthetic tokens (LibTorch)."};
  app.add_option("--layers", o.model.layers, "transformer blocks")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--hidden", o.model.hidden, "model width")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--heads", o.model.heads, "attention heads")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--seq", o.model.seq, "sequence length")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--batch", o.batch, "sequences per step")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--vocab", o.model.vocab, "vocabulary size")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--steps", o.steps, "training steps")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--seed", o.seed, "seed of weights, data and dropout")->capture_default_str();
  app.add_option("--dropout", o.model.dropout, "dropout probability")->capture_default_str()->check(CLI::Range(0.0, 0.99));
  app.add_option("--lr", o.lr, "AdamW learning rate")->capture_default_str();
  app.add_option("--device", o.device, "cpu or cuda")->capture_default_str()->check(CLI::IsMember({"cpu", "cuda"}));
  CLI11_PARSE(app, argc, argv);
  try {
    return train(o);
  } catch (const std::exception& e) {
    std::cerr << "gpt_train: " << e.what() << "\n";
    return 1;
  }
}
