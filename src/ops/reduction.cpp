// Reductions, softmax and cumsum: dims and dtype checks as torch, then one backend primitive on
// an output in keepdim form (Note [Backend contract]); keepdim=false returns a view without
// the reduced dims, except where every dim is reduced: then the output is made 0-dim, which
// the contract also allows, and no view is needed.
#include "rcuda/ops/reduction.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/elementwise.h"

namespace rcuda::ops {
namespace {

// Which dims of x a reduction covers (true = reduced): dims wrapped, an empty list meaning
// every dim; a dim named twice is a ValueError, as torch.
std::vector<bool> reduced_dims(const char* op, const Tensor& x, const Dims& dims) {
  const int64_t ndim = x.dim();
  std::vector<bool> reduced(static_cast<size_t>(ndim), dims.empty());
  bool scalar_seen = false;  // a 0-dim tensor takes dim 0 (or -1), as torch, and has no flag
  for (int64_t dim : dims) {
    const int64_t d = wrap_dim(dim, ndim, op);
    const bool repeated = ndim > 0 ? static_cast<bool>(reduced[d]) : scalar_seen;
    RCUDA_CHECK(!repeated, ValueError, op, ": dim ", dim, " appears more than once in dims");
    if (ndim > 0)
      reduced[d] = true;
    else
      scalar_seen = true;
  }
  return reduced;
}

Shape keepdim_shape(const Tensor& x, const std::vector<bool>& reduced) {
  Shape shape = x.shape();
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) shape[d] = 1;
  return shape;
}

int64_t reduced_numel(const Tensor& x, const std::vector<bool>& reduced) {
  int64_t n = 1;
  for (size_t d = 0; d < reduced.size(); ++d)
    if (reduced[d]) n *= x.shape()[d];
  return n;
}

// `out` (from new_reduction_output, contiguous) as the user asked for it.
Tensor apply_keepdim(const Tensor& out, const std::vector<bool>& reduced, bool keepdim) {
  if (keepdim || out.dim() == 0) return out;
  Shape shape;
  shape.reserve(reduced.size());
  for (size_t d = 0; d < reduced.size(); ++d)
    if (!reduced[d]) shape.push_back(out.shape()[d]);
  return out.view(shape);
}

Tensor new_keepdim_output(const Tensor& x, const std::vector<bool>& reduced, DType dtype) {
  return ops::new_empty(keepdim_shape(x, reduced), dtype, x.device());
}

// A reduction's output: 0-dim where every dim is reduced without keepdim (the whole tensor to
// one value, the commonest reduction: a loss), else in keepdim form.
Tensor new_reduction_output(const Tensor& x, const std::vector<bool>& reduced, bool keepdim,
                            DType dtype) {
  const bool every_dim = std::all_of(reduced.begin(), reduced.end(), [](bool r) { return r; });
  if (!keepdim && every_dim) return ops::new_empty({}, dtype, x.device());
  return new_keepdim_output(x, reduced, dtype);
}

// out (keepdim form) = op over the reduced dims of x; x already has the primitive's dtype.
Tensor run_reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced, bool keepdim,
                  DType out_dtype, double p = 0) {
  Tensor out = new_reduction_output(x, reduced, keepdim, out_dtype);
  if (out.numel() > 0) ops::backend_of(x).reduce(op, out, x, p);
  return apply_keepdim(out, reduced, keepdim);
}

// Sums and products of bool and integers are int64, as torch.
DType widened_dtype(DType dtype) { return is_integral(dtype, true) ? DType::Int64 : dtype; }

Tensor extreme(const char* op, ReduceOp reduce_op, const Tensor& x) {
  RCUDA_CHECK(x.numel() > 0, ValueError, op, ": expected a non-empty tensor, got shape ",
              shape_str(x.shape()),
              " (the result is undefined; pass a dim to reduce along a non-empty one)");
  return run_reduce(reduce_op, x, std::vector<bool>(static_cast<size_t>(x.dim()), true), false,
                    x.dtype());
}

// (values, indices) of the max or min along dim.
std::pair<Tensor, Tensor> arg_extreme(const char* op, bool is_max, const Tensor& x, int64_t dim,
                                      bool keepdim) {
  const int64_t d = wrap_dim(dim, x.dim(), op);
  const Tensor in = x.dim() == 0 ? x.view({1}) : x;
  RCUDA_CHECK(in.shape()[d] > 0, IndexError, op, ": dim ", dim, " of shape ", shape_str(x.shape()),
              " has size 0, so the reduction has no value to return");
  Shape shape = in.shape();
  shape[d] = 1;
  Tensor values = ops::new_empty(shape, x.dtype(), x.device());
  Tensor indices = ops::new_empty(shape, DType::Int64, x.device());
  if (values.numel() > 0) ops::backend_of(x).arg_reduce(is_max, values, indices, in, d);
  if (x.dim() == 0) return {values.view({}), indices.view({})};
  if (!keepdim) return {values.squeeze(d), indices.squeeze(d)};
  return {values, indices};
}

Tensor arg_index(const char* op, bool is_max, const Tensor& x, std::optional<int64_t> dim,
                 bool keepdim) {
  if (dim) return arg_extreme(op, is_max, x, *dim, keepdim).second;
  RCUDA_CHECK(x.numel() > 0, ValueError, op,
              ": expected a non-empty tensor when no dim is "
              "given, got shape ",
              shape_str(x.shape()));
  const Tensor index = arg_extreme(op, is_max, reshape(x, {-1}), 0, false).second;
  return keepdim ? index.view(Shape(static_cast<size_t>(x.dim()), 1)) : index;
}

Tensor softmax_of(const char* op, const Tensor& x, int64_t dim, bool log) {
  ops::check_floating(op, "input", x);
  const int64_t d = wrap_dim(dim, x.dim(), op);
  Tensor out = ops::new_empty(x.shape(), x.dtype(), x.device());
  if (out.numel() > 0) ops::backend_of(x).softmax(out, x, d, log);
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, const Dims& dims, bool keepdim, std::optional<DType> dtype) {
  const std::vector<bool> reduced = reduced_dims("sum", x, dims);
  const DType out_dtype = dtype ? *dtype : widened_dtype(x.dtype());
  return run_reduce(ReduceOp::Sum, ops::cast(x, out_dtype), reduced, keepdim, out_dtype);
}

Tensor mean(const Tensor& x, const Dims& dims, bool keepdim) {
  ops::check_floating("mean", "input", x);
  const std::vector<bool> reduced = reduced_dims("mean", x, dims);
  // Half types sum in float32 and round once at the end, as torch: a half sum of many
  // elements would overflow or lose the low bits before the division.
  const DType work = is_reduced_float(x.dtype()) ? DType::Float32 : x.dtype();
  const Tensor total = run_reduce(ReduceOp::Sum, ops::cast(x, work), reduced, keepdim, work);
  // An empty reduction divides 0 by 0: NaN, as torch.
  const Tensor result = div(total, Scalar(static_cast<double>(reduced_numel(x, reduced))));
  return ops::cast(result, x.dtype());
}

Tensor prod(const Tensor& x, const Dims& dims, bool keepdim) {
  const std::vector<bool> reduced = reduced_dims("prod", x, dims);
  const DType out_dtype = widened_dtype(x.dtype());
  return run_reduce(ReduceOp::Prod, ops::cast(x, out_dtype), reduced, keepdim, out_dtype);
}

Tensor max(const Tensor& x) { return extreme("max", ReduceOp::Max, x); }
Tensor min(const Tensor& x) { return extreme("min", ReduceOp::Min, x); }

std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return arg_extreme("max", true, x, dim, keepdim);
}
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return arg_extreme("min", false, x, dim, keepdim);
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_index("argmax", true, x, dim, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_index("argmin", false, x, dim, keepdim);
}

Tensor var(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
  ops::check_floating("var", "input", x);
  const std::vector<bool> reduced = reduced_dims("var", x, dims);
  Tensor out = new_reduction_output(x, reduced, keepdim, x.dtype());
  if (out.numel() > 0) ops::backend_of(x).var(out, x, correction);
  return apply_keepdim(out, reduced, keepdim);
}

Tensor std(const Tensor& x, const Dims& dims, double correction, bool keepdim) {
  ops::check_floating("std", "input", x);
  const std::vector<bool> reduced = reduced_dims("std", x, dims);
  Tensor out = new_reduction_output(x, reduced, keepdim, x.dtype());
  if (out.numel() > 0) {
    Backend& backend = ops::backend_of(x);
    backend.var(out, x, correction);
    backend.unary(UnaryOp::Sqrt, out, out, UnaryArgs{});
  }
  return apply_keepdim(out, reduced, keepdim);
}

Tensor norm(const Tensor& x, double p, const Dims& dims, bool keepdim) {
  ops::check_floating("norm", "input", x);
  RCUDA_CHECK(p >= 0, ValueError, "norm: p must be inf, 0 or positive, got ", p);
  const std::vector<bool> reduced = reduced_dims("norm", x, dims);
  RCUDA_CHECK(
      !(std::isinf(p) && reduced_numel(x, reduced) == 0 && numel(keepdim_shape(x, reduced)) > 0),
      ValueError, "norm: the inf norm over an empty set of elements is undefined (shape ",
      shape_str(x.shape()), ")");
  return run_reduce(ReduceOp::Norm, x, reduced, keepdim, x.dtype(), p);
}

Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim) {
  const std::vector<bool> reduced = reduced_dims("logsumexp", x, dims);
  // Integers give the default float dtype (as torch); half types compute in float32.
  const DType result_dtype = is_floating(x.dtype()) ? x.dtype() : default_float_dtype();
  const DType work = is_reduced_float(result_dtype) ? DType::Float32 : result_dtype;
  const Tensor in = ops::cast(x, work);
  Tensor shift = new_keepdim_output(in, reduced, work);
  if (shift.numel() == 0) {
    return apply_keepdim(new_keepdim_output(x, reduced, result_dtype), reduced, keepdim);
  }
  // An empty reduction gives max = -inf and, below, log(0) + 0 = -inf, as torch.
  ops::backend_of(in).reduce(ReduceOp::Max, shift, in, 0);
  // Shifting by an infinite max would give inf - inf = NaN; shifting by 0 instead makes a row
  // of -inf give log(0) = -inf and a row holding +inf give +inf, as torch.
  shift =
      where(eq(abs(shift), Scalar(std::numeric_limits<double>::infinity())), Scalar(0.0), shift);
  const Tensor total = run_reduce(ReduceOp::Sum, exp(sub(in, shift)), reduced, true, work);
  const Tensor result = ops::cast(add(log(total), shift), result_dtype);
  return apply_keepdim(contiguous(result), reduced, keepdim);
}

Tensor all(const Tensor& x, const Dims& dims, bool keepdim) {
  return run_reduce(ReduceOp::All, x, reduced_dims("all", x, dims), keepdim, DType::Bool);
}

Tensor any(const Tensor& x, const Dims& dims, bool keepdim) {
  return run_reduce(ReduceOp::Any, x, reduced_dims("any", x, dims), keepdim, DType::Bool);
}

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_of("softmax", x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_of("log_softmax", x, dim, true); }

Tensor cumsum(const Tensor& x, int64_t dim) {
  const int64_t d = wrap_dim(dim, x.dim(), "cumsum");
  const DType out_dtype = widened_dtype(x.dtype());
  const Tensor in = ops::cast(x, out_dtype);
  Tensor out = ops::new_empty(x.shape(), out_dtype, x.device());
  if (out.numel() > 0) ops::backend_of(x).cumsum(out, in, d);
  return out;
}

}  // namespace rcuda::ops
