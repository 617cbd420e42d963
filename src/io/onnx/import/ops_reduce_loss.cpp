// ONNX import: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (kernel.h, Note [Kernels
// run the public ops]). Both are rcuda's nll_loss and cross_entropy, whose rules are ONNX's: the
// class dim is 1 of [N, C, d1, ...], a target equal to ignore_index adds nothing and counts
// nothing, and "mean" divides by the sum of the weights of the targets counted.
#include <limits>

#include "io/onnx/import/kernel.h"
#include "io/onnx/import/ops_reduce.h"
#include "rcuda/autograd/api.h"
#include "rcuda/nn/loss.h"

namespace rcuda::io::onnx_import {
namespace {

struct LossAttrs {
  std::string reduction;
  // ONNX without ignore_index ignores nothing: a value no class index can take.
  int64_t ignore_index = std::numeric_limits<int64_t>::min();
};

LossAttrs read_loss_attrs(NodeReader& node) {
  LossAttrs attrs;
  attrs.reduction = node.s("reduction", "mean");
  if (attrs.reduction != "none" && attrs.reduction != "sum" && attrs.reduction != "mean")
    node.fail("reduction must be \"none\", \"sum\" or \"mean\", got \"" + attrs.reduction + "\"");
  if (node.has("ignore_index")) attrs.ignore_index = node.i("ignore_index");
  return attrs;
}

// Class indices as rcuda's losses take them (int64; ONNX allows int32 too).
Tensor class_indices(const Tensor& target) { return rcuda::to(target, DType::Int64); }

// Inputs: log-probabilities [N, C, d1, ...], target [N, d1, ...], optional weight [C].
Kernel make_nll_loss(NodeReader& node) {
  const LossAttrs attrs = read_loss_attrs(node);
  return [attrs](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    nn::NllLossOptions options;
    options.weight = optional_input(in, 2);
    options.ignore_index = attrs.ignore_index;
    options.reduction = attrs.reduction;
    return {nn::nll_loss(in.at(0), class_indices(in.at(1)), options)};
  };
}

// Inputs: scores [N, C, d1, ...], labels [N, d1, ...], optional weights [C]; outputs: the loss
// and, when asked, the log-probabilities log_softmax(scores) along the class dim.
Kernel make_softmax_cross_entropy_loss(NodeReader& node) {
  const LossAttrs attrs = read_loss_attrs(node);
  const bool wants_log_prob = node.has_output(1);
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& scores = in.at(0);
    const Tensor target = class_indices(in.at(1));
    const Tensor weight = optional_input(in, 2);
    if (!wants_log_prob) {
      // One fused pass when the log-probabilities are not needed.
      nn::CrossEntropyOptions options;
      options.weight = weight;
      options.ignore_index = attrs.ignore_index;
      options.reduction = attrs.reduction;
      return {nn::cross_entropy(scores, target, options)};
    }
    const Tensor log_prob = rcuda::log_softmax(scores, 1);
    nn::NllLossOptions options;
    options.weight = weight;
    options.ignore_index = attrs.ignore_index;
    options.reduction = attrs.reduction;
    return {nn::nll_loss(log_prob, target, options), log_prob};
  };
}

}  // namespace

std::vector<ImportOp> reduce_loss_ops() {
  return {
      {"NegativeLogLikelihoodLoss", make_nll_loss, 12},
      {"SoftmaxCrossEntropyLoss", make_softmax_cross_entropy_loss, 12},
  };
}

}  // namespace rcuda::io::onnx_import
