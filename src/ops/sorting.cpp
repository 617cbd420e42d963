// The sort family over Backend::sort (Note [Row primitives] in rcuda/backend/backend.h): each op
// moves its dim last, sorts rows and reads what it needs from the sorted values and indices.
#include "rcuda/ops/sorting.h"

#include <cmath>
#include <limits>

#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/indexing.h"
#include "rcuda/ops/random.h"
#include "rcuda/ops/reduction.h"
#include "row_layout.h"

namespace rcuda::ops {
namespace {

// The dtype the backend sorts x in: half types through float32, bool through uint8.
DType sort_dtype(DType dtype) {
  if (dtype == DType::Float16 || dtype == DType::BFloat16) return DType::Float32;
  if (dtype == DType::Bool) return DType::UInt8;
  return dtype;
}

// Sorted rows of x along d (x.dim() >= 1, numel > 0): values in x's dtype, indices Int64, both
// [rows, n].
std::pair<Tensor, Tensor> sorted_rows(const Tensor& x, int64_t d, bool descending) {
  const Tensor rows = to_rows(cast(x, sort_dtype(x.dtype())), d);
  Tensor values = new_empty(rows.shape(), rows.dtype(), x.device());
  Tensor indices = new_empty(rows.shape(), DType::Int64, x.device());
  backend_of(x).sort(values, indices, rows, descending);
  return {cast(values, x.dtype()), indices};
}

// Along dim d: the sorted values and indices in x's layout, for any shape (0-dim and empty too).
std::pair<Tensor, Tensor> sort_along(const char* op, const Tensor& x, int64_t dim,
                                     bool descending) {
  check_not_float8(op, x);
  if (x.dim() == 0) {
    wrap_dim(dim, 1, op);  // as torch, a 0-dim tensor takes dim 0 or -1
    return {clone(x), zeros({}, TensorOptions(DType::Int64, x.device()))};
  }
  const int64_t d = wrap_dim(dim, x.dim(), op);
  if (x.numel() == 0) return {clone(x), new_empty(x.shape(), DType::Int64, x.device())};
  auto [values, indices] = sorted_rows(x, d, descending);
  return {from_rows(values, x.shape(), d), from_rows(indices, x.shape(), d)};
}

// The element at position `position` (Int64, x's shape with size 1 at d) along d of a and b.
std::pair<Tensor, Tensor> pick(const Tensor& a, const Tensor& b, int64_t d, const Tensor& position,
                               bool keepdim) {
  Tensor va = gather(a, d, position), vb = gather(b, d, position);
  if (!keepdim) {
    va = va.squeeze(d);
    vb = vb.squeeze(d);
  }
  return {contiguous(va), contiguous(vb)};
}

Shape keepdim_shape(const Tensor& x, int64_t d) {
  Shape shape = x.shape();
  shape[d] = 1;
  return shape;
}

// A reduction along d that needs at least one element; 0-dim x is its own result (index 0).
bool reduces_scalar(const char* op, const Tensor& x, int64_t dim) {
  check_not_float8(op, x);
  if (x.dim() == 0) {
    wrap_dim(dim, 1, op);
    return true;
  }
  const int64_t d = wrap_dim(dim, x.dim(), op);
  RCUDA_CHECK(x.shape()[d] > 0, IndexError, op, ": cannot reduce over dim ", dim,
              " of size 0 (shape ", shape_str(x.shape()), ")");
  return false;
}

}  // namespace

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  (void)stable;  // always stable
  return sort_along("sort", x, dim, descending);
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  (void)stable;
  return sort_along("argsort", x, dim, descending).second;
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  (void)sorted;  // always sorted
  const int64_t size = x.dim() == 0 ? 1 : x.shape()[wrap_dim(dim, x.dim(), "topk")];
  RCUDA_CHECK(k >= 0 && k <= size, IndexError, "topk: k (", k,
              ") must be between 0 and the size of dim ", dim, " (", size, ")");
  auto [values, indices] = sort_along("topk", x, dim, largest);
  if (x.dim() == 0) return {values, indices};
  const int64_t d = wrap_dim(dim, x.dim(), "topk");
  return {contiguous(values.narrow(d, 0, k)), contiguous(indices.narrow(d, 0, k))};
}

std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  const int64_t size = x.dim() == 0 ? 1 : x.shape()[wrap_dim(dim, x.dim(), "kthvalue")];
  RCUDA_CHECK(k >= 1 && k <= size, IndexError, "kthvalue: k (", k,
              ") must be between 1 and the size of dim ", dim, " (", size, ")");
  if (reduces_scalar("kthvalue", x, dim)) return sort_along("kthvalue", x, dim, false);
  const int64_t d = wrap_dim(dim, x.dim(), "kthvalue");
  auto [values, indices] = sort_along("kthvalue", x, d, false);
  const Tensor position = full(keepdim_shape(x, d), k - 1, TensorOptions(DType::Int64, x.device()));
  return pick(values, indices, d, position, keepdim);
}

std::pair<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim) {
  if (reduces_scalar("median", x, dim)) return sort_along("median", x, dim, false);
  const int64_t d = wrap_dim(dim, x.dim(), "median");
  const int64_t n = x.shape()[d];
  auto [values, indices] = sort_along("median", x, d, false);
  const TensorOptions long_options(DType::Int64, x.device());
  Tensor position = full(keepdim_shape(x, d), (n - 1) / 2, long_options);
  if (is_floating(x.dtype())) {
    // NaN sorts last, stably: the first NaN of the slice sits at n - (number of NaNs).
    const Tensor nans = sum(ne(x, x), {d}, true);
    position = where(gt(nans, int64_t{0}), sub(full_like(nans, n), nans), position);
  }
  return pick(values, indices, d, position, keepdim);
}

Tensor median(const Tensor& x) {
  RCUDA_CHECK(x.numel() > 0, ValueError, "median: expected a non-empty tensor, got shape ",
              shape_str(x.shape()));
  return median(reshape(x, {x.numel()}), 0, false).first;
}

std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t dim, bool keepdim) {
  if (reduces_scalar("mode", x, dim)) return sort_along("mode", x, dim, false);
  const int64_t d = wrap_dim(dim, x.dim(), "mode");
  const int64_t n = x.shape()[d];
  auto [values, indices] = sorted_rows(x, d, false);  // [rows, n]
  // Runs of equal values: count[j] = j - (start of j's run) + 1. The first position where the
  // count peaks ends the smallest of the most frequent values; stable sorting puts the last
  // occurrence of that value there.
  const TensorOptions long_options(DType::Int64, x.device());
  const Tensor positions = arange(0, n, 1, DType::Int64, x.device()).view({1, n});
  Tensor starts = ones(values.shape(), TensorOptions(DType::Bool, x.device()));
  if (n > 1)
    copy_(starts.narrow(1, 1, n - 1), ne(values.narrow(1, 1, n - 1), values.narrow(1, 0, n - 1)));
  const Tensor run_start =
      cummax(where(starts, positions.expand(values.shape()), int64_t{0}), 1).first;
  const Tensor count = sub(positions, run_start);
  const Tensor peak = argmax(count, 1, true);  // [rows, 1]
  const Tensor value = from_rows(gather(values, 1, peak), keepdim_shape(x, d), d);
  const Tensor index = from_rows(gather(indices, 1, peak), keepdim_shape(x, d), d);
  if (keepdim) return {value, index};
  return {contiguous(value.squeeze(d)), contiguous(index.squeeze(d))};
}

UniqueResult unique(const Tensor& x) {
  check_not_float8("unique", x);
  const TensorOptions long_options(DType::Int64, x.device());
  const int64_t n = x.numel();
  if (n == 0)
    return {reshape(x, {0}), new_empty(x.shape(), DType::Int64, x.device()),
            zeros({0}, long_options)};
  auto [values, order] = sorted_rows(reshape(x, {n}), 0, false);  // [1, n]
  values = values.view({n});
  order = order.view({n});
  Tensor starts = ones({n}, TensorOptions(DType::Bool, x.device()));
  if (n > 1)
    copy_(starts.narrow(0, 1, n - 1), ne(values.narrow(0, 1, n - 1), values.narrow(0, 0, n - 1)));
  const Tensor where_starts = nonzero(starts);  // [distinct, 1]
  const int64_t distinct = where_starts.shape()[0];
  const Tensor first = where_starts.view({distinct});  // where each distinct value starts
  const Tensor run_id = sub(cumsum(starts, 0), int64_t{1});
  const Tensor inverse = scatter(new_empty({n}, DType::Int64, x.device()), 0, order, run_id);
  const Tensor ends = cat({first.narrow(0, 1, distinct - 1), full({1}, n, long_options)}, 0);
  return {index_select(values, 0, first), reshape(inverse, x.shape()), sub(ends, first)};
}

Tensor randperm(int64_t n, TensorOptions options) {
  RCUDA_CHECK(n >= 0, ValueError, "randperm: n must be non-negative, got ", n);
  RCUDA_CHECK(options.dtype != DType::Bool && !is_float8(options.dtype), DTypeError,
              "randperm: dtype ", dtype_name(options.dtype), " cannot hold a permutation");
  // 62-bit keys: two draws tie with probability about n^2 / 2^63, and a tie only keeps the
  // positions' order (the sort is stable).
  const Tensor keys =
      randint(0, int64_t{1} << 62, {n}, TensorOptions(DType::Int64, options.device));
  const Tensor perm = n == 0 ? keys : argsort(keys, 0);
  return cast(perm, options.dtype);
}

Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool out_int32, bool right) {
  check_same_device("bucketize", {x, boundaries});
  check_not_float8("bucketize", x);
  RCUDA_CHECK(boundaries.dim() == 1, ShapeError,
              "bucketize: boundaries must be a 1-D tensor, got shape ",
              shape_str(boundaries.shape()));
  const Tensor column = x.unsqueeze(x.dim());
  const Tensor below = right ? le(boundaries, column) : lt(boundaries, column);
  return sum(below, {-1}, false, out_int32 ? DType::Int32 : DType::Int64);
}

Tensor histc(const Tensor& x, int64_t bins, double min, double max) {
  check_floating("histc", "input", x);
  RCUDA_CHECK(bins > 0, ValueError, "histc: bins must be > 0, got ", bins);
  RCUDA_CHECK(!(min > max), ValueError, "histc: max (", max, ") must be larger than min (", min,
              ")");
  RCUDA_CHECK(std::isfinite(min) && std::isfinite(max), ValueError, "histc: range of [", min, ", ",
              max, "] is not finite");
  if (min == max && x.numel() > 0) {
    min = item(ops::min(x)).to_double();
    max = item(ops::max(x)).to_double();
  }
  if (min == max) {
    min -= 1;
    max += 1;
  }
  const TensorOptions options(x.dtype(), x.device());
  Tensor counts = zeros({bins}, options);
  if (x.numel() == 0) return counts;
  const Tensor flat = reshape(x, {x.numel()});
  const Tensor inside = logical_and(ge(flat, min), le(flat, max));
  // As torch: the bin is computed in x's dtype; max falls in the last bin.
  const Tensor scaled = div(mul(sub(flat, min), static_cast<double>(bins)), max - min);
  const Tensor bin = cast(floor(where(inside, scaled, 0.0)), DType::Int64);
  const Tensor index = minimum(bin, full({1}, bins - 1, TensorOptions(DType::Int64, x.device())));
  return scatter_add(counts, 0, index, cast(inside, x.dtype()));
}

}  // namespace rcuda::ops
