// The CPU convolutions' two implementations, shared by conv_dnnl.cpp (the entry points, float32
// through oneDNN) and conv_f64.cpp (float64 through im2col and OpenBLAS dgemm).
#pragma once

#include "rcuda/backend/backend.h"

namespace rcuda::cpu {

// Note [float64 convolutions]
// oneDNN has no double-precision convolution (its data types stop at f32), so float64 runs
// through im2col and cblas_dgemm, as Caffe and PyTorch's slow path do: per image and group,
// the receptive fields become the columns of a matrix and the convolution is one GEMM. float64
// is what gradient checks and references use, where exactness matters more than speed.
void conv2d_f64(const Tensor& out, const Tensor& in, const Tensor& weight,
                const Backend::ConvArgs& args);
void conv2d_backward_input_f64(const Tensor& grad_in, const Tensor& grad_out, const Tensor& weight,
                               const Backend::ConvArgs& args);
void conv2d_backward_weight_f64(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& in,
                                const Backend::ConvArgs& args);

}  // namespace rcuda::cpu
