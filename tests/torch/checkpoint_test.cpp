// gcprof::torch::checkpoint: gradients equal those of the unchecked forward.
#include <gcprof/torch/checkpoint.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <random>

namespace {

using Tensors = std::vector<torch::Tensor>;
namespace gt = gcprof::torch;

// A random chain of small layers: Linear + tanh, some with dropout.
struct RandomChain {
  mutable std::vector<torch::nn::Linear> layers;  // a Linear call is non-const
  double dropout = 0.0;

  RandomChain(std::mt19937& rng, int64_t width_in, int depth, double p) : dropout(p) {
    int64_t w = width_in;
    for (int i = 0; i < depth; ++i) {
      int64_t next = 3 + static_cast<int64_t>(rng() % 6);
      layers.emplace_back(w, next);
      w = next;
    }
  }
  torch::Tensor layer(size_t i, const torch::Tensor& x) const {
    torch::Tensor y = torch::tanh(layers[i](x));
    return dropout > 0 ? torch::dropout(y, dropout, /*train=*/true) : y;
  }
  std::vector<torch::Tensor> parameters() const {
    std::vector<torch::Tensor> out;
    for (const auto& l : layers) {
      for (const auto& p : l->parameters()) out.push_back(p);
    }
    return out;
  }
  void zero_grad() const {
    for (auto& p : parameters()) p.mutable_grad() = torch::Tensor();
  }
};

// Forward through the chain, checkpointing layers [first, last] when asked.
torch::Tensor run_chain(const RandomChain& chain, torch::Tensor x, int first, int last, bool checkpointed) {
  for (int i = 0; i < static_cast<int>(chain.layers.size());) {
    if (checkpointed && i == first) {
      auto segment = [&chain, first, last](const Tensors& in) {
        torch::Tensor h = in[0];
        for (int k = first; k <= last; ++k) h = chain.layer(k, h);
        return Tensors{h};
      };
      gt::Segment layers{"chain." + std::to_string(first) + ".." + std::to_string(last), {}};
      for (int k = first; k <= last; ++k) layers.modules.push_back(chain.layers[k].ptr());
      x = gt::checkpoint(layers, segment, {x})[0];
      i = last + 1;
    } else {
      x = chain.layer(i, x);
      ++i;
    }
  }
  return x;
}

struct Gradients {
  torch::Tensor output, input_grad;
  Tensors param_grads;
};

Gradients step(const RandomChain& chain, const torch::Tensor& input, int first, int last, bool checkpointed,
               uint64_t seed) {
  torch::manual_seed(seed);
  chain.zero_grad();
  torch::Tensor x = input.detach().clone().requires_grad_(true);
  torch::Tensor y = run_chain(chain, x, first, last, checkpointed);
  (y * y).sum().backward();
  Gradients g{y.detach(), x.grad(), {}};
  for (const auto& p : chain.parameters()) g.param_grads.push_back(p.grad().clone());
  return g;
}

void expect_same(const Gradients& a, const Gradients& b, const std::string& what) {
  EXPECT_TRUE(torch::allclose(a.output, b.output, 1e-6, 1e-7)) << what << ": outputs differ";
  EXPECT_TRUE(torch::allclose(a.input_grad, b.input_grad, 1e-6, 1e-7)) << what << ": input gradients differ";
  ASSERT_EQ(a.param_grads.size(), b.param_grads.size());
  for (size_t i = 0; i < a.param_grads.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a.param_grads[i], b.param_grads[i], 1e-6, 1e-7))
        << what << ": gradient of parameter " << i << " differs";
  }
}

TEST(TorchCheckpoint, RandomChainsAndSegmentsMatchUncheckedGradients) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 12; ++trial) {
    torch::manual_seed(trial);
    const int depth = 1 + static_cast<int>(rng() % 5);
    const int64_t width = 2 + static_cast<int64_t>(rng() % 5);
    RandomChain chain(rng, width, depth, 0.0);
    const int first = static_cast<int>(rng() % depth);
    const int last = first + static_cast<int>(rng() % (depth - first));
    torch::Tensor input = torch::randn({4, width}, torch::kDouble);
    for (auto& l : chain.layers) l->to(torch::kDouble);
    std::string what = "trial " + std::to_string(trial) + " depth " + std::to_string(depth) + " segment [" +
                       std::to_string(first) + "," + std::to_string(last) + "]";
    expect_same(step(chain, input, first, last, false, 1), step(chain, input, first, last, true, 1), what);
  }
}

TEST(TorchCheckpoint, DropoutReplaysTheSameMasks) {
  std::mt19937 rng(3);
  RandomChain chain(rng, 6, 4, 0.3);
  torch::Tensor input = torch::randn({16, 6});
  Gradients plain = step(chain, input, 1, 2, false, 42);
  torch::Tensor after_plain = torch::rand({8});  // the RNG stream after the step
  Gradients checked = step(chain, input, 1, 2, true, 42);
  torch::Tensor after_checked = torch::rand({8});
  EXPECT_TRUE(torch::equal(plain.output, checked.output)) << "dropout drew different masks";
  expect_same(plain, checked, "dropout");
  EXPECT_TRUE(torch::equal(after_plain, after_checked)) << "the replay disturbed the RNG stream of the step";
  // The test can fail: a different seed gives different outputs.
  EXPECT_FALSE(torch::equal(plain.output, step(chain, input, 1, 2, true, 43).output));
}

TEST(TorchCheckpoint, SeveralInputsAndOutputsSomeWithoutGrad) {
  torch::manual_seed(0);
  torch::nn::Linear lin(5, 5);
  torch::Tensor a0 = torch::randn({3, 5}, torch::kDouble), b0 = torch::randn({3, 5}, torch::kDouble);
  torch::Tensor c = torch::randn({3, 5}, torch::kDouble);  // needs no grad
  lin->to(torch::kDouble);
  auto fn = [&lin](const Tensors& in) {
    return Tensors{lin(in[0] * in[2]) + in[1], torch::sin(in[1]) * in[2], in[2] * 2};
  };
  auto run = [&](bool checkpointed) {
    for (auto& p : lin->parameters()) p.mutable_grad() = torch::Tensor();
    torch::Tensor a = a0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
    Tensors out = checkpointed ? gt::checkpoint({"lin", {lin.ptr()}}, fn, {a, b, c}) : fn({a, b, c});
    (out[0].pow(2).sum() + out[1].sum()).backward();  // out[2] unused: gets no gradient
    return Tensors{out[0].detach(), out[1].detach(), a.grad(), b.grad(), lin->weight.grad(), lin->bias.grad()};
  };
  Tensors plain = run(false), checked = run(true);
  for (size_t i = 0; i < plain.size(); ++i) {
    ASSERT_TRUE(checked[i].defined()) << "result " << i << " missing";
    EXPECT_TRUE(torch::allclose(plain[i], checked[i], 1e-9, 1e-12)) << "result " << i << " differs";
  }
  EXPECT_FALSE(c.grad().defined());
}

TEST(TorchCheckpoint, TrainsParametersWhenNoInputNeedsGrad) {
  torch::manual_seed(0);
  torch::nn::Linear lin(4, 2);
  torch::Tensor x = torch::randn({3, 4});
  auto fn = [&lin](const Tensors& in) { return Tensors{lin(in[0])}; };
  lin(x).sum().backward();
  torch::Tensor expected = lin->weight.grad().clone();
  lin->weight.mutable_grad() = torch::Tensor();
  torch::Tensor y = gt::checkpoint({"lin", {lin.ptr()}}, fn, {x})[0];
  ASSERT_TRUE(y.requires_grad());
  y.sum().backward();
  ASSERT_TRUE(lin->weight.grad().defined());
  EXPECT_TRUE(torch::allclose(lin->weight.grad(), expected));
}

TEST(TorchCheckpoint, KeepsOnlyInputsAndReplaysOnceInBackward) {
  torch::Tensor x = torch::randn({4, 4}, torch::requires_grad());
  int calls = 0, replays = 0;
  auto fn = [&](const Tensors& in) {
    ++calls;
    if (gt::is_recomputing()) ++replays;
    EXPECT_EQ(gt::is_recomputing(), torch::GradMode::is_enabled());
    return Tensors{torch::exp(torch::exp(in[0]))};
  };
  torch::Tensor y = gt::checkpoint({"exp.exp", {}}, fn, {x})[0];
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(replays, 0);
  EXPECT_FALSE(gt::is_recomputing());
  // The segment's intermediate (exp(x)) is not in the graph: y's node holds x only.
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->next_edges().size(), 2u);  // x and the (unused) anchor slot
  y.sum().backward();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(replays, 1);
  EXPECT_TRUE(torch::allclose(x.grad(), torch::exp(torch::exp(x)) * torch::exp(x)));
}

}  // namespace
