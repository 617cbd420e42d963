// self[indices] = values (Note [Index lists] in rcuda/ops/indexing.h). The index list becomes
// one int64 tensor of row-major positions in self, in the selection's shape, built from the
// elementwise ops (each indexed dim's positions times its row-major stride, plus an arange for
// each whole dim, broadcast together); then one scatter primitive writes values there.
#include <algorithm>

#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/indexing.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::ops {
namespace {

constexpr const char* kOp = "index_put_";

// One int64 tensor (or none: a whole dim) per dim of self, masks turned into their true
// elements' coordinates, each checked against its dim and wrapped into [0, size).
std::vector<Tensor> per_dim_indices(const Tensor& self, const IndexList& indices) {
  std::vector<Tensor> per_dim;
  for (size_t k = 0; k < indices.size(); ++k) {
    const int64_t d = static_cast<int64_t>(per_dim.size());
    if (!indices[k]) {
      RCUDA_CHECK(d < self.dim(), IndexError, kOp, ": too many indices for a tensor of ",
                  self.dim(), " dims (indices[", k, "] indexes dim ", d, ")");
      per_dim.emplace_back();
      continue;
    }
    const Tensor& index = *indices[k];
    RCUDA_CHECK(index.defined(), ValueError, kOp, ": indices[", k,
                "] holds an undefined tensor (use std::nullopt for a whole dim)");
    RCUDA_CHECK(index.dtype() == DType::Int64 || index.dtype() == DType::Bool, DTypeError, kOp,
                ": indices[", k, "] must be int64 or bool, got ", dtype_name(index.dtype()));
    check_same_device(kOp, {self, index});
    if (index.dtype() == DType::Bool) {
      RCUDA_CHECK(index.dim() > 0, IndexError, kOp, ": indices[", k,
                  "] is a 0-d bool mask; a mask needs as many dims as it indexes");
      RCUDA_CHECK(d + index.dim() <= self.dim(), IndexError, kOp,
                  ": too many indices for a tensor of ", self.dim(), " dims (the mask indices[", k,
                  "] of shape ", shape_str(index.shape()), " starts at dim ", d, ")");
      const Shape covered(self.shape().begin() + d, self.shape().begin() + d + index.dim());
      RCUDA_CHECK(index.shape() == covered, IndexError, kOp, ": the mask indices[", k,
                  "] has shape ", shape_str(index.shape()), " but dims ", d, " to ",
                  d + index.dim() - 1, " of self have sizes ", shape_str(covered));
      const Tensor coords = nonzero(index);  // [count, index.dim()], each in range
      for (int64_t j = 0; j < index.dim(); ++j) per_dim.push_back(coords.select(1, j));
      continue;
    }
    RCUDA_CHECK(d < self.dim(), IndexError, kOp, ": too many indices for a tensor of ", self.dim(),
                " dims (indices[", k, "] indexes dim ", d, ")");
    const int64_t size = self.size(d);
    Tensor wrapped = index;
    if (index.numel() > 0) {
      const int64_t lowest = item(min(index)).to_int(), highest = item(max(index)).to_int();
      const int64_t bad = lowest < -size ? lowest : highest;
      RCUDA_CHECK(lowest >= -size && highest < size, IndexError, kOp, ": index ", bad,
                  " is out of range for dim ", d, " of size ", size, " (indices[", k, "])");
      if (lowest < 0) wrapped = remainder(index, Scalar(size));
    }
    per_dim.push_back(wrapped);
  }
  return per_dim;
}

// acc = broadcast of acc and next; false (acc unchanged) when they do not broadcast.
bool broadcast_into(Shape& acc, const Shape& next) {
  const size_t n = std::max(acc.size(), next.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = i + acc.size() < n ? 1 : acc[i + acc.size() - n];
    const int64_t b = i + next.size() < n ? 1 : next[i + next.size() - n];
    if (a != b && a != 1 && b != 1) return false;
    out[i] = a == 1 ? b : a;
  }
  acc = std::move(out);
  return true;
}

// True when `from` broadcasts to `to` without changing it.
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

void check_values_shape(const char* op, const Tensor& values, const Shape& selection) {
  RCUDA_CHECK(broadcasts_to(values.shape(), selection), ShapeError, op, ": values of shape ",
              shape_str(values.shape()), " cannot be broadcast to the selection's shape ",
              shape_str(selection));
}

// An expanded tensor (stride 0 over a dim of several elements) has no one place per element.
void check_writable(const char* op, const Tensor& self) {
  for (int64_t d = 0; d < self.dim(); ++d)
    RCUDA_CHECK(self.stride(d) != 0 || self.size(d) <= 1, ValueError, op,
                ": self is expanded (stride 0 at dim ", d, " of size ", self.size(d),
                "), so several of its elements share one memory location; write into a copy "
                "(contiguous())");
}

// Shape [1] * before + shape + [1] * after, from the right-aligned `shape` padded to `width`.
Shape placed(const Shape& shape, size_t before, size_t width, size_t after) {
  Shape out(before, 1);
  out.insert(out.end(), width - shape.size(), 1);
  out.insert(out.end(), shape.begin(), shape.end());
  out.insert(out.end(), after, 1);
  return out;
}

}  // namespace

namespace {

Tensor positions_of(const Tensor& self, const IndexList& indices) {
  // The common x[mask] with a mask over every dim: its true elements' row-major positions.
  if (indices.size() == 1 && indices[0] && indices[0]->defined() &&
      indices[0]->dtype() == DType::Bool && self.dim() > 0 && indices[0]->dim() == self.dim() &&
      indices[0]->shape() == self.shape() && indices[0]->device() == self.device())
    return contiguous(nonzero(reshape(*indices[0], {-1})).select(1, 0));

  std::vector<Tensor> per_dim = per_dim_indices(self, indices);
  per_dim.resize(static_cast<size_t>(self.dim()));  // the dims after the last entry are whole
  const int64_t ndim = self.dim();
  int64_t first = -1, last = -1;
  Shape broadcast;
  bool any_indexed = false;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!per_dim[d].defined()) continue;
    if (first < 0) first = d;
    last = d;
    const Shape& shape = per_dim[d].shape();
    if (any_indexed) {
      const bool joined = broadcast_into(broadcast, shape);
      RCUDA_CHECK(joined, IndexError, kOp, ": the indices cannot be broadcast together: shape ",
                  shape_str(shape), " at dim ", d, " against ", shape_str(broadcast), " before it");
    } else {
      broadcast = shape;
    }
    any_indexed = true;
  }
  bool adjacent = true;
  for (int64_t d = first; any_indexed && d <= last; ++d)
    adjacent = adjacent && per_dim[d].defined();

  // The selection: whole dims in order, with the broadcast shape where the indexed dims were
  // (adjacent) or in front.
  const size_t before = any_indexed && adjacent ? static_cast<size_t>(first) : 0;
  Shape selection(self.shape().begin(), self.shape().begin() + static_cast<int64_t>(before));
  std::vector<size_t> whole_at(static_cast<size_t>(ndim), 0);  // a whole dim's place in it
  for (int64_t d = 0; d < static_cast<int64_t>(before); ++d) whole_at[d] = static_cast<size_t>(d);
  selection.insert(selection.end(), broadcast.begin(), broadcast.end());
  for (int64_t d = static_cast<int64_t>(before); d < ndim; ++d) {
    if (per_dim[d].defined()) continue;
    whole_at[d] = selection.size();
    selection.push_back(self.size(d));
  }

  const TensorOptions longs(DType::Int64, self.device());
  if (numel(selection) == 0) return empty(selection, longs);
  int64_t row_major_stride = 1;
  Tensor positions;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    Tensor term;
    Shape shape;
    if (per_dim[d].defined()) {
      term = per_dim[d];
      shape = placed(term.shape(), before, broadcast.size(),
                     selection.size() - before - broadcast.size());
    } else {
      term = arange(0, self.size(d), 1, DType::Int64, self.device());
      shape = placed(term.shape(), whole_at[d], 1, selection.size() - whole_at[d] - 1);
    }
    if (row_major_stride != 1) term = mul(term, Scalar(row_major_stride));
    term = reshape(term, shape);
    positions = positions.defined() ? add(positions, term) : term;
    row_major_stride *= self.size(d);
  }
  if (!positions.defined()) return scalar_tensor(0, DType::Int64, self.device());  // 0-d self
  if (positions.shape() == selection) return positions;
  return contiguous(positions.expand(selection));  // a 0-d index on a 1-d tensor, say
}

}  // namespace

Tensor index_put_positions(const Tensor& self, const IndexList& indices, const Tensor& values) {
  RCUDA_CHECK(self.defined() && values.defined(), ValueError, kOp,
              ": self and values must be defined tensors");
  RCUDA_CHECK(values.dtype() == self.dtype(), DTypeError, kOp, ": values must have self's dtype ",
              dtype_name(self.dtype()), ", got ", dtype_name(values.dtype()),
              " (convert them with to())");
  check_same_device(kOp, {self, values});
  check_not_float8(kOp, self);
  check_writable(kOp, self);
  Tensor positions = positions_of(self, indices);
  check_values_shape(kOp, values, positions.shape());
  return positions;
}

const Tensor& put_(const Tensor& self, const Tensor& positions, const Tensor& values,
                   bool accumulate) {
  const char* op = "put_";
  RCUDA_CHECK(positions.defined() && values.defined(), ValueError, op,
              ": positions and values must be defined tensors");
  RCUDA_CHECK(positions.dtype() == DType::Int64, DTypeError, op, ": positions must be int64, got ",
              dtype_name(positions.dtype()));
  RCUDA_CHECK(values.dtype() == self.dtype(), DTypeError, op, ": values must have self's dtype ",
              dtype_name(self.dtype()), ", got ", dtype_name(values.dtype()),
              " (convert them with to())");
  check_same_device(op, {self, positions, values});
  check_not_float8(op, self);
  check_writable(op, self);
  check_values_shape(op, values, positions.shape());
  const int64_t count = positions.numel();
  if (count == 0) {
    self.storage()->bump_version();  // an in-place op, as torch's, even when it writes nothing
    return self;
  }

  // Reading what is being written would make the result depend on the order of the writes.
  const bool overlaps = values.storage() == self.storage();
  Tensor source = overlaps ? clone(values) : values;
  source = source.numel() == 1 ? reshape(source, {1}).expand({count})
                               : reshape(source.expand(positions.shape()), {-1});
  const Tensor flat_positions = positions.storage() == self.storage()
                                    ? reshape(clone(positions), {-1})
                                    : reshape(positions, {-1});
  // The primitive writes a 1-D tensor: self itself when contiguous, else a copy written back.
  const Tensor target = self.is_contiguous() ? self : contiguous(self);
  const Tensor flat = target.view({target.numel()});
  backend_of(self).scatter(flat, 0, flat_positions, source, accumulate);
  if (target.is_same(self)) {
    self.storage()->bump_version();  // Note [Version counter] in rcuda/tensor/storage.h
  } else {
    copy_(self, target);
  }
  return self;
}

const Tensor& index_put_(const Tensor& self, const IndexList& indices, const Tensor& values,
                         bool accumulate) {
  return put_(self, index_put_positions(self, indices, values), values, accumulate);
}

}  // namespace rcuda::ops
