// Conversions, shapes, views, joining and indexing.
#include "io/onnx/mappings.h"

namespace rcuda::io::onnx_export {
namespace {

std::vector<int64_t> dims_of(Builder& b, const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(b.dim(d, rank));
  return out;
}

// An index tensor as Gather takes it (int32 or int64).
std::string index_input(Builder& b, size_t i) {
  const DType dtype = b.in_value(i).dtype;
  return dtype == DType::Int32 || dtype == DType::Int64 ? b.in(i) : b.in_as(i, DType::Int64);
}

}  // namespace

// The device is not part of an ONNX model: the runtime decides where it runs.
void to(Builder& b) {
  const std::string x = b.cast(b.in(0), b.in_value(0).dtype, b.out_value().dtype);
  b.add("Identity", {x}, {b.out()});
}

void identity(Builder& b) { b.add("Identity", {b.in(0)}, {b.out()}); }

// The recorded shape writes 0 where the output keeps the input's size (the tracer's rule for
// leading dims), which is what 0 means to ONNX's Reshape without allowzero.
void reshape(Builder& b) {
  b.add("Reshape", {b.in(0), b.ints(b.attr<std::vector<int64_t>>("shape"))}, {b.out()});
}

// Flatten (2-D output) when dims 1.. are flattened; otherwise a Reshape that keeps the dims
// before start_dim (0), merges start..end (-1) and keeps the traced sizes after end_dim.
void flatten(Builder& b) {
  const int64_t rank = b.in_rank(0);
  if (rank == 0) {
    b.add("Reshape", {b.in(0), b.ints({1})}, {b.out()});
    return;
  }
  const int64_t start = b.dim(b.attr<int64_t>("start_dim"), rank);
  const int64_t end = b.dim(b.attr<int64_t>("end_dim"), rank);
  if (start > end) b.fail("start_dim ", start, " is after end_dim ", end);
  if (start == end) {
    b.add("Identity", {b.in(0)}, {b.out()});
    return;
  }
  if (start == 1 && end == rank - 1) {
    set_attr(b.add("Flatten", {b.in(0)}, {b.out()}), "axis", 1);
    return;
  }
  std::vector<int64_t> shape(static_cast<size_t>(start), 0);
  shape.push_back(-1);
  const Shape& sizes = b.in_value(0).shape;
  for (int64_t d = end + 1; d < rank; ++d) shape.push_back(sizes[static_cast<size_t>(d)]);
  b.add("Reshape", {b.in(0), b.ints(shape)}, {b.out()});
}

void permute(Builder& b) {
  const auto perm = dims_of(b, b.attr<std::vector<int64_t>>("dims"), b.in_rank(0));
  set_attr(b.add("Transpose", {b.in(0)}, {b.out()}), "perm", perm);
}

void transpose(Builder& b) {
  const int64_t rank = b.in_rank(0);
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
  if (rank > 0)
    std::swap(perm[static_cast<size_t>(b.dim(b.attr<int64_t>("dim0"), rank))],
              perm[static_cast<size_t>(b.dim(b.attr<int64_t>("dim1"), rank))]);
  set_attr(b.add("Transpose", {b.in(0)}, {b.out()}), "perm", perm);
}

// ONNX clamps start and end to the dim as torch does, so an end past the size is kept as given.
void slice(Builder& b) {
  const int64_t dim = b.dim(b.attr<int64_t>("dim"), b.in_rank(0));
  b.add("Slice",
        {b.in(0), b.ints({b.attr<int64_t>("start")}), b.ints({b.attr<int64_t>("end")}),
         b.ints({dim}), b.ints({b.attr_or<int64_t>("step", 1)})},
        {b.out()});
}

// A scalar index: Gather drops the dim, as select does. Negative indices count from the end in
// both.
void select(Builder& b) {
  const int64_t dim = b.dim(b.attr<int64_t>("dim"), b.in_rank(0));
  set_attr(b.add("Gather", {b.in(0), b.int_scalar(b.attr<int64_t>("index"))}, {b.out()}), "axis",
           dim);
}

// torch's -1 ("keep this size") is 1 for ONNX's broadcasting Expand, which then keeps the
// input's size: a graph traced at one batch size expands at another.
void expand(Builder& b) {
  std::vector<int64_t> shape = b.attr<std::vector<int64_t>>("shape");
  const size_t lead = shape.size() - std::min(shape.size(), b.in_value(0).shape.size());
  for (size_t d = lead; d < shape.size(); ++d)
    if (shape[d] == -1) shape[d] = 1;
  b.add("Expand", {b.in(0), b.ints(shape)}, {b.out()});
}

void cat(Builder& b) {
  const DType dtype = b.out_value().dtype;
  std::vector<std::string> parts;
  for (size_t i = 0; i < b.node().inputs.size(); ++i) parts.push_back(b.in_as(i, dtype));
  const int64_t axis =
      b.dim(b.attr<int64_t>("dim"), static_cast<int64_t>(b.out_value().shape.size()));
  set_attr(b.add("Concat", parts, {b.out()}), "axis", axis);
}

void stack(Builder& b) {
  const DType dtype = b.out_value().dtype;
  const int64_t axis =
      b.dim(b.attr<int64_t>("dim"), static_cast<int64_t>(b.out_value().shape.size()));
  const std::string axes = b.ints({axis});
  std::vector<std::string> parts;
  for (size_t i = 0; i < b.node().inputs.size(); ++i)
    parts.push_back(b.add1("Unsqueeze", {b.in_as(i, dtype), axes}));
  set_attr(b.add("Concat", parts, {b.out()}), "axis", axis);
}

void index_select(Builder& b) {
  const int64_t dim = b.dim(b.attr<int64_t>("dim"), b.in_rank(0));
  set_attr(b.add("Gather", {b.in(0), index_input(b, 1)}, {b.out()}), "axis", dim);
}

void gather(Builder& b) {
  const int64_t dim = b.dim(b.attr<int64_t>("dim"), b.in_rank(0));
  set_attr(b.add("GatherElements", {b.in(0), index_input(b, 1)}, {b.out()}), "axis", dim);
}

}  // namespace rcuda::io::onnx_export
