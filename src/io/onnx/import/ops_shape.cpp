// ONNX import: the shape ops (kernel.h, Note [Kernels run the public ops]): Shape, Size,
// Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Expand, Tile,
// DepthToSpace and SpaceToDepth. Indexing and filling ops are in ops_shape_indexing.cpp and
// ops_shape_fill.cpp; shape_ops() joins the three tables.
#include "io/onnx/import/ops_shape.h"

#include <algorithm>
#include <numeric>

#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import {

// ---- helpers shared by the family (ops_shape.h) ----------------------------------------------

IntsArgument::IntsArgument(NodeReader& node, const char* name, size_t input, int input_since) {
  if (node.version() < input_since) {
    if (node.has(name)) attribute_ = node.ints(name);
  } else if (node.has_input(input)) {
    node.host_input(input);
    input_ = input;
  }
}

std::optional<std::vector<int64_t>> IntsArgument::get(const std::vector<Tensor>& inputs) const {
  if (!input_) return attribute_;
  const Tensor given = optional_input(inputs, *input_);
  if (!given.defined()) return std::nullopt;
  return host_ints(given);
}

Tensor wrap_indices(const Tensor& indices, int64_t size) {
  const Tensor index = rcuda::to(indices, DType::Int64);
  return rcuda::where(rcuda::lt(index, Scalar(int64_t{0})), rcuda::add(index, Scalar(size)), index);
}

namespace {

int64_t product(const Shape& shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= shape[d];
  return n;
}

// ---- Shape, Size -------------------------------------------------------------------------------

// Shape and Size make CPU tensors (Note [Values read on the host]).
Kernel make_shape(NodeReader& node) {
  const int64_t start = node.i("start", 0);  // start and end: opset 15 on
  const std::optional<int64_t> end =
      node.has("end") ? std::optional<int64_t>(node.i("end")) : std::nullopt;
  return [start, end](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Shape& dims = in[0].shape();
    const auto rank = static_cast<int64_t>(dims.size());
    auto clamp = [rank](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank); };
    const int64_t first = clamp(start), last = std::max(first, end ? clamp(*end) : rank);
    const std::vector<int64_t> kept(dims.begin() + first, dims.begin() + last);
    return {rcuda::from_data(kept.data(), {last - first}, DType::Int64)};
  };
}

Kernel make_size(NodeReader&) {
  return [](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    return {rcuda::scalar_tensor(Scalar(in[0].numel()), DType::Int64)};
  };
}

// ---- Reshape, Flatten, Squeeze, Unsqueeze ------------------------------------------------------

Kernel make_reshape(NodeReader& node) {
  node.host_input(1);
  // A 0 copies the input's size at that position unless allowzero (opset 14) makes it a size.
  const bool allow_zero = node.i("allowzero", 0) != 0;
  const std::string where = node.where();
  return
      [allow_zero, where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
        const Tensor& x = in[0];
        Shape shape = host_ints(in[1]);
        for (size_t i = 0; i < shape.size() && !allow_zero; ++i) {
          if (shape[i] != 0) continue;
          RCUDA_CHECK(static_cast<int64_t>(i) < x.dim(), ShapeError, where, ": shape ",
                      shape_str(shape), " copies dim ", i, " of an input of shape ",
                      shape_str(x.shape()));
          shape[i] = x.size(static_cast<int64_t>(i));
        }
        return {rcuda::reshape(x, shape)};
      };
}

Kernel make_flatten(NodeReader& node) {
  const int64_t axis = node.i("axis", 1);
  const std::string where = node.where();
  return [axis, where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    // axis may equal the rank (everything goes to the outer dim); a negative one counts back
    // from the rank.
    RCUDA_CHECK(axis >= -x.dim() && axis <= x.dim(), IndexError, where, ": axis ", axis,
                " is out of range for rank ", x.dim());
    const auto split = static_cast<size_t>(axis < 0 ? axis + x.dim() : axis);
    const Shape& dims = x.shape();
    return {rcuda::reshape(x, {product(dims, 0, split), product(dims, split, dims.size())})};
  };
}

Kernel make_squeeze(NodeReader& node) {
  const IntsArgument axes_argument(node, "axes", 1, 13);
  const std::string where = node.where();
  return [axes_argument, where](const std::vector<Tensor>& in,
                                const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    std::vector<bool> removed(static_cast<size_t>(x.dim()), false);
    if (const auto axes = axes_argument.get(in)) {
      for (int64_t axis : *axes) {
        const int64_t d = normalize_axis(axis, x.dim(), where + ": axes");
        RCUDA_CHECK(x.size(d) == 1, ShapeError, where, ": cannot squeeze dim ", d, " of size ",
                    x.size(d), " (input shape ", shape_str(x.shape()), ")");
        removed[static_cast<size_t>(d)] = true;
      }
    } else {
      for (int64_t d = 0; d < x.dim(); ++d) removed[static_cast<size_t>(d)] = x.size(d) == 1;
    }
    Shape shape;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (!removed[static_cast<size_t>(d)]) shape.push_back(x.size(d));
    return {rcuda::reshape(x, shape)};
  };
}

Kernel make_unsqueeze(NodeReader& node) {
  if (node.version() < 13 ? !node.has("axes") : !node.has_input(1)) node.fail("axes are missing");
  const IntsArgument axes_argument(node, "axes", 1, 13);
  const std::string where = node.where();
  return [axes_argument, where](const std::vector<Tensor>& in,
                                const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    const auto axes = axes_argument.get(in);
    RCUDA_CHECK(axes.has_value(), ValueError, where, ": axes are missing");
    // Axes count in the output's dims.
    const int64_t rank = x.dim() + static_cast<int64_t>(axes->size());
    std::vector<bool> inserted(static_cast<size_t>(rank), false);
    for (int64_t axis : *axes) {
      const auto d = static_cast<size_t>(normalize_axis(axis, rank, where + ": axes"));
      RCUDA_CHECK(!inserted[d], ValueError, where, ": axes ", shape_str(*axes), " repeat dim ", d);
      inserted[d] = true;
    }
    Shape shape;
    int64_t next = 0;
    for (int64_t d = 0; d < rank; ++d)
      shape.push_back(inserted[static_cast<size_t>(d)] ? 1 : x.size(next++));
    return {rcuda::reshape(x, shape)};
  };
}

// ---- Transpose, Concat, Split ------------------------------------------------------------------

Kernel make_transpose(NodeReader& node) {
  const std::optional<std::vector<int64_t>> perm =
      node.has("perm") ? std::optional<std::vector<int64_t>>(node.ints("perm")) : std::nullopt;
  const std::string where = node.where();
  return [perm, where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    std::vector<int64_t> dims(static_cast<size_t>(x.dim()));
    std::iota(dims.rbegin(), dims.rend(), 0);  // reversed by default
    if (perm) {
      RCUDA_CHECK(static_cast<int64_t>(perm->size()) == x.dim(), ShapeError, where, ": perm ",
                  shape_str(*perm), " does not fit an input of shape ", shape_str(x.shape()));
      dims = *perm;
    }
    return {x.permute(dims)};
  };
}

Kernel make_concat(NodeReader& node) {
  const int64_t axis = node.version() < 4 ? node.i("axis", 1) : node.i("axis");
  const std::string where = node.where();
  return [axis, where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    std::vector<Tensor> parts;
    for (const Tensor& t : in)
      if (t.defined()) parts.push_back(t);
    RCUDA_CHECK(!parts.empty(), ValueError, where, ": Concat needs an input");
    return {rcuda::cat(parts, normalize_axis(axis, parts[0].dim(), where + ": axis"))};
  };
}

// Equal pieces, one per output; the last smaller when the dim does not divide (opset 18), an
// error before, where ONNX asked for equal parts.
std::vector<int64_t> equal_split(int64_t size, int64_t pieces, bool last_smaller,
                                 const std::string& where) {
  const int64_t piece = (size + pieces - 1) / pieces;
  RCUDA_CHECK(size % pieces == 0 || (last_smaller && piece * (pieces - 1) <= size), ShapeError,
              where, ": cannot split a dim of size ", size, " into ", pieces, " outputs");
  std::vector<int64_t> sizes(static_cast<size_t>(pieces), piece);
  sizes.back() = size - piece * (pieces - 1);
  return sizes;
}

Kernel make_split(NodeReader& node) {
  const int64_t axis = node.i("axis", 0);
  // Split 1 took the sizes as an attribute or an input; 2 to 12 as an attribute; 13 on as input.
  const bool sizes_input = node.version() == 1 && node.has_input(1);
  const IntsArgument split_argument(node, "split", 1, sizes_input ? 1 : 13);
  const auto outputs = static_cast<int64_t>(node.num_outputs());
  if (node.has("num_outputs") && node.i("num_outputs") != outputs)
    node.fail("num_outputs " + std::to_string(node.i("num_outputs")) + " but the node has " +
              std::to_string(outputs) + " outputs");
  const bool last_smaller = node.version() >= 18;
  const std::string where = node.where();
  return [split_argument, axis, outputs, last_smaller, where](
             const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    const int64_t d = normalize_axis(axis, x.dim(), where + ": axis");
    const auto given = split_argument.get(in);
    const std::vector<int64_t> sizes =
        given ? *given : equal_split(x.size(d), outputs, last_smaller, where);
    RCUDA_CHECK(static_cast<int64_t>(sizes.size()) == outputs, ValueError, where, ": split ",
                shape_str(sizes), " has ", sizes.size(), " sizes for ", outputs, " outputs");
    return rcuda::split(x, sizes, d);
  };
}

// ---- Slice -------------------------------------------------------------------------------------

// x[start:end:step] along dim d with ONNX's clamping; a negative step gathers the elements in
// reverse order (views step forward only).
Tensor slice_dim(const Tensor& x, int64_t d, int64_t start, int64_t end, int64_t step) {
  const int64_t size = x.size(d);
  if (start < 0) start += size;
  if (end < 0) end += size;
  if (step > 0)
    return x.slice(d, std::clamp<int64_t>(start, 0, size), std::clamp<int64_t>(end, 0, size), step);
  std::vector<int64_t> picked;
  if (size > 0) {
    start = std::clamp<int64_t>(start, 0, size - 1);
    end = std::clamp<int64_t>(end, -1, size - 1);
    for (int64_t i = start; i > end; i += step) picked.push_back(i);
  }
  const Tensor index = rcuda::from_data(picked.data(), {static_cast<int64_t>(picked.size())},
                                        DType::Int64, x.device());
  return rcuda::index_select(x, d, index);
}

Kernel make_slice(NodeReader& node) {
  // Opsets 1 to 9 give starts, ends and axes as attributes; 10 on as inputs 1 to 3, with steps
  // as input 4.
  const IntsArgument starts_argument(node, "starts", 1, 10), ends_argument(node, "ends", 2, 10),
      axes_argument(node, "axes", 3, 10), steps_argument(node, "steps", 4, 10);
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    Tensor y = in[0];
    const auto starts = starts_argument.get(in), ends = ends_argument.get(in);
    RCUDA_CHECK(starts && ends && starts->size() == ends->size(), ValueError, where,
                ": Slice needs starts and ends of one length");
    const size_t n = starts->size();
    std::vector<int64_t> axes(n), steps(n, 1);
    std::iota(axes.begin(), axes.end(), 0);
    if (const auto given = axes_argument.get(in)) axes = *given;
    if (const auto given = steps_argument.get(in)) steps = *given;
    RCUDA_CHECK(axes.size() == n && steps.size() == n, ValueError, where, ": axes ",
                shape_str(axes), " and steps ", shape_str(steps),
                " must have the length of starts ", shape_str(*starts));
    for (size_t j = 0; j < n; ++j) {
      RCUDA_CHECK(steps[j] != 0, ValueError, where, ": steps must be nonzero, got ",
                  shape_str(steps));
      const int64_t d = normalize_axis(axes[j], y.dim(), where + ": axes");
      y = slice_dim(y, d, (*starts)[j], (*ends)[j], steps[j]);
    }
    return {y};
  };
}

// ---- Expand, Tile ------------------------------------------------------------------------------

Kernel make_expand(NodeReader& node) {
  node.host_input(1);
  const std::string where = node.where();
  return [where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    // Both ways: a 1 in the shape keeps the input's size.
    const Shape shape = broadcast_shapes(in[0].shape(), host_ints(in[1]), where.c_str());
    return {in[0].expand(shape)};
  };
}

Kernel make_tile(NodeReader& node) {
  node.host_input(1);
  const std::string where = node.where();
  return [where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    const std::vector<int64_t> repeats = host_ints(in[1]);
    RCUDA_CHECK(static_cast<int64_t>(repeats.size()) == x.dim(), ShapeError, where, ": repeats ",
                shape_str(repeats), " must have one value per dim of the input ",
                shape_str(x.shape()));
    // Each dim d becomes (repeats[d], size d), broadcast, then merged.
    Shape spread, expanded, tiled;
    for (int64_t d = 0; d < x.dim(); ++d) {
      const int64_t r = repeats[static_cast<size_t>(d)];
      RCUDA_CHECK(r >= 0, ValueError, where, ": repeats must be non-negative, got ",
                  shape_str(repeats));
      spread.insert(spread.end(), {1, x.size(d)});
      expanded.insert(expanded.end(), {r, x.size(d)});
      tiled.push_back(r * x.size(d));
    }
    return {rcuda::reshape(rcuda::reshape(x, spread).expand(expanded), tiled)};
  };
}

// ---- DepthToSpace, SpaceToDepth ----------------------------------------------------------------

// Reshape, permute, reshape: how both ops move blocks between channels and space.
Tensor regroup(const Tensor& x, const Shape& split, const std::vector<int64_t>& order,
               const Shape& merged) {
  return rcuda::reshape(rcuda::reshape(x, split).permute(order), merged);
}

void check_blocks(const Tensor& x, bool fits, int64_t block, const std::string& where) {
  RCUDA_CHECK(x.dim() == 4 && fits, ShapeError, where, ": blocksize ", block,
              " does not fit an input of shape ", shape_str(x.shape()), " (N, C, H, W)");
}

Kernel make_depth_to_space(NodeReader& node) {
  const int64_t block = node.i("blocksize");
  if (block <= 0) node.fail("blocksize must be positive, got " + std::to_string(block));
  const std::string mode = node.s("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") node.fail("mode '" + mode + "' must be DCR or CRD");
  const bool depth_first = mode == "DCR";
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    check_blocks(x, x.dim() == 4 && x.size(1) % (block * block) == 0, block, where);
    const int64_t n = x.size(0), c = x.size(1) / (block * block), h = x.size(2), w = x.size(3);
    const Shape merged = {n, c, h * block, w * block};
    if (depth_first)  // channels read as (block row, block column, channel)
      return {regroup(x, {n, block, block, c, h, w}, {0, 3, 4, 1, 5, 2}, merged)};
    return {regroup(x, {n, c, block, block, h, w}, {0, 1, 4, 2, 5, 3}, merged)};
  };
}

Kernel make_space_to_depth(NodeReader& node) {
  const int64_t block = node.i("blocksize");
  if (block <= 0) node.fail("blocksize must be positive, got " + std::to_string(block));
  const std::string mode = node.s("mode", "DCR");  // from opset 28; DCR before
  if (mode != "DCR" && mode != "CRD") node.fail("mode '" + mode + "' must be DCR or CRD");
  // The channels come out as (block row, block column, channel), or (channel, ...) for CRD.
  const std::vector<int64_t> order = mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4}
                                                   : std::vector<int64_t>{0, 1, 3, 5, 2, 4};
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    check_blocks(x, x.dim() == 4 && x.size(2) % block == 0 && x.size(3) % block == 0, block, where);
    const int64_t n = x.size(0), c = x.size(1), h = x.size(2) / block, w = x.size(3) / block;
    return {regroup(x, {n, c, h, block, w, block}, order, {n, c * block * block, h, w})};
  };
}

}  // namespace

const std::vector<ImportOp>& shape_ops() {
  static const std::vector<ImportOp> ops = [] {
    std::vector<ImportOp> rows = {
        {"Shape", make_shape},
        {"Size", make_size},
        {"Reshape", make_reshape, 5},  // Reshape 1 took the shape as an attribute
        {"Flatten", make_flatten},
        {"Squeeze", make_squeeze},
        {"Unsqueeze", make_unsqueeze},
        {"Transpose", make_transpose},
        {"Concat", make_concat},
        {"Split", make_split},
        {"Slice", make_slice},
        {"Expand", make_expand, 8},
        {"Tile", make_tile, 6},  // Tile 1 took tiles and an axis
        {"DepthToSpace", make_depth_to_space},
        {"SpaceToDepth", make_space_to_depth},
    };
    for (const auto* table : {&indexing_ops(), &fill_ops()})
      rows.insert(rows.end(), table->begin(), table->end());
    return rows;
  }();
  return ops;
}

}  // namespace rcuda::io::onnx_import
