// The MNIST-example CNN of shared/anchors/torch_train_h200.py (class MnistNet): conv 3x3 1 -> 32,
// relu, conv 3x3 32 -> 64, relu, max pool 2, dropout 0.25, flatten, linear 9216 -> 128, relu,
// dropout 0.5, linear 128 -> 10, log_softmax + nll_loss (or cross_entropy on the logits), with
// torch.nn's default initialisation. Shared by bench_cnn and bench_graph.
#pragma once

#include <vector>

#include "train_step.h"

namespace bench {

namespace nn = rcuda::nn;

struct MnistNet {
  Tensor c1_weight, c1_bias, c2_weight, c2_bias, f1_weight, f1_bias, f2_weight, f2_bias;
  bool cross_entropy = false;

  MnistNet(DType dtype, Device device, MemoryFormat f, bool ce) : cross_entropy(ce) {
    const auto weight = [&](const rcuda::Shape& shape) {
      return bench::parameter(shape, bench::torch_default_weight, dtype, device,
                              shape.size() == 4 ? f : MemoryFormat::Contiguous);
    };
    const auto bias = [&](int64_t n, int64_t fan_in) {
      return bench::parameter({n}, bench::torch_default_bias(fan_in), dtype, device,
                              MemoryFormat::Contiguous);
    };
    c1_weight = weight({32, 1, 3, 3});
    c1_bias = bias(32, 9);
    c2_weight = weight({64, 32, 3, 3});
    c2_bias = bias(64, 32 * 9);
    f1_weight = weight({128, 9216});
    f1_bias = bias(128, 9216);
    f2_weight = weight({10, 128});
    f2_bias = bias(10, 128);
  }
  // Log-probabilities (nll) or logits (ce).
  Tensor operator()(const Tensor& x) const {
    Tensor h = rcuda::relu(nn::conv2d(x, c1_weight, c1_bias));
    h = nn::max_pool2d(rcuda::relu(nn::conv2d(h, c2_weight, c2_bias)), {2});
    h = rcuda::flatten(nn::dropout(h, 0.25), 1);
    h = nn::linear(nn::dropout(rcuda::relu(nn::linear(h, f1_weight, f1_bias)), 0.5), f2_weight,
                   f2_bias);
    return cross_entropy ? h : rcuda::log_softmax(h, 1);
  }
  Tensor loss(const Tensor& x, const Tensor& y) const {
    const Tensor out = (*this)(x);
    return cross_entropy ? nn::cross_entropy(out, y) : nn::nll_loss(out, y);
  }
  std::vector<Tensor> parameters() const {
    return {c1_weight, c1_bias, c2_weight, c2_bias, f1_weight, f1_bias, f2_weight, f2_bias};
  }
};

}  // namespace bench
