// Matrix products: cuBLASLt on the GPU, OpenBLAS on the CPU. float32 and float64; float16 and
// bfloat16 with float32 accumulation; float8 through scaled_mm only. Integral dtypes are
// refused with a DTypeError.
#pragma once

#include "rcuda/core/scalar.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// torch.matmul: 1-D x 1-D dot, 2-D x 2-D product, batched with broadcast batch dims,
// 1-D operands promoted to a matrix and the added dim removed afterwards.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);   // 2-D only
Tensor bmm(const Tensor& a, const Tensor& b);  // 3-D only, equal batch
// beta * input + alpha * (a @ b); input broadcasts to the product's shape.
Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta = 1,
             const Scalar& alpha = 1);
// torch's linear for 2-D x [M,K]: x @ weight^T + bias, weight [N,K], bias [N] or undefined; one
// GEMM with the bias in its epilogue where the backend has one. Same floating dtype and device
// for all (nn::linear checks and records; this is its forward).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// linear's weight and bias gradients from grad_out [M,N] and x [M,K] (2-D, one dtype and
// device): {grad_out^T @ x, grad_out summed over dim 0}, in one fused product where the backend
// has one (cuBLASLt's bias-gradient epilogue on CUDA), else a product and a sum.
struct LinearWeightGrads {
  Tensor weight, bias;
};
LinearWeightGrads linear_weight_grads(const Tensor& grad_out, const Tensor& x);

// torch._scaled_mm with per-tensor scales: (scale_a * a) @ (scale_b * b) in out_dtype
// (bfloat16, float16 or float32), accumulated in float32. a [M,K] and b [K,N] are float8
// (e4m3fn x e4m3fn, e4m3fn x e5m2 or e5m2 x e4m3fn); scale_a and scale_b are one-element
// float32 tensors on the operands' device. As cuBLASLt's fp8 kernels require: a row-major
// (a.stride(1) == 1), b column-major (b.stride(0) == 1, e.g. b = w.t() for a row-major
// w [N,K]), K and N multiples of 16. CUDA needs compute capability 8.9 or newer. bias, as
// torch._scaled_mm's: [N], floating (converted to out_dtype), added before the result is
// rounded to out_dtype.
Tensor scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
                 DType out_dtype = DType::BFloat16, const Tensor& bias = Tensor());

}  // namespace rcuda::ops
