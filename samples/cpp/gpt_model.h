// The decoder-only transformer of the samples, in LibTorch.
//
// Twin of samples/python/train_gpt.py: same module names (tok, pos,
// layers.i.{ln1,attn.{qkv,proj},ln2,mlp.{fc1,fc2}}, ln_f, head) and the same
// ATen ops in the same order, so both programs save the same tensors for
// backward and their traces compare layer by layer.
#ifndef GCPROF_SAMPLES_GPT_MODEL_H
#define GCPROF_SAMPLES_GPT_MODEL_H

#include <torch/torch.h>

#include <vector>

struct GptConfig {
  int64_t vocab = 1024;
  int64_t hidden = 192;
  int64_t heads = 6;
  int64_t seq = 128;
  int64_t layers = 8;
  double dropout = 0.0;
};

// Causal self-attention written out op by op (no fused kernel).
class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const GptConfig& c);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  int64_t heads_;
  double dropout_;
  torch::nn::Linear qkv_{nullptr}, proj_{nullptr};
  torch::Tensor mask_;  // created once: not an activation of any step
};
TORCH_MODULE(Attention);

class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(const GptConfig& c);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(Mlp);

// x = x + attn(ln1(x)); x = x + mlp(ln2(x))
class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const GptConfig& c);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  Attention attn_{nullptr};
  Mlp mlp_{nullptr};
};
TORCH_MODULE(Block);

// The whole model. The training loop drives the layers itself (to mark them
// and to checkpoint segments), so the pieces are public.
class GptImpl : public torch::nn::Module {
 public:
  explicit GptImpl(const GptConfig& c);

  torch::nn::Embedding tok{nullptr}, pos{nullptr};
  torch::nn::ModuleList layers;
  std::vector<Block> blocks;  // the same modules as `layers`, typed
  torch::nn::LayerNorm ln_f{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Gpt);

#endif  // GCPROF_SAMPLES_GPT_MODEL_H
