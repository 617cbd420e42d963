// Backward node of convolutions (entry points in src/autograd/conv.cpp).
#pragma once

#include "rcuda/autograd/node.h"
#include "rcuda/ops/conv.h"

namespace rcuda::autograd {

enum class ConvKind : uint8_t { Convolution, Transposed };

// conv2d and conv_transpose2d; inputs (input, weight, bias), bias possibly undefined. A
// transposed convolution is a convolution's input gradient, so each kind's backward is the
// other two passes: a convolution's gradients are its backward-input and backward-weight
// passes, a transposed one's a forward convolution of the gradient and the weight gradient with
// input and gradient in swapped roles. Gradients keep the memory formats of their inputs.
struct ConvBackward final : Node {
  ConvKind kind = ConvKind::Convolution;
  ops::ConvParams params;
  MemoryFormat input_format = MemoryFormat::Contiguous, weight_format = MemoryFormat::Contiguous;
  SavedTensor input, weight;  // each saved only when the other's gradient needs it
  const char* name() const override { return "ConvolutionBackward"; }
  TensorList apply(TensorList&& grads) override;
  // Convolutions only: a transposed one's backward passes record nothing yet.
  bool supports_create_graph() const override { return kind == ConvKind::Convolution; }
  void release_saved() override {
    input.release();
    weight.release();
  }
};

// A convolution's gradient pass, recorded in a backward pass that creates a graph (Note
// [Gradients of gradients] in docs/autograd.md). Both passes are bilinear in the output
// gradient g and the other operand, so their own gradients are the forward convolution and the
// other pass: with F the convolution, <input_grad(g, w), a> = <F(a, w), g> and
// <weight_grad(g, x), b> = <F(x, b), g>. Inputs (g, w) for the input's gradient, (g, x) for the
// weight's.
struct ConvGradBackward final : Node {
  bool of_input = true;  // the pass computes the input's gradient (else the weight's)
  ops::ConvParams params;
  MemoryFormat input_format = MemoryFormat::Contiguous, weight_format = MemoryFormat::Contiguous;
  SavedTensor g, other;
  const char* name() const override {
    return of_input ? "ConvolutionBackwardInputBackward" : "ConvolutionBackwardWeightBackward";
  }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
  void release_saved() override {
    g.release();
    other.release();
  }
};

}  // namespace rcuda::autograd
