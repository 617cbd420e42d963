// Matrix products: cuBLASLt on the GPU, OpenBLAS on the CPU. float32 and float64; float16 and
// bfloat16 with float32 accumulation. Integral dtypes are refused with a DTypeError.
#pragma once

#include "rcuda/core/scalar.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda {

// torch.matmul: 1-D x 1-D dot, 2-D x 2-D product, batched with broadcast batch dims,
// 1-D operands promoted to a matrix and the added dim removed afterwards.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);   // 2-D only
Tensor bmm(const Tensor& a, const Tensor& b);  // 3-D only, equal batch
// beta * input + alpha * (a @ b); input broadcasts to the product's shape.
Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta = 1,
             const Scalar& alpha = 1);

}  // namespace rcuda
