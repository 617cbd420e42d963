// ONNX import: the ops of the shape family that pad or fill (kernel.h, Note [Kernels run the
// public ops]): Pad, ConstantOfShape, Range, EyeLike and Trilu.
#include <algorithm>
#include <cmath>

#include "io/onnx/import/ops_shape.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import {
namespace {

// ---- Pad ---------------------------------------------------------------------------------------

// Where output position i (counted from the input's start, so negative in the leading padding)
// reads along a dim of `size` elements, for the modes that copy input elements: numpy's edge,
// reflect (the edge not repeated, reflecting again past the far end) and wrap.
int64_t source_position(int64_t i, int64_t size, const std::string& mode) {
  if (mode == "edge") return std::clamp<int64_t>(i, 0, size - 1);
  if (mode == "wrap") return (i % size + size) % size;
  if (size == 1) return 0;
  const int64_t period = 2 * (size - 1), m = (i % period + period) % period;
  return m < size ? m : period - m;
}

// Pads dim d by copying input elements: negative padding crops first, then each new position
// reads its source (one index_select, which records for autograd).
Tensor pad_by_copy(const Tensor& x, int64_t d, int64_t before, int64_t after,
                   const std::string& mode, const std::string& where) {
  const Tensor cropped =
      x.slice(d, std::max<int64_t>(-before, 0), x.size(d) - std::max<int64_t>(-after, 0));
  const int64_t size = cropped.size(d), lead = std::max<int64_t>(before, 0),
                trail = std::max<int64_t>(after, 0);
  if (lead == 0 && trail == 0) return cropped;
  RCUDA_CHECK(size > 0, ShapeError, where, ": mode ", mode, " cannot pad dim ", d,
              ", which is empty after cropping (input shape ", shape_str(x.shape()), ")");
  std::vector<int64_t> sources;
  for (int64_t i = -lead; i < size + trail; ++i) sources.push_back(source_position(i, size, mode));
  const Tensor index = rcuda::from_data(sources.data(), {static_cast<int64_t>(sources.size())},
                                        DType::Int64, x.device());
  return rcuda::index_select(cropped, d, index);
}

Kernel make_pad(NodeReader& node) {
  const std::string mode = node.s("mode", "constant");
  if (mode == "wrap" && node.version() < 19) node.fail("mode 'wrap' needs opset 19");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    node.fail("mode '" + mode + "' is not one of constant, reflect, edge, wrap");
  // Pads: attribute "paddings" in opset 1, "pads" in 2 to 10, input 1 from 11; the constant is
  // attribute "value" before 11, input 2 from then; input 3 names the padded axes from 18.
  const IntsArgument pads_argument(node, node.version() < 2 ? "paddings" : "pads", 1, 11);
  const IntsArgument axes_argument(node, "axes", 3, 18);
  const double value_attribute = node.version() < 11 ? node.f("value", 0.0) : 0.0;
  if (node.version() >= 11 && node.has_input(2)) node.host_input(2);
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    const auto pads = pads_argument.get(in);
    RCUDA_CHECK(pads.has_value(), ValueError, where, ": Pad needs pads");
    std::vector<int64_t> axes(static_cast<size_t>(x.dim()));
    for (size_t d = 0; d < axes.size(); ++d) axes[d] = static_cast<int64_t>(d);
    if (const auto given = axes_argument.get(in)) axes = *given;
    RCUDA_CHECK(pads->size() == 2 * axes.size(), ShapeError, where, ": pads ", shape_str(*pads),
                " must hold a begin and an end for each of ", axes.size(), " axes");
    // ONNX lists all begins, then all ends.
    std::vector<int64_t> before(static_cast<size_t>(x.dim()), 0), after(before);
    for (size_t j = 0; j < axes.size(); ++j) {
      const auto d = static_cast<size_t>(normalize_axis(axes[j], x.dim(), where + ": axes"));
      before[d] = (*pads)[j];
      after[d] = (*pads)[axes.size() + j];
    }
    if (mode != "constant") {
      Tensor y = x;
      for (int64_t d = 0; d < x.dim(); ++d)
        y = pad_by_copy(y, d, before[static_cast<size_t>(d)], after[static_cast<size_t>(d)], mode,
                        where);
      return {y};
    }
    const Tensor constant = optional_input(in, 2);
    const double value =
        constant.defined() ? host_scalar(constant, where + ": constant_value") : value_attribute;
    std::vector<int64_t> padding;  // rcuda's (PyTorch's) order: from the last dim backwards
    for (size_t d = before.size(); d-- > 0;) padding.insert(padding.end(), {before[d], after[d]});
    return {rcuda::pad(x, padding, "constant", value)};
  };
}

// ---- ConstantOfShape, Range --------------------------------------------------------------------

Kernel make_constant_of_shape(NodeReader& node) {
  node.host_input(0);
  const Tensor value =
      node.has("value") ? node.tensor("value") : rcuda::scalar_tensor(Scalar(0.0), DType::Float32);
  if (value.numel() != 1)
    node.fail("value must hold one element, got shape " + shape_str(value.shape()));
  const Scalar fill = rcuda::item(value);
  const DType dtype = value.dtype();
  return
      [fill, dtype](const std::vector<Tensor>& in, const RunContext& ctx) -> std::vector<Tensor> {
        return {rcuda::full(host_ints(in[0]), fill, {dtype, ctx.device})};
      };
}

// start, start + delta, ... before limit: max(ceil((limit - start) / delta), 0) values in the
// inputs' dtype, computed exactly for integers.
Kernel make_range(NodeReader& node) {
  for (size_t i = 0; i < 3; ++i) node.host_input(i);
  const std::string where = node.where();
  return [where](const std::vector<Tensor>& in, const RunContext& ctx) -> std::vector<Tensor> {
    const DType dtype = in[0].dtype();
    if (is_integral(dtype, false)) {
      const int64_t start = host_ints(in[0]).at(0), limit = host_ints(in[1]).at(0),
                    delta = host_ints(in[2]).at(0);
      RCUDA_CHECK(delta != 0, ValueError, where, ": delta must be nonzero");
      const int64_t span = limit - start;
      int64_t count = span / delta + (span % delta != 0 && (span < 0) == (delta < 0) ? 1 : 0);
      count = std::max<int64_t>(count, 0);
      const Tensor steps = rcuda::arange(0, count, 1, DType::Int64, ctx.device);
      return {rcuda::to(rcuda::add(rcuda::mul(steps, Scalar(delta)), Scalar(start)), dtype)};
    }
    const double start = host_scalar(in[0], where + ": start"),
                 limit = host_scalar(in[1], where + ": limit"),
                 delta = host_scalar(in[2], where + ": delta");
    RCUDA_CHECK(delta != 0, ValueError, where, ": delta must be nonzero");
    const auto count = static_cast<int64_t>(std::max(std::ceil((limit - start) / delta), 0.0));
    const Tensor steps = rcuda::arange(0, count, 1, DType::Float64, ctx.device);
    return {rcuda::to(rcuda::add(rcuda::mul(steps, Scalar(delta)), Scalar(start)), dtype)};
  };
}

// ---- EyeLike, Trilu ----------------------------------------------------------------------------

// column - row for each element of an n x m matrix, on `device`.
Tensor diagonal_offsets(int64_t n, int64_t m, Device device) {
  const Tensor rows = rcuda::reshape(rcuda::arange(0, n, 1, DType::Int64, device), {n, 1});
  const Tensor columns = rcuda::reshape(rcuda::arange(0, m, 1, DType::Int64, device), {1, m});
  return rcuda::sub(columns, rows);
}

Kernel make_eye_like(NodeReader& node) {
  const int64_t k = node.i("k", 0);
  const std::optional<DType> dtype =
      node.has("dtype") ? std::optional<DType>(dtype_from_onnx(
                              static_cast<int32_t>(node.i("dtype")), node.where() + ": dtype"))
                        : std::nullopt;
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    RCUDA_CHECK(x.dim() == 2, ShapeError, where, ": input must be 2-D, got shape ",
                shape_str(x.shape()));
    const Tensor ones_at = rcuda::eq(diagonal_offsets(x.size(0), x.size(1), x.device()), Scalar(k));
    return {rcuda::to(ones_at, dtype.value_or(x.dtype()))};
  };
}

Kernel make_trilu(NodeReader& node) {
  const bool upper = node.i("upper", 1) != 0;
  if (node.has_input(1)) node.host_input(1);
  const std::string where = node.where();
  return [upper, where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    RCUDA_CHECK(x.dim() >= 2, ShapeError, where, ": input must have at least 2 dims, got shape ",
                shape_str(x.shape()));
    const Tensor k_input = optional_input(in, 1);
    const int64_t k = k_input.defined() ? host_ints(k_input).at(0) : 0;
    // Upper keeps column - row >= k; lower keeps column - row <= k.
    const Tensor offsets = diagonal_offsets(x.size(-2), x.size(-1), x.device());
    const Tensor dropped = upper ? rcuda::lt(offsets, Scalar(k)) : rcuda::gt(offsets, Scalar(k));
    return {rcuda::masked_fill(x, dropped, Scalar(int64_t{0}))};
  };
}

}  // namespace

const std::vector<ImportOp>& fill_ops() {
  static const std::vector<ImportOp> ops = {
      {"Pad", make_pad},         {"ConstantOfShape", make_constant_of_shape, 9},
      {"Range", make_range, 11}, {"EyeLike", make_eye_like, 9},
      {"Trilu", make_trilu, 14},
  };
  return ops;
}

}  // namespace rcuda::io::onnx_import
