// gemm through OpenBLAS: out[b] = alpha * a[b] @ b[b] + beta * out[b] for [B,M,K] x [B,K,N].
//
// Note [BLAS operand layouts]
// cblas_?gemm reads a matrix whose rows or columns are contiguous: row-major with leading
// dimension ld (col stride 1, row stride ld >= cols), or, passing CblasTrans, the transposed
// view of one (row stride 1, col stride ld >= rows). Strides of size-1 dims do not matter.
// Operands in either layout go to BLAS as they are (a.t() and transposed copies cost nothing);
// anything else (stepped slices, expanded matrix dims, half types) is first copied into a
// contiguous float32/float64 temporary. A column-major output is written as the transposed
// product (C^T = B^T A^T), so only outputs in neither layout need a temporary.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <climits>
#include <optional>

#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {
namespace {

struct BlasLayout {
  CBLAS_TRANSPOSE trans;  // relative to a row-major read of the matrix
  blasint ld;
};

// Below this many multiply-adds per matrix OpenBLAS runs a gemm on one thread anyway, so
// batches of such matrices are spread over threads here instead.
constexpr int64_t kSmallGemmWork = int64_t{1} << 18;

bool fits_blasint(int64_t v) { return v >= 0 && v <= INT_MAX; }

// The layout of a rows x cols matrix with the given strides (Note [BLAS operand layouts]).
std::optional<BlasLayout> blas_layout(int64_t rows, int64_t cols, int64_t row_stride,
                                      int64_t col_stride) {
  const int64_t min_row_ld = std::max<int64_t>(1, cols), min_col_ld = std::max<int64_t>(1, rows);
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= min_row_ld)) {
    const int64_t ld = rows == 1 ? min_row_ld : row_stride;
    if (fits_blasint(ld)) return BlasLayout{CblasNoTrans, static_cast<blasint>(ld)};
  }
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= min_col_ld)) {
    const int64_t ld = cols == 1 ? min_col_ld : col_stride;
    if (fits_blasint(ld)) return BlasLayout{CblasTrans, static_cast<blasint>(ld)};
  }
  return std::nullopt;
}

std::optional<BlasLayout> blas_layout(const Tensor& t) {
  return blas_layout(t.size(1), t.size(2), t.stride(1), t.stride(2));
}

CBLAS_TRANSPOSE flip(CBLAS_TRANSPOSE t) { return t == CblasNoTrans ? CblasTrans : CblasNoTrans; }

// A [B,R,C] operand in `dtype` and a BLAS layout: t itself when it already is, else a
// contiguous copy. A batch stride of 0 is kept (one matrix copied, not B).
Tensor blas_operand(Backend& backend, const Tensor& t, DType dtype) {
  if (t.dtype() == dtype && blas_layout(t)) return t;
  const int64_t batch = t.size(0);
  const int64_t copies = t.stride(0) == 0 ? 1 : batch;
  Tensor tmp = Tensor::empty({copies, t.size(1), t.size(2)}, dtype, t.device());
  backend.copy(tmp, t.narrow(0, 0, copies));
  return copies == batch ? tmp : tmp.expand({batch, t.size(1), t.size(2)});
}

void blas_gemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n,
               blasint k, double alpha, const float* a, blasint lda, const float* b, blasint ldb,
               double beta, float* c, blasint ldc) {
  cblas_sgemm(order, ta, tb, m, n, k, static_cast<float>(alpha), a, lda, b, ldb,
              static_cast<float>(beta), c, ldc);
}

void blas_gemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n,
               blasint k, double alpha, const double* a, blasint lda, const double* b, blasint ldb,
               double beta, double* c, blasint ldc) {
  cblas_dgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// All three operands are float/double in BLAS layouts; out's matrix layout may be either.
template <typename T>
void batched_blas_gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha,
                       double beta) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  const BlasLayout la = *blas_layout(a), lb = *blas_layout(b), lc = *blas_layout(out);
  // Row-major C: C = op(A) op(B). Column-major C: the same call in CblasColMajor order, where
  // each operand's row-major description reads as its transpose.
  const bool row_major_out = lc.trans == CblasNoTrans;
  const CBLAS_ORDER order = row_major_out ? CblasRowMajor : CblasColMajor;
  const CBLAS_TRANSPOSE ta = row_major_out ? la.trans : flip(la.trans);
  const CBLAS_TRANSPOSE tb = row_major_out ? lb.trans : flip(lb.trans);
  const T* a_data = a.data<T>();
  const T* b_data = b.data<T>();
  T* c_data = out.data<T>();
  const int64_t sa = a.stride(0), sb = b.stride(0), sc = out.stride(0);
  auto one = [&](int64_t i) {
    blas_gemm(order, ta, tb, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a_data + i * sa, la.ld, b_data + i * sb, lb.ld, beta,
              c_data + i * sc, lc.ld);
  };
  // Large matrices: OpenBLAS already uses every core, so the batch runs in sequence.
  if (batch == 1 || m * n * k >= kSmallGemmWork || omp_in_parallel()) {
    for (int64_t i = 0; i < batch; ++i) one(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < batch; ++i) one(i);
}

// K == 0: the product is empty, so out = beta * out (zeros when beta == 0, NaN included).
void scale_output(Backend& backend, const Tensor& out, double beta) {
  if (beta == 0) {
    backend.fill(out, 0.0);
    return;
  }
  if (beta == 1) return;
  dispatch_floating(out.dtype(), "gemm", [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    const C factor = static_cast<C>(beta);
    unary_loop<T, T>(out, out, [factor](T v) { return convert<T>(factor * convert<C>(v)); });
  });
}

void check_blas_sizes(int64_t m, int64_t n, int64_t k) {
  RCUDA_CHECK(fits_blasint(m) && fits_blasint(n) && fits_blasint(k), ValueError,
              "gemm: sizes M=", m, ", N=", n, ", K=", k,
              " exceed OpenBLAS's 32-bit integer limit (", INT_MAX, ")");
}

}  // namespace

void CpuBackend::linear(const Tensor& out, const Tensor& x, const Tensor& weight,
                        const Tensor& bias) {
  // OpenBLAS has no bias epilogue: the bias is the product's C operand.
  if (bias.defined()) copy(out, bias.expand(out.shape()));
  gemm(out.unsqueeze(0), x.unsqueeze(0), weight.t().unsqueeze(0), 1.0, bias.defined() ? 1.0 : 0.0);
}

void CpuBackend::gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha,
                      double beta) {
  const int64_t batch = out.size(0), m = out.size(1), n = out.size(2), k = a.size(2);
  const DType dtype = out.dtype();
  const DType compute = is_reduced_float(dtype) ? DType::Float32 : dtype;
  dispatch_floating(dtype, "gemm", [](auto) {});  // DTypeError for anything else
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {
    scale_output(*this, out, beta);
    return;
  }
  check_blas_sizes(m, n, k);

  const Tensor a_blas = blas_operand(*this, a, compute);
  const Tensor b_blas = blas_operand(*this, b, compute);
  // The output needs a temporary when it is a half type or in neither BLAS layout; its old
  // values are only read when beta != 0.
  const bool direct = dtype == compute && blas_layout(out) && (batch == 1 || out.stride(0) != 0);
  Tensor c = out;
  if (!direct) {
    c = Tensor::empty({batch, m, n}, compute, out.device());
    if (beta != 0) copy(c, out);
  }
  if (compute == DType::Float32) {
    batched_blas_gemm<float>(c, a_blas, b_blas, alpha, beta);
  } else {
    batched_blas_gemm<double>(c, a_blas, b_blas, alpha, beta);
  }
  if (!direct) copy(out, c);
}

}  // namespace rcuda::cpu
