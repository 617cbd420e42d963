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
  void release_saved() override {
    input.release();
    weight.release();
  }
};

}  // namespace rcuda::autograd
