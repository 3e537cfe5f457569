// Every op here mirrors a line of samples/python/train_gpt.py; keep them in step.
#include "gpt_model.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace F = torch::nn::functional;

AttentionImpl::AttentionImpl(const GptConfig& c) : heads_(c.heads), dropout_(c.dropout) {
  if (c.hidden % c.heads != 0) {
    throw std::invalid_argument("--hidden " + std::to_string(c.hidden) + " is not a multiple of --heads " +
                                std::to_string(c.heads));
  }
  qkv_ = register_module("qkv", torch::nn::Linear(c.hidden, 3 * c.hidden));
  proj_ = register_module("proj", torch::nn::Linear(c.hidden, c.hidden));
  mask_ = register_buffer("mask", torch::triu(torch::ones({c.seq, c.seq}, torch::kBool), 1));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x) {
  const int64_t b = x.size(0), s = x.size(1), h = x.size(2), d = h / heads_;
  torch::Tensor qkv = qkv_(x).view({b, s, 3, heads_, d}).permute({2, 0, 3, 1, 4});
  torch::Tensor q = qkv.select(0, 0), k = qkv.select(0, 1), v = qkv.select(0, 2);
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
  scores = scores.masked_fill(mask_.slice(0, 0, s).slice(1, 0, s), -INFINITY);
  torch::Tensor probs = torch::softmax(scores, -1);
  if (dropout_ > 0) probs = torch::dropout(probs, dropout_, is_training());
  torch::Tensor out = torch::matmul(probs, v).transpose(1, 2).reshape({b, s, h});
  out = proj_(out);
  if (dropout_ > 0) out = torch::dropout(out, dropout_, is_training());
  return out;
}

MlpImpl::MlpImpl(const GptConfig& c) {
  fc1_ = register_module("fc1", torch::nn::Linear(c.hidden, 4 * c.hidden));
  fc2_ = register_module("fc2", torch::nn::Linear(4 * c.hidden, c.hidden));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) { return fc2_(torch::gelu(fc1_(x))); }

BlockImpl::BlockImpl(const GptConfig& c) {
  ln1_ = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden})));
  attn_ = register_module("attn", Attention(c));
  ln2_ = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden})));
  mlp_ = register_module("mlp", Mlp(c));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& input) {
  torch::Tensor x = input + attn_(ln1_(input));
  return x + mlp_(ln2_(x));
}

GptImpl::GptImpl(const GptConfig& c) {
  tok = register_module("tok", torch::nn::Embedding(c.vocab, c.hidden));
  pos = register_module("pos", torch::nn::Embedding(c.seq, c.hidden));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.layers; ++i) {
    blocks.push_back(Block(c));
    layers->push_back(blocks.back());
  }
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.hidden})));
  head = register_module("head", torch::nn::Linear(c.hidden, c.vocab));
}
