// cumprod, cummax, cummin and logcumsumexp over Backend::cumulative (Note [Row primitives] in
// rcuda/backend/backend.h), and the backward passes of the two that need their own primitive.
#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/sorting.h"
#include "row_layout.h"

namespace rcuda::ops {
namespace {

using CumulativeOp = Backend::CumulativeOp;

// out (and indices for Max/Min) in x's shape; out_dtype as each op says.
std::pair<Tensor, Tensor> run_cumulative(const char* op_name, CumulativeOp op, const Tensor& x,
                                         int64_t dim, DType out_dtype) {
  check_not_float8(op_name, x);
  const bool with_indices = op == CumulativeOp::Max || op == CumulativeOp::Min;
  const int64_t ndim = x.dim() == 0 ? 1 : x.dim();
  const int64_t d = wrap_dim(dim, ndim, op_name);
  const Tensor in = cast(x.dim() == 0 ? x.view({1}) : x, out_dtype);
  Tensor out, indices;
  if (in.numel() == 0) {
    out = new_empty(x.shape(), out_dtype, x.device());
    if (with_indices) indices = new_empty(x.shape(), DType::Int64, x.device());
    return {out, indices};
  }
  const Tensor rows = to_rows(in, d);
  out = new_empty(rows.shape(), out_dtype, x.device());
  if (with_indices) indices = new_empty(rows.shape(), DType::Int64, x.device());
  backend_of(x).cumulative(op, out, indices, rows);
  out = from_rows(out, in.shape(), d).view(x.shape());
  if (with_indices) indices = from_rows(indices, in.shape(), d).view(x.shape());
  return {out, indices};
}

Tensor run_backward(const char* op_name, CumulativeOp op, const Tensor& grad, const Tensor& x,
                    const Tensor& out, int64_t dim) {
  check_floating(op_name, "grad", grad);
  RCUDA_CHECK(grad.shape() == x.shape() && out.shape() == x.shape(), ShapeError, op_name, ": grad ",
              shape_str(grad.shape()), ", input ", shape_str(x.shape()), " and output ",
              shape_str(out.shape()), " must have one shape");
  check_same_device(op_name, {grad, x, out});
  const int64_t ndim = x.dim() == 0 ? 1 : x.dim();
  const int64_t d = wrap_dim(dim, ndim, op_name);
  const Shape shape = x.dim() == 0 ? Shape{1} : x.shape();
  if (x.numel() == 0) return new_empty(x.shape(), grad.dtype(), x.device());
  const Tensor g = to_rows(grad.view(shape), d);
  const Tensor in = to_rows(cast(x, grad.dtype()).view(shape), d);
  const Tensor result = to_rows(cast(out, grad.dtype()).view(shape), d);
  Tensor grad_in = new_empty(g.shape(), grad.dtype(), x.device());
  backend_of(grad).cumulative_backward(op, grad_in, g, in, result);
  return from_rows(grad_in, shape, d).view(x.shape());
}

}  // namespace

Tensor cumprod(const Tensor& x, int64_t dim) {
  const DType dtype = is_floating(x.dtype()) ? x.dtype() : DType::Int64;
  return run_cumulative("cumprod", CumulativeOp::Prod, x, dim, dtype).first;
}

std::pair<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) {
  return run_cumulative("cummax", CumulativeOp::Max, x, dim, x.dtype());
}

std::pair<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) {
  return run_cumulative("cummin", CumulativeOp::Min, x, dim, x.dtype());
}

Tensor logcumsumexp(const Tensor& x, int64_t dim) {
  check_floating("logcumsumexp", "input", x);
  return run_cumulative("logcumsumexp", CumulativeOp::LogSumExp, x, dim, x.dtype()).first;
}

Tensor cumprod_backward(const Tensor& grad, const Tensor& x, const Tensor& out, int64_t dim) {
  return run_backward("cumprod_backward", CumulativeOp::Prod, grad, x, out, dim);
}

Tensor logcumsumexp_backward(const Tensor& grad, const Tensor& x, const Tensor& out, int64_t dim) {
  return run_backward("logcumsumexp_backward", CumulativeOp::LogSumExp, grad, x, out, dim);
}

}  // namespace rcuda::ops
