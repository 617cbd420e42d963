// Loss functions of torch.nn.functional, differentiable with respect to input (and target where
// torch's are). `reduction` is "none" (per-element losses), "mean" or "sum"; any other string
// is a ValueError naming the function. Inputs and targets are floating unless said otherwise;
// an empty input gives NaN for "mean", as torch.
#pragma once

#include <string>

#include "rcuda/tensor/tensor.h"

namespace rcuda::nn {

// ---- regression: input and target broadcast together ------------------------------------
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
// |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta (l1_loss when beta == 0); beta >= 0.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const std::string& reduction = "mean", double beta = 1.0);
// |d| < delta ? 0.5 d^2 : delta (|d| - 0.5 delta); delta > 0.
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                  double delta = 1.0);

// ---- classification --------------------------------------------------------------------
struct NllLossOptions {
  Tensor weight;                // [C] per-class weights; undefined: all 1
  int64_t ignore_index = -100;  // targets equal to it add nothing and count nothing
  std::string reduction = "mean";
};

// Negative log-likelihood of log-probabilities input [N, C], [C] or [N, C, d1, ...] at int64
// class indices target [N], [] or [N, d1, ...]: -weight[t] * input[n, t, ...]. "mean" divides by
// the sum of the weights of the targets not ignored (NaN when all are). IndexError for a
// target outside [0, C) other than ignore_index, checked on the CPU before computing; the GPU
// checks nothing beforehand (that would synchronise with the host), and its kernel that reads
// the target reports it (gather raises IndexError after its launch).
Tensor nll_loss(const Tensor& input, const Tensor& target, const NllLossOptions& options = {});

struct CrossEntropyOptions {
  Tensor weight;                // [C] per-class weights; undefined: all 1
  int64_t ignore_index = -100;  // class-index targets only
  std::string reduction = "mean";
  double label_smoothing = 0.0;  // in [0, 1]: mixes the target with the uniform distribution
};

// nll_loss(log_softmax(input, class dim), target) for int64 class indices (shapes as
// nll_loss), or -sum_c weight[c] * target[c] * log_softmax(input)[c] for floating class
// probabilities target of input's shape, converted to input's dtype ("mean" then divides by the
// number of samples, and ignore_index must stay negative). label_smoothing as torch for both
// kinds. Differentiable with respect to input and to a probability target. One fused pass
// forward and one backward (ops::cross_entropy_forward/backward), neither reading a value back:
// a class index outside [0, C) other than ignore_index raises IndexError on the CPU, while on
// the GPU the kernel writes NaN to that row's loss, so the reduced loss and the gradients are
// NaN.
Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const CrossEntropyOptions& options = {});

// -weight * (target * log(input) + (1 - target) * log(1 - input)) for probabilities input in
// [0, 1] (ValueError otherwise, checked on the CPU), each log clamped below at -100 as torch.
// target has input's shape; weight broadcasts to it.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const Tensor& weight = Tensor(), const std::string& reduction = "mean");

// binary_cross_entropy(sigmoid(input), target) in the numerically stable form, with pos_weight
// (broadcast along the last dim, typically [C]) multiplying the positive term.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = Tensor(),
                                        const std::string& reduction = "mean",
                                        const Tensor& pos_weight = Tensor());

// Kullback-Leibler divergence of input (log-probabilities) from target: target * (log(target) -
// input), 0 where target == 0; with log_target, target holds log-probabilities: exp(target) *
// (target - input). reduction also takes "batchmean" (sum / input.size(0), torch's
// mathematically correct mean; "mean" averages over all elements).
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
              bool log_target = false);

}  // namespace rcuda::nn
