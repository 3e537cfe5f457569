// gcprof::torch::checkpoint leaves the training state as a run without it:
// BatchNorm and InstanceNorm running statistics, any buffer a forward updates
// in place (also when the replay throws), and refuses, naming the segment,
// inputs changed in place instead of replaying from changed values.
#include <gcprof/torch/checkpoint.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <string>

namespace {

using Tensors = std::vector<torch::Tensor>;
namespace gt = gcprof::torch;
namespace nn = torch::nn;

// Counts its calls and keeps a moving average in buffers not named like
// BatchNorm's: only the version counter tells that the forward updates them.
struct CountingImpl : nn::Module {
  torch::Tensor calls, average;
  CountingImpl() {
    calls = register_buffer("calls", torch::zeros({}, torch::kLong));
    average = register_buffer("average", torch::zeros({6}, torch::kDouble));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    calls.add_(1);
    average.mul_(0.5).add_(x.detach().mean(0), 0.5);
    return x;
  }
};
TORCH_MODULE(Counting);

// Linear, BatchNorm1d (exponential and cumulative averages), InstanceNorm1d
// with running statistics, ReLU; blocks 1 and 2 are checkpointed as one segment.
struct Net {
  std::vector<nn::Sequential> blocks;
  explicit Net(uint64_t seed) {
    torch::manual_seed(seed);
    for (int i = 0; i < 4; ++i) {
      nn::Sequential b(nn::Linear(6, 6), nn::BatchNorm1d(6),
                       nn::BatchNorm1d(nn::BatchNormOptions(6).momentum(std::nullopt)),
                       nn::Functional([](const torch::Tensor& t) { return torch::relu(t); }));
      if (i == 1) {  // InstanceNorm1d over (N, C=1, L=6)
        b->push_back(nn::Functional([](const torch::Tensor& t) { return t.unsqueeze(1); }));
        b->push_back(nn::InstanceNorm1d(nn::InstanceNorm1dOptions(1).track_running_stats(true)));
        b->push_back(nn::Functional([](const torch::Tensor& t) { return t.squeeze(1); }));
      }
      if (i == 2) b->push_back(Counting());
      b->to(torch::kDouble);
      blocks.push_back(b);
    }
  }
  torch::Tensor block(size_t i, const torch::Tensor& x) { return blocks[i]->forward(x); }
  torch::Tensor forward(torch::Tensor x, bool checkpointed) {
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (checkpointed && i == 1) {
        gt::Segment segment{"blocks.1..blocks.2", {blocks[1].ptr(), blocks[2].ptr()}};
        x = gt::checkpoint(segment, [this](const Tensors& in) { return Tensors{block(2, block(1, in[0]))}; }, {x})[0];
        ++i;
      } else {
        x = block(i, x);
      }
    }
    return x;
  }
  Tensors parameters() const {
    Tensors out;
    for (const auto& b : blocks)
      for (const auto& p : b->parameters()) out.push_back(p);
    return out;
  }
  std::vector<std::pair<std::string, torch::Tensor>> buffers() const {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (size_t i = 0; i < blocks.size(); ++i)
      for (const auto& b : blocks[i]->named_buffers()) out.emplace_back(std::to_string(i) + "." + b.key(), b.value());
    return out;
  }
};

// Three SGD steps; the gradients of the last one.
Tensors train(Net& net, bool checkpointed) {
  torch::manual_seed(100);
  Tensors grads;
  for (int step = 0; step < 3; ++step) {
    torch::Tensor x = torch::randn({8, 6}, torch::kDouble);
    for (auto& p : net.parameters()) p.mutable_grad() = torch::Tensor();
    net.forward(x, checkpointed).pow(2).sum().backward();
    grads.clear();
    torch::NoGradGuard no_grad;
    for (auto& p : net.parameters()) {
      grads.push_back(p.grad().clone());
      p.sub_(0.1 * p.grad());
    }
  }
  return grads;
}

TEST(TorchCheckpointState, RunningStatisticsAndGradientsAreThoseOfTheUncheckedRun) {
  Net plain(1), checked(1);
  Tensors plain_grads = train(plain, false), checked_grads = train(checked, true);
  auto a = plain.buffers(), b = checked.buffers();
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GE(a.size(), 15u);  // 8 BatchNorms x 3, InstanceNorm 3, the counter 2
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i].second, b[i].second))
        << a[i].first << " differs: " << a[i].second << " vs " << b[i].second;
  }
  // Blocks 1 and 2 were replayed: their BatchNorms and the counter saw 3 batches, not 6.
  for (const auto& [name, buffer] : b) {
    if (name == "1.1.num_batches_tracked" || name == "2.2.num_batches_tracked" || name == "2.4.calls") {
      EXPECT_EQ(buffer.item<int64_t>(), 3) << name << ": a replay counted the batches again";
    }
  }
  ASSERT_EQ(plain_grads.size(), checked_grads.size());
  for (size_t i = 0; i < plain_grads.size(); ++i) {
    EXPECT_TRUE(torch::equal(plain_grads[i], checked_grads[i])) << "gradient of parameter " << i << " differs";
  }
}

TEST(TorchCheckpointState, RunningStateIsPutBackWhenTheReplayThrows) {
  torch::manual_seed(0);
  nn::BatchNorm1d bn(4);
  auto fn = [&bn](const Tensors& in) {
    torch::Tensor y = bn(in[0]);
    if (gt::is_recomputing()) throw std::runtime_error("replay failed on purpose");
    return Tensors{y};
  };
  torch::Tensor x = torch::randn({5, 4}, torch::requires_grad());
  torch::Tensor y = gt::checkpoint({"bn", {bn.ptr()}}, fn, {x})[0];
  const torch::Tensor mean = bn->running_mean.clone(), var = bn->running_var.clone();
  EXPECT_THROW(y.sum().backward(), std::exception);
  EXPECT_TRUE(torch::equal(bn->running_mean, mean));
  EXPECT_TRUE(torch::equal(bn->running_var, var));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST(TorchCheckpointState, ASegmentChangingItsInputInPlaceIsRefusedNamingIt) {
  torch::manual_seed(0);
  nn::Linear lin(4, 4);
  auto fn = [&lin](const Tensors& in) { return Tensors{lin(in[0].relu_())}; };  // in-place ReLU at the entry
  torch::Tensor x = torch::randn({3, 4}, torch::requires_grad()) * 1;  // not a leaf, as between blocks
  std::string what = message_of([&] { gt::checkpoint({"layers.3", {lin.ptr()}}, fn, {x}); });
  EXPECT_NE(what.find("segment \"layers.3\" changed its input 0 in place"), std::string::npos) << what;
  EXPECT_NE(what.find("leave \"layers.3\" out of the plan"), std::string::npos) << what;
  // The same segment with the ReLU out of place is fine.
  auto out_of_place = [&lin](const Tensors& in) { return Tensors{lin(torch::relu(in[0]))}; };
  EXPECT_NO_THROW(gt::checkpoint({"layers.3", {lin.ptr()}}, out_of_place, {x})[0].sum().backward());
}

TEST(TorchCheckpointState, AnInputChangedInPlaceAfterTheForwardMakesBackwardThrowNamingTheSegment) {
  torch::Tensor a = torch::randn({3, 4}, torch::requires_grad());
  torch::Tensor x = a * 2;
  torch::Tensor y = gt::checkpoint({"layers.5", {}}, [](const Tensors& in) { return Tensors{in[0].exp()}; }, {x})[0];
  x.mul_(3);  // later code changes what the replay would start from
  std::string what = message_of([&] { y.sum().backward(); });
  EXPECT_NE(what.find("segment \"layers.5\" cannot be replayed"), std::string::npos) << what;
  EXPECT_FALSE(a.grad().defined()) << "no gradient may come from a wrong replay";
}

TEST(TorchCheckpointState, ANullModuleIsAClearError) {
  std::string what = message_of([&] {
    gt::checkpoint({"layers.0", {nullptr}}, [](const Tensors& in) { return in; }, {torch::ones({1})});
  });
  EXPECT_NE(what.find("segment \"layers.0\" names a null module"), std::string::npos) << what;
}

}  // namespace
