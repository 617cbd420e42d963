// Joining, splitting and indexing: cat, stack, split, chunk, index_select, gather, scatter, masked
// ops, nonzero, one_hot. Checks and output shapes live here; the data movement is the backend's
// copy, where, index_select, gather, scatter and nonzero primitives.
#include "rcuda/ops/indexing.h"

#include <algorithm>

#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::ops {
namespace {

void check_index_dtype(const char* op, const Tensor& index) {
  RCUDA_CHECK(index.dtype() == DType::Int64, DTypeError, op, ": index must be int64, got ",
              dtype_name(index.dtype()), " (convert with to(int64))");
}

void check_mask_dtype(const char* op, const Tensor& mask) {
  RCUDA_CHECK(mask.dtype() == DType::Bool, DTypeError, op, ": mask must be bool, got ",
              dtype_name(mask.dtype()));
}

void check_same_device(const char* op, const std::vector<Tensor>& tensors) {
  for (size_t i = 1; i < tensors.size(); ++i)
    RCUDA_CHECK(tensors[i].device() == tensors[0].device(), DeviceError, op,
                ": expected all tensors on one device, got ", tensors[0].device().str(),
                " (tensor 0) and ", tensors[i].device().str(), " (tensor ", i, ")");
}

// torch treats a 0-dim tensor as one of shape [1] in gather and scatter.
int64_t dims_at_least_one(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
int64_t size_or_one(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }
Tensor as_1d_if_scalar(const Tensor& t) { return t.dim() == 0 ? t.unsqueeze(0) : t; }

// The shapes gather and scatter accept: index has x's number of dims and fits in x outside dim (and
// wholly in src, when there is one).
void check_index_shape(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                       const Tensor* src) {
  RCUDA_CHECK(dims_at_least_one(index) == dims_at_least_one(x), ShapeError, op,
              ": index must have as many dims as the input, got index ", shape_str(index.shape()),
              " and input ", shape_str(x.shape()));
  if (src != nullptr)
    RCUDA_CHECK(dims_at_least_one(index) == dims_at_least_one(*src), ShapeError, op,
                ": index must have as many dims as src, got index ", shape_str(index.shape()),
                " and src ", shape_str(src->shape()));
  for (int64_t d = 0; d < dims_at_least_one(index); ++d) {
    RCUDA_CHECK(d == dim || size_or_one(index, d) <= size_or_one(x, d), ShapeError, op, ": index ",
                shape_str(index.shape()), " is larger than the input ", shape_str(x.shape()),
                " at dim ", d, " (only dim ", dim, " may be larger)");
    RCUDA_CHECK(src == nullptr || size_or_one(index, d) <= size_or_one(*src, d), ShapeError, op,
                ": index ", shape_str(index.shape()), " is larger than src ",
                shape_str(src->shape()), " at dim ", d);
  }
}

// scatter and scatter_add: a copy of x, then the primitive; src_view already has index's shape.
Tensor scatter_copy(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src_view,
                    bool accumulate) {
  Tensor out = clone(x);
  if (index.numel() > 0)
    ops::backend_of(out).scatter(as_1d_if_scalar(out), dim, as_1d_if_scalar(index),
                                 as_1d_if_scalar(src_view), accumulate);
  return out;
}

Tensor scatter_tensor(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                      const Tensor& src, bool accumulate) {
  check_index_dtype(op, index);
  ops::check_same_device(op, {x, index, src});
  RCUDA_CHECK(src.dtype() == x.dtype(), DTypeError, op, ": src must have the input's dtype ",
              dtype_name(x.dtype()), ", got ", dtype_name(src.dtype()));
  const int64_t d = wrap_dim(dim, x.dim(), op);
  check_index_shape(op, x, d, index, &src);
  // The primitive reads src through index's shape; src may be larger, as torch allows.
  Tensor src_view = as_1d_if_scalar(src);
  const Tensor index_1d = as_1d_if_scalar(index);
  for (int64_t k = 0; k < src_view.dim(); ++k) src_view = src_view.narrow(k, 0, index_1d.size(k));
  return scatter_copy(x, d, index, src_view, accumulate);
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  RCUDA_CHECK(!tensors.empty(), ValueError, "cat: expected a non-empty list of tensors");
  check_same_device("cat", tensors);
  // Every tensor has dims (0-dim ones are refused below), so torch's result_type reduces to
  // promote_types over all of them, skipped empty ones included, as torch.
  DType dtype = tensors[0].dtype();
  for (const Tensor& t : tensors) dtype = promote_types(dtype, t.dtype());

  // torch skips 1-D empty tensors whatever the others' shapes (legacy behaviour kept there).
  std::vector<size_t> joined;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    RCUDA_CHECK(t.dim() > 0, ShapeError, "cat: zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
    if (!(t.dim() == 1 && t.numel() == 0)) joined.push_back(i);
  }
  if (joined.empty()) return Tensor::empty({0}, dtype, tensors[0].device());

  const Tensor& first = tensors[joined[0]];
  const int64_t d = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  shape[d] = 0;
  for (size_t i : joined) {
    const Tensor& t = tensors[i];
    bool match = t.dim() == first.dim();
    for (int64_t k = 0; match && k < t.dim(); ++k) match = k == d || t.size(k) == first.size(k);
    RCUDA_CHECK(match, ShapeError, "cat: sizes of tensors must match except in dim ", d,
                ": tensor ", joined[0], " has ", shape_str(first.shape()), ", tensor ", i, " has ",
                shape_str(t.shape()));
    shape[d] += t.size(d);
  }

  Tensor out = Tensor::empty(shape, dtype, first.device());
  // Contiguous inputs of the result's dtype (the usual case) are joined by one backend call,
  // which on CUDA is one launch for up to 64 of them (Note [Batched cat]); others are copied
  // one by one, converting and following their strides.
  std::vector<Tensor> parts;
  bool whole_runs = true;
  for (size_t i : joined) {
    const Tensor& t = tensors[i];
    whole_runs = whole_runs && t.dtype() == dtype && t.is_contiguous();
    if (t.numel() > 0) parts.push_back(t);
  }
  if (whole_runs) {
    if (!parts.empty()) ops::backend_of(out).cat(out, parts, d);
    return out;
  }
  int64_t offset = 0;
  for (size_t i : joined) {
    const Tensor& t = tensors[i];
    copy_(out.narrow(d, offset, t.size(d)), t);
    offset += t.size(d);
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  RCUDA_CHECK(!tensors.empty(), ValueError, "stack: expected a non-empty list of tensors");
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> unsqueezed;
  unsqueezed.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    RCUDA_CHECK(tensors[i].shape() == tensors[0].shape(), ShapeError,
                "stack: expects each tensor to be equal size, but got ",
                shape_str(tensors[0].shape()), " at entry 0 and ", shape_str(tensors[i].shape()),
                " at entry ", i);
    unsqueezed.push_back(tensors[i].unsqueeze(d));
  }
  return cat(unsqueezed, d);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  RCUDA_CHECK(x.dim() > 0, ShapeError, "split: expects a tensor with at least one dim");
  const int64_t d = wrap_dim(dim, x.dim(), "split");
  const int64_t size = x.size(d);
  RCUDA_CHECK(split_size > 0 || (split_size == 0 && size == 0), ValueError,
              "split: split_size must be positive, got ", split_size, " for dim ", d, " of size ",
              size);
  // An empty dim still gives one (empty) piece, as torch.
  const int64_t pieces = std::max<int64_t>(
      (size + std::max<int64_t>(split_size, 1) - 1) / std::max<int64_t>(split_size, 1), 1);
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(pieces));
  for (int64_t i = 0; i < pieces; ++i) {
    const int64_t start = i * split_size;
    out.push_back(x.narrow(d, start, std::min(split_size, size - start)));
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  RCUDA_CHECK(x.dim() > 0, ShapeError, "split: expects a tensor with at least one dim");
  const int64_t d = wrap_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    RCUDA_CHECK(s >= 0, ValueError, "split: sizes must be non-negative, got ", shape_str(sizes));
    total += s;
  }
  RCUDA_CHECK(total == x.size(d), ShapeError, "split: sizes ", shape_str(sizes), " sum to ", total,
              " but dim ", d, " has size ", x.size(d));
  std::vector<Tensor> out;
  out.reserve(sizes.size());
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(x.narrow(d, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  RCUDA_CHECK(x.dim() > 0, ShapeError, "chunk: expects a tensor with at least one dim");
  RCUDA_CHECK(chunks > 0, ValueError, "chunk: chunks must be positive, got ", chunks);
  const int64_t d = wrap_dim(dim, x.dim(), "chunk");
  const int64_t size = x.size(d);
  // torch's rule: pieces of ceil(size / chunks), so fewer than `chunks` may come back; an empty dim
  // gives `chunks` empty pieces.
  if (size == 0) return split(x, std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  return split(x, (size + chunks - 1) / chunks, d);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  check_index_dtype("index_select", index);
  ops::check_same_device("index_select", {x, index});
  RCUDA_CHECK(index.dim() <= 1, ShapeError, "index_select: index must be 0-D or 1-D, got ",
              shape_str(index.shape()));
  const int64_t d = wrap_dim(dim, x.dim(), "index_select");
  RCUDA_CHECK(x.dim() > 0 || index.numel() == 1, IndexError,
              "index_select: a 0-dim input takes exactly one index, got ", index.numel());
  Shape shape = x.shape();
  if (x.dim() > 0) shape[d] = index.numel();
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  if (out.numel() > 0)
    ops::backend_of(x).index_select(as_1d_if_scalar(out), as_1d_if_scalar(x), d,
                                    as_1d_if_scalar(index));
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  check_index_dtype("gather", index);
  ops::check_same_device("gather", {x, index});
  const int64_t d = wrap_dim(dim, x.dim(), "gather");
  check_index_shape("gather", x, d, index, nullptr);
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device());
  if (out.numel() > 0)
    ops::backend_of(x).gather(as_1d_if_scalar(out), as_1d_if_scalar(x), d, as_1d_if_scalar(index));
  return out;
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_tensor("scatter", x, dim, index, src, false);
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_tensor("scatter_add", x, dim, index, src, true);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  check_index_dtype("scatter", index);
  ops::check_same_device("scatter", {x, index});
  const int64_t d = wrap_dim(dim, x.dim(), "scatter");
  check_index_shape("scatter", x, d, index, nullptr);
  // One element, cast to x's dtype, read through index's shape by zero strides.
  const Tensor value_view = scalar_tensor(value, x.dtype(), x.device()).expand(index.shape());
  return scatter_copy(x, d, index, value_view, false);
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  check_mask_dtype("masked_fill", mask);
  ops::check_same_device("masked_fill", {x, mask});
  RCUDA_CHECK(broadcast_shapes(x.shape(), mask.shape(), "masked_fill") == x.shape(), ShapeError,
              "masked_fill: mask ", shape_str(mask.shape()),
              " must broadcast to the input's shape ", shape_str(x.shape()));
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  const Tensor fill_value = scalar_tensor(value, x.dtype(), x.device()).expand(x.shape());
  ops::backend_of(x).where(out, mask.expand(x.shape()), fill_value, x);
  return out;
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  check_mask_dtype("masked_select", mask);
  ops::check_same_device("masked_select", {x, mask});
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  // Row-major positions of the true elements of the flattened mask pick from flattened x.
  const Tensor flat_x = reshape(x.expand(shape), {-1});
  const Tensor flat_mask = reshape(mask.expand(shape), {-1});
  Backend& backend = ops::backend_of(x);
  const Tensor positions = backend.nonzero(flat_mask).select(1, 0);
  Tensor out = Tensor::empty({positions.numel()}, x.dtype(), x.device());
  if (out.numel() > 0) backend.index_select(out, flat_x, 0, positions);
  return out;
}

Tensor nonzero(const Tensor& x) { return ops::backend_of(x).nonzero(x); }

Tensor one_hot(const Tensor& x, int64_t num_classes) {
  RCUDA_CHECK(x.dtype() == DType::Int64, DTypeError,
              "one_hot: expects an int64 tensor of class indices, got ", dtype_name(x.dtype()));
  RCUDA_CHECK(num_classes >= -1, ValueError,
              "one_hot: num_classes must be -1 or non-negative, got ", num_classes);
  if (x.numel() == 0) {
    RCUDA_CHECK(num_classes >= 0, ValueError,
                "one_hot: cannot infer num_classes from an empty tensor; pass it");
  } else {
    const int64_t smallest = item(min(x)).to_int(), largest = item(max(x)).to_int();
    RCUDA_CHECK(smallest >= 0, IndexError, "one_hot: class values must be non-negative, got ",
                smallest);
    if (num_classes == -1) num_classes = largest + 1;
    RCUDA_CHECK(largest < num_classes, IndexError, "one_hot: class value ", largest,
                " is out of range for num_classes ", num_classes);
  }
  Shape shape = x.shape();
  shape.push_back(num_classes);
  Tensor out = zeros(shape, {DType::Int64, x.device()});
  if (x.numel() == 0) return out;
  // Writes a 1 at each class index along the new last dim.
  const Tensor index = x.unsqueeze(-1);
  const Tensor ones_view = scalar_tensor(1, DType::Int64, x.device()).expand(index.shape());
  ops::backend_of(x).scatter(out, x.dim(), index, ones_view, false);
  return out;
}

}  // namespace rcuda::ops
