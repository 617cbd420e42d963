// Plumbing shared by the factorisation ops (linalg_util.h).
#include "linalg_util.h"

#include <limits>
#include <string>
#include <vector>

#include "rcuda/core/error.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"

namespace rcuda::ops::linalg {

void check_matrix(const char* op, const char* arg, const Tensor& A, bool square) {
  RCUDA_CHECK(A.dtype() == DType::Float32 || A.dtype() == DType::Float64, DTypeError, op,
              ": Expected a floating point tensor (float32 or float64) as ", arg, ", got ",
              dtype_name(A.dtype()));
  RCUDA_CHECK(A.dim() >= 2, ShapeError, op, ": ", arg,
              " must have at least 2 dimensions, got shape ", shape_str(A.shape()));
  if (square) {
    const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1];
    RCUDA_CHECK(m == n, ShapeError, op, ": ", arg,
                " must be batches of square matrices, but they are ", m, " by ", n, " matrices");
  }
}

Shape batch_shape(const Tensor& A) {
  const Shape& s = A.shape();
  return Shape(s.begin(), s.end() - 2);
}

int64_t count(const Shape& batch) {
  int64_t n = 1;
  for (int64_t d : batch) n *= d;
  return n;
}

Tensor column_major(const Tensor& A) {
  const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1];
  return clone(mT(A)).view({count(batch_shape(A)), n, m});
}

Tensor from_column_major(const Tensor& buffer, const Shape& batch) {
  Shape shape = batch;
  shape.push_back(buffer.shape()[1]);
  shape.push_back(buffer.shape()[2]);
  return mT(buffer.view(shape));
}

Tensor info_buffer(int64_t n, Device device) {
  return zeros({n}, TensorOptions(DType::Int32, device));
}

void check_info(const char* op, const Tensor& info, bool batched,
                std::string (*what)(int32_t info)) {
  if (info.numel() == 0) return;
  const Tensor host = to(info, Device());  // waits for the GPU (Note [Solver errors])
  const int32_t* p = host.data<int32_t>();
  for (int64_t i = 0; i < host.numel(); ++i) {
    if (p[i] == 0) continue;
    const std::string where = batched ? detail::concat("(Batch element ", i, "): ") : std::string();
    throw ValueError(detail::concat(op, ": ", where, what(p[i])));
  }
}

Tensor mT(const Tensor& x) { return x.transpose(-2, -1); }

namespace {
// mask[i][j] = j - i <= diagonal (lower) or >= diagonal (upper), on x's device.
Tensor band_mask(const Tensor& x, int64_t diagonal, bool lower) {
  const int64_t m = x.shape()[x.dim() - 2], n = x.shape()[x.dim() - 1];
  const Tensor rows = arange(0, m, 1, DType::Int64, x.device()).unsqueeze(1);
  const Tensor cols = sub(arange(0, n, 1, DType::Int64, x.device()).unsqueeze(0), Scalar(diagonal));
  return lower ? le(cols, rows) : ge(cols, rows);
}
}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) {
  return where(band_mask(x, diagonal, true), x, Scalar(0));
}
Tensor triu(const Tensor& x, int64_t diagonal) {
  return where(band_mask(x, diagonal, false), x, Scalar(0));
}

Tensor diag_embed(const Tensor& v) {
  const int64_t k = v.shape()[v.dim() - 1];
  return mul(v.unsqueeze(-1), eye_like(k, v));
}

Tensor eye_like(int64_t n, const Tensor& like) {
  return eye(n, n, TensorOptions(like.dtype(), like.device()));
}

double eps(DType dtype) {
  return dtype == DType::Float32 ? std::numeric_limits<float>::epsilon()
                                 : std::numeric_limits<double>::epsilon();
}

Shape with_dims(Shape batch, std::initializer_list<int64_t> dims) {
  batch.insert(batch.end(), dims);
  return batch;
}

Tensor batched_eye(const Shape& batch, int64_t rows, int64_t cols, const Tensor& like) {
  return contiguous(
      eye(rows, cols, {like.dtype(), like.device()}).expand(with_dims(batch, {rows, cols})));
}

}  // namespace rcuda::ops::linalg
