// Fusions a backend may offer beside the Backend interface: one pass for what ops would otherwise
// run as several. ops asks for them with dynamic_cast (a backend says what it supports, as ggml's
// supports_op), and runs the separate passes on a backend that offers none.
#pragma once

#include "rcuda/backend/backend.h"

namespace rcuda {

class FusedConvolution {
 public:
  virtual ~FusedConvolution() = default;
  // out = relu(conv2d(in, weight) + bias[o]) in one pass (cuDNN's pointwise epilogue on CUDA),
  // with conv2d's guarantees (Note [Convolution primitives] in backend.h) and bias [O]
  // contiguous, of the operands' dtype. Returns false, having written nothing, when it has no
  // fused kernel for these operands: the caller then runs conv2d, the bias and relu apart. For
  // inference only (ops::conv2d_bias_relu): nothing of it is differentiated.
  virtual bool conv2d_bias_relu(const Tensor& out, const Tensor& in, const Tensor& weight,
                                const Tensor& bias, const Backend::ConvArgs& args) = 0;
};

}  // namespace rcuda
