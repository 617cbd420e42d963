// Complex tensors (complex64, complex128): views between a complex tensor and its real pairs,
// construction from parts, and the arithmetic composed of real ops. No gradients: a complex
// tensor cannot require grad (requires_grad_ is a DTypeError for non-floating dtypes).
//
// Note [Complex tensors]
// A complex element is two reals, the real part first, as C's `float _Complex` and every
// library that stores complex numbers (LAPACK, cuBLAS, NumPy, PyTorch). rcuda keeps no complex
// kernels: view_as_real() shows a complex tensor as its real dtype with a last dim of 2 (the
// same storage, strides doubled), and every complex op is composed of real ops on those views,
// so both backends run it with the kernels they already have. What is composed here:
// - copies and conversions (copy_, to, clone, contiguous; Note [Complex conversions] in
//   src/ops/copy.cpp) and fill_ (the real part; the imaginary part 0);
// - add, sub, mul, div, neg with broadcasting and promotion (complex beats every real dtype;
//   complex64 with float64 gives complex128, as torch);
// - abs and angle (real results), conj (a copy with the imaginary part negated: rcuda has no
//   lazy conjugate bit);
// - eq and ne (both parts equal).
// Other ops refuse complex inputs with a DTypeError that points at view_as_real(). The eigen-
// decomposition of general matrices (linalg_eig) returns complex tensors; docs/complex.md says
// what is left out and why.
#pragma once

#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// The real view of a complex tensor: its parts' dtype, shape [..., 2], the same storage.
// DTypeError for a non-complex tensor.
Tensor view_as_real(const Tensor& z);
// The complex view of x [..., 2] (float32 or float64) whose last dim has stride 1 and whose
// other strides and offset are even: shape [...]; errors name what does not fit.
Tensor view_as_complex(const Tensor& x);
// real + i imag (float32 or float64, the same dtype, broadcast together): a new tensor.
Tensor complex(const Tensor& real, const Tensor& imag);
// The parts as views of z (writing into them writes z). real() of a real tensor is itself;
// imag() of a real tensor is a DTypeError, as torch's.
Tensor real(const Tensor& z);
Tensor imag(const Tensor& z);
// |z| and arg z in (-pi, pi], in the parts' dtype; for real x, abs(x) and 0 or pi.
Tensor complex_abs(const Tensor& z);
Tensor angle(const Tensor& z);
// The conjugate (a new tensor); a real tensor is returned as it is.
Tensor conj(const Tensor& z);

}  // namespace rcuda::ops
