// ONNX import: the indexing ops of the shape family (kernel.h, Note [Kernels run the public
// ops]): Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND, NonZero,
// Compress, OneHot and ReverseSequence. Indices may be int32 or int64 and negative (counted from
// the end of their dim): wrap_indices makes them the int64 in [0, size) that rcuda's ops take.
#include <unordered_map>

#include "io/onnx/import/ops_shape.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import {
namespace {

Shape concat_shapes(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Shape dims_between(const Shape& shape, size_t begin, size_t end) {
  return Shape(shape.begin() + static_cast<std::ptrdiff_t>(begin),
               shape.begin() + static_cast<std::ptrdiff_t>(end));
}

// ---- Gather, GatherElements, GatherND ----------------------------------------------------------

Kernel make_gather(NodeReader& node) {
  const int64_t axis = node.i("axis", 0);
  const std::string where = node.where();
  return [axis, where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    const int64_t d = normalize_axis(axis, x.dim(), where + ": axis");
    const Tensor index = wrap_indices(in[1], x.size(d));
    // x's dims before d, the indices' dims, x's dims after d.
    const Shape& dims = x.shape();
    const Shape shape =
        concat_shapes(concat_shapes(dims_between(dims, 0, static_cast<size_t>(d)), index.shape()),
                      dims_between(dims, static_cast<size_t>(d) + 1, dims.size()));
    return {rcuda::reshape(rcuda::index_select(x, d, rcuda::reshape(index, {-1})), shape)};
  };
}

Kernel make_gather_elements(NodeReader& node) {
  const int64_t axis = node.i("axis", 0);
  const std::string where = node.where();
  return [axis, where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    const int64_t d = normalize_axis(axis, x.dim(), where + ": axis");
    return {rcuda::gather(x, d, wrap_indices(in[1], x.size(d)))};
  };
}

// Note [Index tuples as row numbers]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// GatherND and ScatterND index the first k dims of the data (after batch_dims) with tuples, the
// last dim of `indices`. Seen with those k dims merged into one, a tuple is a row number, so
// index_select reads the rows and index_put_ writes them: one op, which records for autograd.
// The row number of (i_1, ..., i_k) is the row-major offset over the k dims' sizes, each index
// wrapped first; for batch_dims b, batch position p adds p times the rows per batch.

// The row numbers of the tuples of `indices` (int64, its shape less the last dim) into `sizes`;
// `past_end` (at least the table's row count) where an index is out of its dim's range.
Tensor tuple_rows(const Tensor& indices, const Shape& sizes, int64_t past_end,
                  const std::string& where) {
  RCUDA_CHECK(indices.dim() >= 1 && indices.size(-1) == static_cast<int64_t>(sizes.size()),
              ShapeError, where, ": indices of shape ", shape_str(indices.shape()),
              " must end in a dim of size ", sizes.size());
  const Shape rows_shape = dims_between(indices.shape(), 0, static_cast<size_t>(indices.dim() - 1));
  Tensor rows = rcuda::zeros(rows_shape, {DType::Int64, indices.device()});
  Tensor valid = rcuda::ones(rows_shape, {DType::Bool, indices.device()});
  for (size_t j = 0; j < sizes.size(); ++j) {
    const Tensor part = wrap_indices(indices.select(-1, static_cast<int64_t>(j)), sizes[j]);
    valid = rcuda::logical_and(valid, rcuda::logical_and(rcuda::ge(part, Scalar(int64_t{0})),
                                                         rcuda::lt(part, Scalar(sizes[j]))));
    rows = rcuda::add(rcuda::mul(rows, Scalar(sizes[j])), part);
  }
  // An index out of its dim's range could still make a valid row number: such tuples get a row
  // past the end, which the op reading or writing rows refuses (no read on the host here).
  return rcuda::where(valid, rows, Scalar(past_end));
}

Kernel make_gather_nd(NodeReader& node) {
  const int64_t batch_dims = node.i("batch_dims", 0);  // opset 12 on
  if (batch_dims < 0)
    node.fail("batch_dims must be non-negative, got " + std::to_string(batch_dims));
  const std::string where = node.where();
  return [batch_dims, where](const std::vector<Tensor>& in,
                             const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    const Tensor& indices = in[1];
    const int64_t k = indices.dim() > 0 ? indices.size(-1) : -1;
    RCUDA_CHECK(k >= 1 && batch_dims + k <= x.dim() && batch_dims < indices.dim(), ShapeError,
                where, ": indices of shape ", shape_str(indices.shape()),
                " do not fit data of shape ", shape_str(x.shape()), " with batch_dims ",
                batch_dims);
    const auto b = static_cast<size_t>(batch_dims), kept = static_cast<size_t>(batch_dims + k);
    const Shape& dims = x.shape();
    const Shape tuple_dims = dims_between(dims, b, kept),
                tail = dims_between(dims, kept, dims.size());
    int64_t batches = 1, rows_per_batch = 1;
    for (size_t d = 0; d < b; ++d) batches *= dims[d];
    for (int64_t s : tuple_dims) rows_per_batch *= s;
    // Note [Index tuples as row numbers]
    Tensor rows = tuple_rows(indices, tuple_dims, batches * rows_per_batch, where);
    if (b > 0) {
      Shape batch_shape = rows.shape();
      std::fill(batch_shape.begin() + static_cast<std::ptrdiff_t>(b), batch_shape.end(), 1);
      const Tensor batch = rcuda::arange(0, batches, 1, DType::Int64, rows.device());
      rows =
          rcuda::add(rows, rcuda::mul(rcuda::reshape(batch, batch_shape), Scalar(rows_per_batch)));
    }
    const Tensor table = rcuda::reshape(x, concat_shapes({batches * rows_per_batch}, tail));
    const Tensor picked = rcuda::index_select(table, 0, rcuda::reshape(rows, {-1}));
    return {rcuda::reshape(picked, concat_shapes(rows.shape(), tail))};
  };
}

// ---- Scatter, ScatterElements, ScatterND -------------------------------------------------------

enum class Reduction { None, Add, Mul, Max, Min };

// The reduction attribute of ScatterElements and ScatterND: add and mul from opset 16, max and
// min from 18.
Reduction read_reduction(NodeReader& node) {
  const std::string name = node.s("reduction", "none");
  if (name == "none") return Reduction::None;
  if (node.version() < 16) node.fail("reduction '" + name + "' needs opset 16");
  if (name == "add") return Reduction::Add;
  if (name == "mul") return Reduction::Mul;
  if (node.version() >= 18 && name == "max") return Reduction::Max;
  if (node.version() >= 18 && name == "min") return Reduction::Min;
  node.fail("reduction '" + name + "' is not one of none, add, mul" +
            (node.version() >= 18 ? ", max, min" : " (max and min need opset 18)"));
}

// Note [Scatter with mul, max and min]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// rcuda scatters by writing (scatter, index_put_) or adding (scatter_add, index_put_ with
// accumulate); it has no scatter that multiplies or keeps a maximum. These reductions read the
// positions on the host and apply the updates in rounds: round r takes, for each position, the
// r-th update aimed at it, reads the current values there (index_select), combines and writes
// them back (index_put_). Positions within a round are distinct, so duplicates compose in the
// order ONNX gives them, and every step records for autograd. One round unless indices repeat.

// Combines rows of `updates` (dim 0) into rows of `table` (a fresh tensor, dim 0) at `positions`.
Tensor scatter_in_rounds(Tensor table, const std::vector<int64_t>& positions, const Tensor& updates,
                         Reduction reduction) {
  std::unordered_map<int64_t, size_t> seen;
  std::vector<std::vector<int64_t>> rounds_of_positions, rounds_of_updates;
  for (size_t j = 0; j < positions.size(); ++j) {
    const size_t round = seen[positions[j]]++;
    if (round == rounds_of_positions.size()) {
      rounds_of_positions.emplace_back();
      rounds_of_updates.emplace_back();
    }
    rounds_of_positions[round].push_back(positions[j]);
    rounds_of_updates[round].push_back(static_cast<int64_t>(j));
  }
  auto as_index = [&table](const std::vector<int64_t>& v) {
    return rcuda::from_data(v.data(), {static_cast<int64_t>(v.size())}, DType::Int64,
                            table.device());
  };
  for (size_t r = 0; r < rounds_of_positions.size(); ++r) {
    const Tensor at = as_index(rounds_of_positions[r]);
    const Tensor current = rcuda::index_select(table, 0, at);
    const Tensor update = rcuda::index_select(updates, 0, as_index(rounds_of_updates[r]));
    const Tensor combined = reduction == Reduction::Mul   ? rcuda::mul(current, update)
                            : reduction == Reduction::Max ? rcuda::maximum(current, update)
                                                          : rcuda::minimum(current, update);
    rcuda::index_put_(table, {at}, rcuda::to(combined, table.dtype()));
  }
  return table;
}

// Row-major offsets into `shape` of the elements of `indices` (host values, row-major in
// `index_shape`) read as positions along dim d, negative ones wrapped.
std::vector<int64_t> element_positions(const std::vector<int64_t>& indices,
                                       const Shape& index_shape, const Shape& shape, int64_t d,
                                       const std::string& where) {
  const Strides strides = contiguous_strides(shape);
  std::vector<int64_t> coords(index_shape.size(), 0), positions;
  positions.reserve(indices.size());
  for (int64_t index : indices) {
    const int64_t size = shape[static_cast<size_t>(d)];
    RCUDA_CHECK(index >= -size && index < size, IndexError, where, ": index ", index,
                " is out of range for dim ", d, " of size ", size);
    int64_t position = 0;
    for (size_t k = 0; k < coords.size(); ++k)
      position += (static_cast<int64_t>(k) == d ? (index + size) % size : coords[k]) * strides[k];
    positions.push_back(position);
    for (size_t k = coords.size(); k-- > 0;) {  // next coordinate, row-major
      if (++coords[k] < index_shape[k]) break;
      coords[k] = 0;
    }
  }
  return positions;
}

Kernel make_scatter_elements(NodeReader& node) {
  const int64_t axis = node.i("axis", 0);
  const Reduction reduction = node.op_type() == "Scatter" ? Reduction::None : read_reduction(node);
  const bool in_rounds = reduction != Reduction::None && reduction != Reduction::Add;
  if (in_rounds) node.host_input(1);  // Note [Scatter with mul, max and min]
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    const Tensor& updates = in[2];
    const int64_t d = normalize_axis(axis, x.dim(), where + ": axis");
    if (in_rounds) {
      const std::vector<int64_t> positions =
          element_positions(host_ints(in[1]), in[1].shape(), x.shape(), d, where);
      const Tensor table = rcuda::clone(rcuda::reshape(x, {-1}));
      const Tensor updated =
          scatter_in_rounds(table, positions, rcuda::reshape(updates, {-1}), reduction);
      return {rcuda::reshape(updated, x.shape())};
    }
    const Tensor index = wrap_indices(in[1], x.size(d));
    return {reduction == Reduction::Add ? rcuda::scatter_add(x, d, index, updates)
                                        : rcuda::scatter(x, d, index, updates)};
  };
}

// The host row numbers of ScatterND's tuples (Note [Index tuples as row numbers]).
std::vector<int64_t> tuple_positions(const Tensor& indices, const Shape& sizes,
                                     const std::string& where) {
  const std::vector<int64_t> values = host_ints(indices);
  std::vector<int64_t> positions;
  for (size_t start = 0; start < values.size(); start += sizes.size()) {
    int64_t row = 0;
    for (size_t j = 0; j < sizes.size(); ++j) {
      const int64_t index = values[start + j], size = sizes[j];
      RCUDA_CHECK(index >= -size && index < size, IndexError, where, ": index ", index,
                  " is out of range for dim ", j, " of size ", size);
      row = row * size + (index + size) % size;
    }
    positions.push_back(row);
  }
  return positions;
}

Kernel make_scatter_nd(NodeReader& node) {
  const Reduction reduction = read_reduction(node);
  const bool in_rounds = reduction != Reduction::None && reduction != Reduction::Add;
  if (in_rounds) node.host_input(1);  // Note [Scatter with mul, max and min]
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    const Tensor& indices = in[1];
    const int64_t k = indices.dim() > 0 ? indices.size(-1) : -1;
    RCUDA_CHECK(k >= 1 && k <= x.dim(), ShapeError, where, ": indices of shape ",
                shape_str(indices.shape()), " do not fit data of shape ", shape_str(x.shape()));
    const Shape& dims = x.shape();
    const Shape tuple_dims = dims_between(dims, 0, static_cast<size_t>(k));
    const Shape tail = dims_between(dims, static_cast<size_t>(k), dims.size());
    int64_t rows = 1;
    for (int64_t s : tuple_dims) rows *= s;
    // A fresh table (index_put_ writes in place), one row per tuple.
    Tensor table = rcuda::clone(rcuda::reshape(x, concat_shapes({rows}, tail)));
    if (in_rounds) {
      const std::vector<int64_t> positions = tuple_positions(indices, tuple_dims, where);
      const auto count = static_cast<int64_t>(positions.size());
      table = scatter_in_rounds(table, positions,
                                rcuda::reshape(in[2], concat_shapes({count}, tail)), reduction);
    } else {
      const Tensor at = tuple_rows(rcuda::to(indices, DType::Int64), tuple_dims, rows, where);
      rcuda::index_put_(table, {at}, in[2], reduction == Reduction::Add);
    }
    return {rcuda::reshape(table, dims)};
  };
}

// ---- NonZero, Compress -------------------------------------------------------------------------

Kernel make_non_zero(NodeReader&) {
  return [](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    return {rcuda::nonzero(in[0]).t()};  // ONNX's [rank, count]; rcuda's is [count, rank]
  };
}

Kernel make_compress(NodeReader& node) {
  const std::optional<int64_t> axis =
      node.has("axis") ? std::optional<int64_t>(node.i("axis")) : std::nullopt;
  const std::string where = node.where();
  return [axis, where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    // Without an axis, the input is read flattened.
    const Tensor x = axis ? in[0] : rcuda::reshape(in[0], {-1});
    const int64_t d = axis ? normalize_axis(*axis, x.dim(), where + ": axis") : 0;
    const Tensor condition = rcuda::to(rcuda::reshape(in[1], {-1}), DType::Bool);
    RCUDA_CHECK(condition.numel() <= x.size(d), ShapeError, where, ": condition of ",
                condition.numel(), " values is longer than dim ", d, " of size ", x.size(d));
    const Tensor kept = rcuda::reshape(rcuda::nonzero(condition), {-1});
    return {rcuda::index_select(x, d, kept)};
  };
}

// ---- OneHot, ReverseSequence -------------------------------------------------------------------

Kernel make_one_hot(NodeReader& node) {
  node.host_input(1);
  const int64_t axis = node.i("axis", -1);
  const std::string where = node.where();
  return [axis, where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& indices = in[0];
    const auto depth = static_cast<int64_t>(host_scalar(in[1], where + ": depth"));
    RCUDA_CHECK(depth > 0, ValueError, where, ": depth must be positive, got ", depth);
    const Tensor& values = in[2];
    RCUDA_CHECK(values.numel() == 2, ShapeError, where, ": values must hold (off, on), got shape ",
                shape_str(values.shape()));
    const int64_t d = normalize_axis(axis, indices.dim() + 1, where + ": axis");
    // Indices outside [-depth, depth) match no class and give an all-off row.
    const Tensor classes = wrap_indices(indices, depth).unsqueeze(d);
    Shape class_shape(static_cast<size_t>(indices.dim() + 1), 1);
    class_shape[static_cast<size_t>(d)] = depth;
    const Tensor all =
        rcuda::reshape(rcuda::arange(0, depth, 1, DType::Int64, indices.device()), class_shape);
    const Tensor flat_values = rcuda::reshape(values, {2});
    return {
        rcuda::where(rcuda::eq(classes, all), flat_values.select(0, 1), flat_values.select(0, 0))};
  };
}

Kernel make_reverse_sequence(NodeReader& node) {
  const int64_t batch_axis = node.i("batch_axis", 1), time_axis = node.i("time_axis", 0);
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0)))
    node.fail("batch_axis " + std::to_string(batch_axis) + " and time_axis " +
              std::to_string(time_axis) + " must be 0 and 1 in some order");
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    RCUDA_CHECK(x.dim() >= 2, ShapeError, where, ": input of shape ", shape_str(x.shape()),
                " needs a time and a batch dim");
    const int64_t steps = x.size(time_axis), batch = x.size(batch_axis);
    // Source step of each (step, sequence): reversed below the sequence's length, kept above.
    const Tensor lengths = rcuda::reshape(rcuda::to(in[1], DType::Int64), {1, batch});
    const Tensor step =
        rcuda::reshape(rcuda::arange(0, steps, 1, DType::Int64, x.device()), {steps, 1});
    Tensor source = rcuda::where(rcuda::lt(step, lengths),
                                 rcuda::sub(rcuda::sub(lengths, Scalar(int64_t{1})), step), step);
    if (time_axis == 1) source = source.t();
    Shape index_shape(static_cast<size_t>(x.dim()), 1);
    index_shape[0] = source.size(0);
    index_shape[1] = source.size(1);
    const Tensor index = rcuda::contiguous(rcuda::reshape(source, index_shape).expand(x.shape()));
    return {rcuda::gather(x, time_axis, index)};
  };
}

}  // namespace

const std::vector<ImportOp>& indexing_ops() {
  static const std::vector<ImportOp> ops = {
      {"Gather", make_gather},
      {"GatherElements", make_gather_elements, 11},
      {"GatherND", make_gather_nd, 11},
      {"Scatter", make_scatter_elements, 9},  // ScatterElements before opset 11
      {"ScatterElements", make_scatter_elements, 11},
      {"ScatterND", make_scatter_nd, 11},
      {"NonZero", make_non_zero, 9},
      {"Compress", make_compress, 9},
      {"OneHot", make_one_hot, 9},
      {"ReverseSequence", make_reverse_sequence, 10},
  };
  return ops;
}

}  // namespace rcuda::io::onnx_import
