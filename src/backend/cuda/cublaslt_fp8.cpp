// CudaBackend::scaled_gemm: float8 matrix products through cublasLtMatmul
// (backend/cuda/cublaslt_matmul.h), as torch's _scaled_mm. For fp8 the row-major mapping (Note
// [cuBLASLt row-major products] in cublaslt_gemm.cpp) turns cuBLASLt's "TN" requirement into a
// row-major a and a column-major b (Note [fp8 operand layouts] in src/ops/linalg.cpp).
#include <cstdint>
#include <string>

#include "backend/cuda/cublaslt_matmul.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/copy.h"
#include "backend/cuda/runtime.h"
#include "rcuda/backend/cuda.h"

namespace rcuda::cuda {

namespace {

void check_fp8_capability(int device) {
  int major = 0, minor = 0;
  RCUDA_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  RCUDA_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  RCUDA_CHECK(major * 10 + minor >= 89, DeviceError,
              "scaled_mm: float8 matrix products need a GPU of compute capability 8.9 or newer "
              "(Ada, Hopper or later), but cuda:",
              device, " has compute capability ", major, ".", minor);
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// A 2-D float8 operand whose dim k_dim is contiguous (Note [fp8 operand layouts]), with a
// 16-byte aligned address and leading dimension, as cuBLASLt's fp8 kernels need: t itself when
// it is, else a copy in that layout.
Tensor fp8_operand(const Tensor& t, int k_dim) {
  const int other = 1 - k_dim;
  const int64_t ld = t.size(other) == 1 ? t.size(k_dim) : t.stride(other);
  if (t.stride(k_dim) == 1 && ld >= t.size(k_dim) && ld % 16 == 0 && aligned16(t.data_ptr()))
    return t;
  const Tensor packed = Tensor::empty({t.size(other), t.size(k_dim)}, t.dtype(), t.device());
  Tensor view = k_dim == 1 ? packed : packed.t();
  device_copy(view, t);
  return view;
}

int64_t fp8_ld(const Tensor& t, int k_dim) {
  const int other = 1 - k_dim;
  return t.size(other) == 1 ? t.size(k_dim) : t.stride(other);
}

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::Float8E4M3FN:
      return CUDA_R_8F_E4M3;
    case DType::Float8E5M2:
      return CUDA_R_8F_E5M2;
    case DType::Float16:
      return CUDA_R_16F;
    case DType::BFloat16:
      return CUDA_R_16BF;
    case DType::Float32:
      return CUDA_R_32F;
    default:
      throw DTypeError(std::string("scaled_gemm: unsupported dtype ") + dtype_name(dtype));
  }
}

// cuBLASLt answers CUBLAS_STATUS_NOT_SUPPORTED for a scale pointer that is not 16-byte aligned
// (an element of a scale vector, as fp8_linear's were at first): such a scale is copied into a
// one-element tensor of its own, which the pool aligns (a 4-byte stream-ordered copy).
Tensor aligned_scale(const Tensor& scale) {
  if (aligned16(scale.data_ptr())) return scale;
  const Tensor copy = Tensor::empty({}, DType::Float32, scale.device());
  device_copy(copy, scale);
  return copy;
}

}  // namespace

void CudaBackend::scaled_gemm(const Tensor& out, const Tensor& a, const Tensor& b,
                              const Tensor& scale_a, const Tensor& scale_b, const Tensor& bias) {
  const int64_t m = out.size(0), n = out.size(1), k = a.size(1);
  if (m == 0 || n == 0) return;
  const int device = out.device().index;
  DeviceGuard guard(device);
  check_fp8_capability(device);
  if (k == 0) {
    if (bias.defined())
      copy(out, bias.expand({m, n}));
    else
      fill(out, 0.0);
    return;
  }
  check_sizes("scaled_mm", m, n, k);
  const Tensor a_lt = fp8_operand(a, 1), b_lt = fp8_operand(b, 0);
  // D^T [N,M] column-major is out [M,N] row-major; its rows must be 16-byte aligned too.
  const int64_t out_ld = m == 1 ? n : out.stride(0);
  const bool direct = (out.stride(1) == 1 || n == 1) && out_ld >= n && aligned16(out.data_ptr()) &&
                      (out_ld * static_cast<int64_t>(out.element_size())) % 16 == 0;
  const Tensor c = direct ? out : Tensor::empty({m, n}, out.dtype(), out.device());

  // Note [cuBLASLt row-major products]: D^T = b^T a^T, "TN" in cuBLASLt's terms, each operand
  // stored K-major; cuBLASLt's A is b, so A's scale is scale_b.
  LtProblem p;
  p.device = device;
  p.compute = CUBLAS_COMPUTE_32F;
  p.scale_type = CUDA_R_32F;
  p.a = {cuda_type(b.dtype()), CUBLAS_OP_T, k, n, fp8_ld(b_lt, 0), 0, b_lt.data_ptr()};
  p.b = {cuda_type(a.dtype()), CUBLAS_OP_N, k, m, fp8_ld(a_lt, 1), 0, a_lt.data_ptr()};
  p.d = {cuda_type(out.dtype()), CUBLAS_OP_N, n, m, direct ? out_ld : n, 0, c.data_ptr()};
  const float one = 1.0f, zero = 0.0f;
  p.alpha = &one;
  p.beta = &zero;
  const Tensor sa = aligned_scale(scale_a), sb = aligned_scale(scale_b);
  p.scale_a = sb.data_ptr();
  p.scale_b = sa.data_ptr();
  // The bias goes in the epilogue (one per row of cuBLASLt's D, a column of out) for 16-bit
  // outputs, whose fp8 kernels take a bias of the output's type; float32 outputs add it after.
  const bool epilogue =
      bias.defined() && out.dtype() != DType::Float32 && aligned16(bias.data_ptr());
  if (epilogue) {
    p.epilogue = CUBLASLT_EPILOGUE_BIAS;
    p.bias = bias.data_ptr();
  }
  lt_matmul(p);
  if (!direct) device_copy(out, c);
  if (bias.defined() && !epilogue) binary(BinaryOp::Add, out, out, bias.expand({m, n}));
}

}  // namespace rcuda::cuda
