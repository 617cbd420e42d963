// CudaBackend::gemm, linear (the bias epilogue) and linear_weight_grad (the bias-gradient
// epilogue) as cublasLtMatmul problems (backend/cuda/cublaslt_matmul.h).
//
// Note [cuBLASLt row-major products]
// cuBLASLt multiplies column-major matrices, each optionally transposed (op T). A row-major
// rcuda matrix with leading dimension ld is, read column-major with the same ld, its own
// transpose. So a column-major output is computed as D = op(a) op(b), and a row-major one as
// D^T = op(b^T) op(a^T); each operand's op follows from its own layout: N when the matrix
// cuBLASLt multiplies is column-major in memory, T when it is row-major (Note [BLAS operand
// layouts] in cpu/gemm.cpp describes the same two layouts). Transposed views therefore cost
// nothing; operands in neither layout (stepped slices, stride-0 matrix dims) are first copied
// contiguous, and an output in neither layout is computed into a temporary and copied back.
// Batch dims map to cuBLASLt's strided batch (a batch stride of 0 repeats one matrix).
// For fp8 the same mapping turns cuBLASLt's "TN" requirement into a row-major a and a
// column-major b (Note [fp8 operand layouts] in src/ops/linalg.cpp).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "backend/cuda/cublaslt_matmul.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/copy.h"
#include "backend/cuda/runtime.h"
#include "rcuda/backend/cuda.h"

namespace rcuda::cuda {

namespace {

// ---- Layouts of rcuda matrices ----

// A rows x cols matrix that is row-major (unit column stride) or column-major (unit row stride)
// with leading dimension ld; strides of size-1 dims do not matter.
struct MatrixView {
  bool row_major;
  int64_t ld;
};

std::optional<MatrixView> matrix_view(int64_t rows, int64_t cols, int64_t row_stride,
                                      int64_t col_stride) {
  const int64_t min_row_ld = std::max<int64_t>(1, cols), min_col_ld = std::max<int64_t>(1, rows);
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= min_row_ld))
    return MatrixView{true, rows == 1 ? min_row_ld : row_stride};
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= min_col_ld))
    return MatrixView{false, cols == 1 ? min_col_ld : col_stride};
  return std::nullopt;
}

// Of the matrices of a [B, rows, cols] tensor.
std::optional<MatrixView> matrix_view(const Tensor& t) {
  return matrix_view(t.size(1), t.size(2), t.stride(1), t.stride(2));
}

// t when its matrices have a cuBLASLt layout, else a contiguous copy; a batch stride of 0 is
// kept (one matrix copied, not B).
Tensor lt_operand(const Tensor& t) {
  if (matrix_view(t)) return t;
  const int64_t batch = t.size(0);
  const int64_t copies = t.stride(0) == 0 ? 1 : batch;
  Tensor tmp = Tensor::empty({copies, t.size(1), t.size(2)}, t.dtype(), t.device());
  device_copy(tmp, t.narrow(0, 0, copies));
  return copies == batch ? tmp : tmp.expand({batch, t.size(1), t.size(2)});
}

// The operand cuBLASLt multiplies as a rows x cols matrix: t's matrices (transposed when
// `transposed`, i.e. t holds the cols x rows matrix whose transpose is multiplied).
LtMatrix lt_matrix(const Tensor& t, bool transposed, int64_t rows, int64_t cols,
                   cudaDataType_t type, int64_t batch) {
  MatrixView view = *matrix_view(t);
  if (transposed) view.row_major = !view.row_major;
  LtMatrix m;
  m.type = type;
  m.op = view.row_major ? CUBLAS_OP_T : CUBLAS_OP_N;
  m.rows = view.row_major ? cols : rows;
  m.cols = view.row_major ? rows : cols;
  m.ld = view.ld;
  m.batch_stride = batch > 1 ? t.stride(0) : 0;
  m.data = t.data_ptr();
  return m;
}

struct GemmTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  cudaDataType_t scale;
};

GemmTypes gemm_types(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return {CUDA_R_32F, allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
              CUDA_R_32F};
    case DType::Float16:
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::BFloat16:
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case DType::Float64:
      return {CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
    default:
      throw DTypeError(std::string("gemm: expected float16, bfloat16, float32 or float64, got ") +
                       dtype_name(dtype));
  }
}

// K == 0: the product is empty, so out = beta * out (zeros when beta == 0, NaN included).
void scale_output(Backend& backend, const Tensor& out, double beta) {
  if (beta == 0) {
    backend.fill(out, 0.0);
    return;
  }
  if (beta == 1) return;
  const Tensor factor = Tensor::empty({}, out.dtype(), out.device());
  backend.fill(factor, beta);
  backend.binary(BinaryOp::Mul, out, out, factor.expand(out.shape()));
}

// out = alpha a b + beta out through cublasLtMatmul. With an epilogue, out must be a contiguous
// [1,M,N]: BIAS adds bias [N] to every row of out; BGRADB writes into bias [M] the row sums of a
// (the sums over the product's K; see linear_weight_grad). False, having run nothing, when
// cuBLASLt has no algorithm for a BGRADB problem.
bool gemm_lt(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta,
             const GemmTypes& types, const void* bias,
             cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  const int device = out.device().index;

  const Tensor a_lt = lt_operand(a), b_lt = lt_operand(b);
  // The output needs a temporary when it is in neither layout (or one matrix repeated over the
  // batch); its old values are only read when beta != 0.
  const bool direct = matrix_view(out) && (batch == 1 || out.stride(0) != 0);
  Tensor c = out;
  if (!direct) {
    c = Tensor::empty({batch, m, n}, out.dtype(), out.device());
    if (beta != 0) device_copy(c, out);
  }

  // Note [cuBLASLt row-major products]
  const MatrixView c_view = *matrix_view(c);
  LtProblem p;
  p.device = device;
  p.compute = types.compute;
  p.scale_type = types.scale;
  p.batch = batch;
  if (c_view.row_major) {  // D^T [N,M] = b^T a^T
    p.a = lt_matrix(b_lt, true, n, k, types.data, batch);
    p.b = lt_matrix(a_lt, true, k, m, types.data, batch);
    p.d = {types.data, CUBLAS_OP_N, n, m, c_view.ld, batch > 1 ? c.stride(0) : 0, c.data_ptr()};
  } else {  // D [M,N] = a b
    p.a = lt_matrix(a_lt, false, m, k, types.data, batch);
    p.b = lt_matrix(b_lt, false, k, n, types.data, batch);
    p.d = {types.data, CUBLAS_OP_N, m, n, c_view.ld, batch > 1 ? c.stride(0) : 0, c.data_ptr()};
  }
  const float alpha32 = static_cast<float>(alpha), beta32 = static_cast<float>(beta);
  const bool doubles = types.scale == CUDA_R_64F;
  p.alpha = doubles ? static_cast<const void*>(&alpha) : &alpha32;
  p.beta = doubles ? static_cast<const void*>(&beta) : &beta32;
  RCUDA_CHECK(bias == nullptr || (direct && c_view.row_major && batch == 1), InternalError,
              "linear: the bias epilogue needs a contiguous output");
  p.bias = bias;
  p.epilogue = epilogue;
  if (!lt_matmul(p)) return false;
  if (!direct) device_copy(out, c);
  return true;
}

}  // namespace

void CudaBackend::gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha,
                       double beta) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  const GemmTypes types = gemm_types(out.dtype());
  if (batch == 0 || m == 0 || n == 0) return;
  const int device = out.device().index;
  DeviceGuard guard(device);
  if (k == 0) {
    scale_output(*this, out, beta);
    return;
  }
  check_sizes("gemm", m, n, k);
  gemm_lt(out, a, b, alpha, beta, types, nullptr);
}

void CudaBackend::linear(const Tensor& out, const Tensor& x, const Tensor& weight,
                         const Tensor& bias) {
  const int64_t m = out.size(0), n = out.size(1), k = x.size(1);
  const GemmTypes types = gemm_types(out.dtype());
  if (m == 0 || n == 0) return;
  const Tensor out3 = out.unsqueeze(0), x3 = x.unsqueeze(0), w3 = weight.t().unsqueeze(0);
  // The epilogue adds one bias per row of cuBLASLt's D, which is a row-major out's column
  // (Note [cuBLASLt row-major products]); float64 products have no epilogue in cuBLASLt.
  const bool epilogue = bias.defined() && k > 0 && out.dtype() != DType::Float64 &&
                        out.is_contiguous() && bias.is_contiguous() &&
                        reinterpret_cast<uintptr_t>(bias.data_ptr()) % 16 == 0;
  if (!epilogue) {
    if (bias.defined()) copy(out, bias.expand(out.shape()));
    gemm(out3, x3, w3, 1.0, bias.defined() ? 1.0 : 0.0);
    return;
  }
  DeviceGuard guard(out.device().index);
  check_sizes("linear", m, n, k);
  gemm_lt(out3, x3, w3, 1.0, 0.0, types, bias.data_ptr(), CUBLASLT_EPILOGUE_BIAS);
}

// grad_weight [N,K] = grad_out^T x with grad_bias in the same kernel: in the row-major mapping
// (Note [cuBLASLt row-major products]) cuBLASLt's D is grad_weight^T [K,N] = x^T grad_out, its B
// is grad_out [M,N] and the GEMM's K is M, so BGRADB's sums of B over K, one per column of D,
// are grad_out's column sums: grad_bias.
bool CudaBackend::linear_weight_grad(const Tensor& grad_weight, const Tensor& grad_bias,
                                     const Tensor& grad_out, const Tensor& x) {
  const int64_t n = grad_weight.size(0), k = grad_weight.size(1), m = x.size(0);
  if (grad_weight.dtype() == DType::Float64 || m == 0 || n == 0 || k == 0 ||
      !grad_weight.is_contiguous() || !grad_bias.is_contiguous() ||
      reinterpret_cast<uintptr_t>(grad_bias.data_ptr()) % 16 != 0)
    return false;
  DeviceGuard guard(grad_weight.device().index);
  check_sizes("linear_weight_grad", n, k, m);
  return gemm_lt(grad_weight.unsqueeze(0), grad_out.t().unsqueeze(0), x.unsqueeze(0), 1.0, 0.0,
                 gemm_types(grad_weight.dtype()), grad_bias.data_ptr(), CUBLASLT_EPILOGUE_BGRADB);
}

}  // namespace rcuda::cuda
