// The small ResNet of resnet_train, in LibTorch.
//
// A stem (`stem.conv`, `stem.bn`), residual blocks `layers.i` in the
// torchvision BasicBlock form (conv, BatchNorm2d, in-place ReLU, conv,
// BatchNorm2d, the shortcut added in place, in-place ReLU), and a `head`
// (global average pool, Linear). The first block of the second half halves
// the image and doubles the width, its shortcut through `downsample.0`
// (1x1 conv) and `downsample.1` (BatchNorm2d). Every BatchNorm keeps running
// statistics, which is what a checkpoint's replay must leave alone.
#ifndef GCPROF_SAMPLES_RESNET_MODEL_H
#define GCPROF_SAMPLES_RESNET_MODEL_H

#include <torch/torch.h>

#include <vector>

struct ResNetConfig {
  int64_t layers = 4;
  int64_t width = 16;
  int64_t classes = 10;
};

class ResidualBlockImpl : public torch::nn::Module {
 public:
  ResidualBlockImpl(int64_t in, int64_t out, int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  torch::nn::Sequential downsample_{nullptr};  // only where the shape changes
};
TORCH_MODULE(ResidualBlock);

class StemImpl : public torch::nn::Module {
 public:
  explicit StemImpl(int64_t width);
  torch::Tensor forward(const torch::Tensor& images);

 private:
  torch::nn::Conv2d conv_{nullptr};
  torch::nn::BatchNorm2d bn_{nullptr};
};
TORCH_MODULE(Stem);

// The training loop drives the blocks itself (to mark them and to
// checkpoint segments), so the pieces are public.
class ResNetImpl : public torch::nn::Module {
 public:
  explicit ResNetImpl(const ResNetConfig& c);

  Stem stem{nullptr};
  torch::nn::ModuleList layers;
  std::vector<ResidualBlock> blocks;  // the same modules as `layers`, typed
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(ResNet);

#endif  // GCPROF_SAMPLES_RESNET_MODEL_H
