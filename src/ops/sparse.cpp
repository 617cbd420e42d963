// Sparse COO tensors (rcuda/ops/sparse.h, docs/sparse.md): checks, conversions, coalesce and the
// sparse-dense matrix product over Backend::sparse_mm.
//
// Note [Sparse ops by linear index]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every op but the product works on each entry's row-major position among the sparse dims,
// sum_d indices[d, i] * stride[d] (int64; sparse_coo_tensor refuses sizes whose product
// overflows). Then coalesce is `unique` of the positions plus an index_add_ of the values into
// one row per distinct position, to_dense an index_add_ into a [positions, dense...] block of
// zeros, and the gradient of to_dense an index_select. These are existing ops that run on both
// devices, so there is no sparse kernel to keep in step between the CPU and CUDA besides the
// product, which has a vendor routine (cuSPARSE) worth calling.
#include "rcuda/ops/sparse.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/indexing.h"
#include "rcuda/ops/nn.h"
#include "rcuda/ops/reduction.h"
#include "rcuda/ops/sorting.h"

namespace rcuda::ops {
namespace {

Shape sparse_sizes(const SparseCooTensor& x) {
  return Shape(x.size.begin(), x.size.begin() + x.sparse_dim());
}
Shape dense_sizes(const SparseCooTensor& x) {
  return Shape(x.size.begin() + x.sparse_dim(), x.size.end());
}

// Row-major strides of the sparse dims.
std::vector<int64_t> sparse_strides(const SparseCooTensor& x) {
  std::vector<int64_t> strides(static_cast<size_t>(x.sparse_dim()), 1);
  for (int64_t d = x.sparse_dim() - 2; d >= 0; --d)
    strides[static_cast<size_t>(d)] = strides[static_cast<size_t>(d + 1)] * x.size[d + 1];
  return strides;
}

// Each entry's position (Note [Sparse ops by linear index]): Int64 [nnz].
Tensor linear_index(const SparseCooTensor& x) {
  const std::vector<int64_t> strides = sparse_strides(x);
  Tensor position = x.indices.select(0, x.sparse_dim() - 1);
  for (int64_t d = x.sparse_dim() - 2; d >= 0; --d)
    position = add(position, mul(x.indices.select(0, d), Scalar(strides[static_cast<size_t>(d)])));
  return contiguous(position);
}

// [positions of the sparse dims, dense sizes...]: the shape to_dense fills.
Shape flat_shape(const SparseCooTensor& x) {
  Shape shape{numel(sparse_sizes(x))};
  const Shape dense = dense_sizes(x);
  shape.insert(shape.end(), dense.begin(), dense.end());
  return shape;
}

void check_size(const Tensor& indices_host, const Tensor& values, const Shape& size) {
  constexpr const char* kOp = "sparse_coo_tensor";
  const int64_t sparse_dim = indices_host.size(0), nnz = indices_host.size(1);
  const int64_t want = sparse_dim + values.dim() - 1;
  RCUDA_CHECK(static_cast<int64_t>(size.size()) == want, ShapeError, kOp, ": size ",
              shape_str(size), " must have ", want, " entries (", sparse_dim,
              " sparse dims from indices, ", values.dim() - 1, " dense dims from values)");
  for (int64_t d = 0; d < values.dim() - 1; ++d) {
    RCUDA_CHECK(size[sparse_dim + d] == values.size(d + 1), ShapeError, kOp, ": size ",
                shape_str(size), " does not match values of shape ", shape_str(values.shape()),
                " in dense dim ", sparse_dim + d);
  }
  int64_t product = 1;
  for (int64_t d = 0; d < sparse_dim; ++d) {
    RCUDA_CHECK(size[d] >= 0, ShapeError, kOp, ": size ", shape_str(size), " has a negative entry");
    RCUDA_CHECK(size[d] == 0 || product <= std::numeric_limits<int64_t>::max() / size[d],
                ShapeError, kOp, ": the sparse sizes of ", shape_str(size),
                " have more positions than int64 can count");
    product *= size[d];
  }
  const int64_t* idx = indices_host.data<int64_t>();
  for (int64_t d = 0; d < sparse_dim; ++d) {
    for (int64_t i = 0; i < nnz; ++i) {
      const int64_t v = idx[d * nnz + i];
      RCUDA_CHECK(v >= 0 && v < size[d], IndexError, kOp, ": indices[", d, ", ", i, "] = ", v,
                  " is out of range for size ", size[d], " of dim ", d, " (size ", shape_str(size),
                  ")");
    }
  }
}

void check_mm_operands(const char* op, const SparseCooTensor& a, const Tensor& b) {
  RCUDA_CHECK(a.defined() && b.defined(), ValueError, op, ": an operand is undefined");
  RCUDA_CHECK(a.sparse_dim() == 2 && a.dense_dim() == 0, ShapeError, op,
              ": the sparse operand must be a 2-D matrix with no dense dims, got size ",
              shape_str(a.size), " with ", a.sparse_dim(), " sparse and ", a.dense_dim(),
              " dense dims");
  RCUDA_CHECK(b.dim() == 2, ShapeError, op, ": the dense operand must be 2-D, got shape ",
              shape_str(b.shape()));
  RCUDA_CHECK(a.size[1] == b.size(0), ShapeError, op, ": shapes ", shape_str(a.size), " and ",
              shape_str(b.shape()), " cannot be multiplied (", a.size[1], " != ", b.size(0), ")");
  check_same_device(op, {a.values, b});
  RCUDA_CHECK(a.dtype() == b.dtype(), DTypeError, op,
              ": the sparse and dense operands must have one dtype, got ", dtype_name(a.dtype()),
              " and ", dtype_name(b.dtype()));
  RCUDA_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64, DTypeError, op,
              ": expected float32 or float64 operands, got ", dtype_name(a.dtype()));
}

// out = op(a) @ dense through the primitive; out must be [op(a) rows, k].
Tensor product(const SparseCooTensor& a, const Tensor& dense, int64_t out_rows, bool transpose) {
  const int64_t k = dense.size(1);
  if (a.nnz() == 0 || out_rows == 0 || k == 0)
    return zeros({out_rows, k}, {dense.dtype(), dense.device()});
  const SparseCooTensor c = coalesce(a);
  Tensor out = new_empty({out_rows, k}, dense.dtype(), dense.device());
  backend_of(dense).sparse_mm(out, contiguous(c.indices.select(0, 0)),
                              contiguous(c.indices.select(0, 1)), contiguous(c.values),
                              contiguous(dense), transpose);
  return out;
}

}  // namespace

SparseCooTensor sparse_coo_tensor(const Tensor& indices, const Tensor& values,
                                  std::optional<Shape> size) {
  constexpr const char* kOp = "sparse_coo_tensor";
  RCUDA_CHECK(indices.defined() && values.defined(), ValueError, kOp,
              ": indices and values must be tensors");
  RCUDA_CHECK(is_integral(indices.dtype(), false), DTypeError, kOp,
              ": indices must be integral (int64), got ", dtype_name(indices.dtype()));
  RCUDA_CHECK(indices.dim() == 2 && indices.size(0) >= 1, ShapeError, kOp,
              ": indices must be 2-D [sparse_dim, nnz] with sparse_dim >= 1, got shape ",
              shape_str(indices.shape()));
  RCUDA_CHECK(values.dim() >= 1 && values.size(0) == indices.size(1), ShapeError, kOp,
              ": values must have one row per column of indices (", indices.size(1),
              "), got shape ", shape_str(values.shape()));
  check_same_device(kOp, {indices, values});
  check_not_float8(kOp, values);

  SparseCooTensor x;
  x.indices = contiguous(cast(indices, DType::Int64));
  x.values = values;
  const Tensor host = x.indices.device().is_cpu() ? x.indices : to(x.indices, Device());
  if (size) {
    x.size = *size;
  } else {
    // Each sparse size is the largest index plus one; the dense sizes are values'.
    const int64_t sparse_dim = host.size(0), nnz = host.size(1);
    const int64_t* idx = host.data<int64_t>();
    for (int64_t d = 0; d < sparse_dim; ++d) {
      int64_t largest = -1;
      for (int64_t i = 0; i < nnz; ++i) largest = std::max(largest, idx[d * nnz + i]);
      x.size.push_back(largest + 1);
    }
    for (int64_t d = 1; d < values.dim(); ++d) x.size.push_back(values.size(d));
  }
  check_size(host, values, x.size);
  x.coalesced = x.nnz() <= 1;  // as torch: one entry or none is coalesced
  return x;
}

Tensor to_dense(const SparseCooTensor& x) {
  Tensor flat = zeros(flat_shape(x), {x.dtype(), x.device()});
  if (x.nnz() > 0 && flat.numel() > 0) index_add_(flat, 0, linear_index(x), x.values);
  return flat.view(x.size);
}

SparseCooTensor to_sparse(const Tensor& x, std::optional<int64_t> sparse_dim) {
  constexpr const char* kOp = "to_sparse";
  RCUDA_CHECK(x.defined(), ValueError, kOp, ": the tensor is undefined");
  RCUDA_CHECK(x.dim() >= 1, ShapeError, kOp, ": expected a tensor with at least 1 dim, got 0-dim");
  const int64_t sd = sparse_dim.value_or(x.dim());
  RCUDA_CHECK(sd >= 1 && sd <= x.dim(), IndexError, kOp, ": sparse_dim must be in [1, ", x.dim(),
              "] for a tensor of shape ", shape_str(x.shape()), ", got ", sd);
  check_not_float8(kOp, x);
  SparseCooTensor out;
  out.size = x.shape();
  const Shape sparse(x.shape().begin(), x.shape().begin() + sd);
  Shape block_shape = sparse;  // [sparse sizes..., elements of one dense block]
  block_shape.push_back(-1);
  // A position is kept when any element of its dense block is nonzero.
  Tensor keep = x.numel() == 0 ? zeros(sparse, {DType::Bool, x.device()})
                               : any(ne(reshape(x, block_shape), Scalar(0)), {-1});
  out.indices = contiguous(nonzero(keep).t());
  Shape flat{numel(sparse)};
  flat.insert(flat.end(), x.shape().begin() + sd, x.shape().end());
  out.values = index_select(reshape(x, flat), 0, linear_index(out));
  out.coalesced = true;  // nonzero lists positions in row-major order
  return out;
}

SparseCooTensor coalesce(const SparseCooTensor& x) {
  if (x.coalesced) return x;
  SparseCooTensor out = x;
  out.coalesced = true;
  if (x.nnz() == 0) return out;
  const UniqueResult distinct = unique(linear_index(x));
  const int64_t count = distinct.values.numel();
  Shape values_shape = x.values.shape();
  values_shape[0] = count;
  out.values = zeros(values_shape, {x.dtype(), x.device()});
  index_add_(out.values, 0, distinct.inverse, x.values);
  // Back from positions to one index per sparse dim.
  const std::vector<int64_t> strides = sparse_strides(x);
  std::vector<Tensor> rows;
  for (int64_t d = 0; d < x.sparse_dim(); ++d) {
    Tensor row = floor_divide(distinct.values, Scalar(strides[static_cast<size_t>(d)]));
    rows.push_back(d == 0 ? row : remainder(row, Scalar(x.size[d])));
  }
  out.indices = stack(rows, 0);
  return out;
}

SparseCooTensor to(const SparseCooTensor& x, Device device, DType dtype) {
  SparseCooTensor out = x;
  out.indices = to(x.indices, device);
  out.values = to(x.values, device, dtype);
  return out;
}

Tensor sparse_mm(const SparseCooTensor& a, const Tensor& b) {
  check_mm_operands("sparse_mm", a, b);
  return product(a, b, a.size[0], false);
}

Tensor sparse_mm_backward_dense(const SparseCooTensor& a, const Tensor& grad) {
  return product(a, grad, a.size[1], true);
}

Tensor sparse_mm_backward_values(const SparseCooTensor& a, const Tensor& b, const Tensor& grad) {
  if (a.nnz() == 0) return zeros({0}, {grad.dtype(), grad.device()});
  const Tensor rows = index_select(grad, 0, a.indices.select(0, 0));
  const Tensor cols = index_select(b, 0, a.indices.select(0, 1));
  return sum(mul(rows, cols), {1});
}

Tensor to_dense_backward_values(const SparseCooTensor& x, const Tensor& grad) {
  if (x.nnz() == 0) return zeros(x.values.shape(), {grad.dtype(), grad.device()});
  return index_select(reshape(grad, flat_shape(x)), 0, linear_index(x));
}

}  // namespace rcuda::ops
