// Views: new shape/strides/offset over the same storage. Bounds and shapes are checked here,
// with messages that name the op and the values.
#include <algorithm>
#include <utility>

#include "rcuda/core/error.h"
#include "rcuda/tensor/autograd_meta.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda {
namespace {

// Every view below ends here, so that autograd sees each one (Note [Views record through a
// hook] in autograd_meta.h).
Tensor make_view(const Tensor& base, Shape shape, Strides strides, int64_t offset,
                 const ViewSpec& spec) {
  Tensor v = base.alias(std::move(shape), std::move(strides), offset);
  v.impl()->is_view = true;
  return record_view(base, std::move(v), spec);
}

ViewSpec spec_of(ViewKind kind, int64_t dim0 = 0, int64_t dim1 = 0) {
  ViewSpec s;
  s.kind = kind;
  s.dim0 = dim0;
  s.dim1 = dim1;
  return s;
}

// A view that keeps shape and strides (t() of a vector, squeeze of a non-1 dim).
Tensor same_view(const Tensor& base) {
  return make_view(base, base.shape(), base.strides(), base.offset(), spec_of(ViewKind::View));
}

}  // namespace

Shape infer_size(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      RCUDA_CHECK(infer_at < 0, ShapeError, op, ": only one dimension can be -1, got ",
                  shape_str(shape));
      infer_at = static_cast<int64_t>(i);
    } else {
      RCUDA_CHECK(shape[i] >= 0, ShapeError, op, ": invalid size ", shape[i], " in ",
                  shape_str(shape));
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    RCUDA_CHECK(known != 0 && numel % known == 0, ShapeError, op, ": shape ", shape_str(shape),
                " is invalid for input of size ", numel);
    out[infer_at] = numel / known;
  } else {
    RCUDA_CHECK(known == numel, ShapeError, op, ": shape ", shape_str(shape),
                " is invalid for input of size ", numel);
  }
  return out;
}

// Splits the old dims into chunks that are contiguous among themselves and maps the new dims
// onto them, as ATen's computeStride: a view exists iff no new dim straddles two chunks.
bool compute_view_strides(const Shape& old_shape, const Strides& old_strides,
                          const Shape& new_shape, Strides* new_strides) {
  new_strides->assign(new_shape.size(), 0);
  if (old_shape.empty()) {
    std::fill(new_strides->begin(), new_strides->end(), 1);
    return true;
  }
  const int64_t n = numel(old_shape);
  if (n == 0) {
    *new_strides = contiguous_strides(new_shape);
    return true;
  }
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    const bool chunk_ends =
        d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      (*new_strides)[view_d] = view_numel * chunk_base_stride;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return false;
    if (d > 0) {
      chunk_base_stride = old_strides[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  return view_d == -1;
}

Tensor Tensor::as_strided(const Shape& shape, const Strides& strides, int64_t offset) const {
  RCUDA_CHECK(shape.size() == strides.size(), ShapeError, "as_strided: ", shape.size(),
              " sizes but ", strides.size(), " strides");
  checked_numel(shape, "as_strided");
  RCUDA_CHECK(offset >= 0, IndexError, "as_strided: negative offset ", offset);
  return make_view(*this, shape, strides, offset, spec_of(ViewKind::AsStrided));
}

Tensor Tensor::view(const Shape& shape) const {
  Shape target = infer_size(shape, numel(), "view");
  Strides strides;
  RCUDA_CHECK(compute_view_strides(impl_->shape, impl_->strides, target, &strides), ShapeError,
              "view: size ", shape_str(target), " is not compatible with the strides of a ",
              shape_str(impl_->shape), " tensor; use reshape (which copies) instead");
  return make_view(*this, std::move(target), std::move(strides), impl_->offset,
                   spec_of(ViewKind::View));
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  const int64_t n = dim();
  RCUDA_CHECK(static_cast<int64_t>(dims.size()) == n, ShapeError, "permute: got ", dims.size(),
              " dims for a tensor of ", n, " dims");
  Shape shape(n);
  Strides strides(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = wrap_dim(dims[i], n, "permute");
    RCUDA_CHECK(!seen[d], ShapeError, "permute: dim ", dims[i], " repeated in ", shape_str(dims));
    seen[d] = true;
    shape[i] = impl_->shape[d];
    strides[i] = impl_->strides[d];
  }
  ViewSpec spec = spec_of(ViewKind::Permute);
  spec.dims = dims;
  return make_view(*this, std::move(shape), std::move(strides), impl_->offset, spec);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  if (dim() == 0) return same_view(*this);
  const int64_t a = wrap_dim(dim0, dim(), "transpose"), b = wrap_dim(dim1, dim(), "transpose");
  Shape shape = impl_->shape;
  Strides strides = impl_->strides;
  std::swap(shape[a], shape[b]);
  std::swap(strides[a], strides[b]);
  return make_view(*this, std::move(shape), std::move(strides), impl_->offset,
                   spec_of(ViewKind::Transpose, a, b));
}

Tensor Tensor::t() const {
  RCUDA_CHECK(dim() <= 2, ShapeError, "t: expects a tensor of at most 2 dims, got ", dim(),
              " dims (use transpose or permute)");
  return dim() < 2 ? same_view(*this) : transpose(0, 1);
}

Tensor Tensor::slice(int64_t dim_, int64_t start, int64_t end, int64_t step) const {
  const int64_t d = wrap_dim(dim_, dim(), "slice");
  RCUDA_CHECK(step > 0, ValueError, "slice: step must be positive, got ", step);
  const int64_t size = impl_->shape[d];
  auto clamp_index = [size](int64_t i) {
    if (i < 0) i += size;
    return std::min(std::max<int64_t>(i, 0), size);
  };
  start = clamp_index(start);
  end = std::max(clamp_index(end), start);
  Shape shape = impl_->shape;
  Strides strides = impl_->strides;
  shape[d] = (end - start + step - 1) / step;
  strides[d] = impl_->strides[d] * step;
  ViewSpec spec = spec_of(ViewKind::Slice, d);
  spec.start = start;
  spec.end = end;
  spec.step = step;
  return make_view(*this, std::move(shape), std::move(strides),
                   impl_->offset + start * impl_->strides[d], spec);
}

Tensor Tensor::select(int64_t dim_, int64_t index) const {
  RCUDA_CHECK(dim() > 0, IndexError, "select: cannot select from a 0-dim tensor");
  const int64_t d = wrap_dim(dim_, dim(), "select");
  const int64_t size = impl_->shape[d];
  RCUDA_CHECK(index >= -size && index < size, IndexError, "select: index ", index,
              " out of range for dim ", d, " of size ", size);
  if (index < 0) index += size;
  Shape shape = impl_->shape;
  Strides strides = impl_->strides;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  ViewSpec spec = spec_of(ViewKind::Select, d);
  spec.start = index;
  return make_view(*this, std::move(shape), std::move(strides),
                   impl_->offset + index * impl_->strides[d], spec);
}

Tensor Tensor::narrow(int64_t dim_, int64_t start, int64_t length) const {
  RCUDA_CHECK(dim() > 0, IndexError, "narrow: cannot narrow a 0-dim tensor");
  const int64_t d = wrap_dim(dim_, dim(), "narrow");
  const int64_t size = impl_->shape[d];
  if (start < 0) start += size;
  RCUDA_CHECK(start >= 0 && length >= 0 && start + length <= size, IndexError, "narrow: start ",
              start, " and length ", length, " out of range for dim ", d, " of size ", size);
  return slice(d, start, start + length, 1);
}

Tensor Tensor::expand(const Shape& shape) const {
  const int64_t n = static_cast<int64_t>(shape.size());
  RCUDA_CHECK(n >= dim(), ShapeError, "expand: the number of sizes (", n,
              ") must be at least the tensor's dims (", dim(), ")");
  Shape out_shape(n);
  Strides out_strides(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t j = i - (n - dim());
    const int64_t have = j >= 0 ? impl_->shape[j] : 1;
    int64_t want = shape[i];
    if (want == -1) {
      RCUDA_CHECK(j >= 0, ShapeError, "expand: -1 not allowed for the new leading dim ", i);
      want = have;
    }
    RCUDA_CHECK(want >= 0, ShapeError, "expand: invalid size ", want);
    RCUDA_CHECK(have == want || have == 1, ShapeError, "expand: the size ", have,
                " of the tensor must match the size ", want, " at dim ", i, " (shape ",
                shape_str(impl_->shape), " to ", shape_str(shape), ")");
    out_shape[i] = want;
    out_strides[i] = (j >= 0 && have == want) ? impl_->strides[j] : 0;
  }
  return make_view(*this, std::move(out_shape), std::move(out_strides), impl_->offset,
                   spec_of(ViewKind::Expand));
}

Tensor Tensor::squeeze() const {
  Shape shape;
  Strides strides;
  for (int64_t i = 0; i < dim(); ++i) {
    if (impl_->shape[i] == 1) continue;
    shape.push_back(impl_->shape[i]);
    strides.push_back(impl_->strides[i]);
  }
  return make_view(*this, std::move(shape), std::move(strides), impl_->offset,
                   spec_of(ViewKind::View));
}

Tensor Tensor::squeeze(int64_t dim_) const {
  if (dim() == 0) return same_view(*this);
  const int64_t d = wrap_dim(dim_, dim(), "squeeze");
  if (impl_->shape[d] != 1) return same_view(*this);
  Shape shape = impl_->shape;
  Strides strides = impl_->strides;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return make_view(*this, std::move(shape), std::move(strides), impl_->offset,
                   spec_of(ViewKind::View));
}

Tensor Tensor::unsqueeze(int64_t dim_) const {
  const int64_t d = wrap_dim(dim_, dim() + 1, "unsqueeze");
  Shape shape = impl_->shape;
  Strides strides = impl_->strides;
  const int64_t stride = d < dim() ? impl_->shape[d] * impl_->strides[d] : 1;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return make_view(*this, std::move(shape), std::move(strides), impl_->offset,
                   spec_of(ViewKind::View));
}

Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  RCUDA_CHECK(dim() >= 2, ShapeError, "diagonal: expects at least 2 dims, got ", dim());
  const int64_t a = wrap_dim(dim1, dim(), "diagonal"), b = wrap_dim(dim2, dim(), "diagonal");
  RCUDA_CHECK(a != b, ShapeError, "diagonal: dim1 and dim2 are both ", a);
  int64_t start = impl_->offset, length;
  if (offset >= 0) {
    length = std::max<int64_t>(std::min(impl_->shape[a], impl_->shape[b] - offset), 0);
    start += length > 0 ? offset * impl_->strides[b] : 0;
  } else {
    length = std::max<int64_t>(std::min(impl_->shape[a] + offset, impl_->shape[b]), 0);
    start -= length > 0 ? offset * impl_->strides[a] : 0;
  }
  Shape shape;
  Strides strides;
  for (int64_t i = 0; i < dim(); ++i) {
    if (i == a || i == b) continue;
    shape.push_back(impl_->shape[i]);
    strides.push_back(impl_->strides[i]);
  }
  shape.push_back(length);
  strides.push_back(impl_->strides[a] + impl_->strides[b]);
  ViewSpec spec = spec_of(ViewKind::Diagonal, a, b);
  spec.start = offset;
  return make_view(*this, std::move(shape), std::move(strides), start, spec);
}

}  // namespace rcuda
