#include "resnet_model.h"

namespace nn = torch::nn;

namespace {

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

}  // namespace

ResidualBlockImpl::ResidualBlockImpl(int64_t in, int64_t out, int64_t stride) {
  conv1_ = register_module("conv1", conv(in, out, 3, stride));
  bn1_ = register_module("bn1", nn::BatchNorm2d(out));
  conv2_ = register_module("conv2", conv(out, out, 3, 1));
  bn2_ = register_module("bn2", nn::BatchNorm2d(out));
  if (stride != 1 || in != out) {
    downsample_ = register_module("downsample", nn::Sequential(conv(in, out, 1, stride), nn::BatchNorm2d(out)));
  }
}

torch::Tensor ResidualBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = bn1_(conv1_(x)).relu_();
  out = bn2_(conv2_(out));
  out += downsample_ ? downsample_->forward(x) : x;
  return out.relu_();
}

StemImpl::StemImpl(int64_t width) {
  conv_ = register_module("conv", conv(3, width, 3, 1));
  bn_ = register_module("bn", nn::BatchNorm2d(width));
}

torch::Tensor StemImpl::forward(const torch::Tensor& images) { return bn_(conv_(images)).relu_(); }

ResNetImpl::ResNetImpl(const ResNetConfig& c) {
  stem = register_module("stem", Stem(c.width));
  layers = register_module("layers", nn::ModuleList());
  int64_t width = c.width;
  for (int64_t i = 0; i < c.layers; ++i) {
    const bool halve = c.layers >= 2 && i == c.layers / 2;
    blocks.push_back(ResidualBlock(width, halve ? 2 * width : width, halve ? 2 : 1));
    layers->push_back(blocks.back());
    if (halve) width *= 2;
  }
  head = register_module("head", nn::Linear(width, c.classes));
}
