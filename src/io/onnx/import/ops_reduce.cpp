// ONNX import: the Reduce* ops, ArgMax and ArgMin (kernel.h, Note [Kernels run the public ops]),
// and reduce_ops(), which joins the reduce family's tables (ops_reduce.h).
//
// Note [Reducing over no axes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A reduction's axes come from an attribute (ReduceSum before 13, the others before 18) or from
// an optional input read on the host. No axes means every axis, unless noop_with_empty_axes is
// set: then nothing is reduced, but the op's elementwise steps still apply (ReduceSumSquare
// squares, ReduceL1 takes |x|), as the ONNX spec says since its fix of onnx/onnx#6103. A 0-dim
// input reduces over its single element the same way.
#include <algorithm>
#include <limits>

#include "io/onnx/import/kernel.h"
#include "io/onnx/import/ops_reduce.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import {

namespace reduce_detail {

Tensor flip(const Tensor& x, int64_t dim) {
  const int64_t n = x.size(dim);
  const Tensor reversed = rcuda::arange(n - 1, -1, -1, DType::Int64, x.device());
  return rcuda::index_select(x, dim, reversed);
}

Shape keepdim_shape(const Shape& shape, const std::vector<int64_t>& dims) {
  Shape out = shape;
  for (int64_t d : dims) out[static_cast<size_t>(d)] = 1;
  return out;
}

std::vector<int64_t> sorted_axes(const std::string& where, std::vector<int64_t> axes,
                                 int64_t rank) {
  for (int64_t& axis : axes) axis = normalize_axis(axis, rank, where + ": axes");
  std::sort(axes.begin(), axes.end());
  RCUDA_CHECK(std::adjacent_find(axes.begin(), axes.end()) == axes.end(), ValueError, where,
              ": an axis appears more than once in axes");
  return axes;
}

std::vector<int64_t> all_dims(int64_t rank) {
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) dims[static_cast<size_t>(d)] = d;
  return dims;
}

}  // namespace reduce_detail

namespace {

using reduce_detail::all_dims;
using reduce_detail::keepdim_shape;
using reduce_detail::sorted_axes;

enum class Reduction { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

// The output shape of a reduction over `dims` (sorted).
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& dims, bool keepdims) {
  if (keepdims) return keepdim_shape(shape, dims);
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!std::binary_search(dims.begin(), dims.end(), static_cast<int64_t>(d)))
      out.push_back(shape[d]);
  return out;
}

int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[static_cast<size_t>(d)];
  return n;
}

// Max or min over several dims: the reduced dims moved last and merged into one, which
// rcuda::max(x, dim) reduces. An empty set gives the identity (-inf for max, +inf for min; the
// dtype's extremes for integers), as ONNX's empty-set rule says.
Tensor extreme(const Tensor& x, const std::vector<int64_t>& dims, bool keepdims, bool is_max) {
  const Shape out_shape = reduced_shape(x.shape(), dims, keepdims);
  if (x.dtype() == DType::Bool) {
    return is_max ? rcuda::any(x, dims, keepdims) : rcuda::all(x, dims, keepdims);
  }
  if (reduced_count(x.shape(), dims) == 0) {
    const bool floating = is_floating(x.dtype());
    const Scalar identity = floating ? Scalar(is_max ? -std::numeric_limits<double>::infinity()
                                                     : std::numeric_limits<double>::infinity())
                                     : Scalar(is_max ? std::numeric_limits<int64_t>::min()
                                                     : std::numeric_limits<int64_t>::max());
    // An integer extreme wider than the dtype saturates in the conversion below.
    const DType fill = floating ? x.dtype() : DType::Int64;
    return rcuda::to(rcuda::full(out_shape, identity, TensorOptions(fill, x.device())), x.dtype());
  }
  std::vector<int64_t> order;
  Shape merged;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (!std::binary_search(dims.begin(), dims.end(), d)) {
      order.push_back(d);
      merged.push_back(x.size(d));
    }
  }
  order.insert(order.end(), dims.begin(), dims.end());
  merged.push_back(-1);
  const Tensor rows = rcuda::reshape(x.permute(order), merged);
  const Tensor values = is_max ? rcuda::max(rows, -1).first : rcuda::min(rows, -1).first;
  return rcuda::reshape(values, out_shape);
}

// The elementwise steps alone (Note [Reducing over no axes]).
Tensor reduce_nothing(Reduction op, const Tensor& x) {
  switch (op) {
    case Reduction::L1:
    case Reduction::L2:
      return rcuda::abs(x);
    case Reduction::SumSquare:
      return rcuda::mul(x, x);
    case Reduction::LogSum:
      return rcuda::log(x);
    default:  // Sum, Mean, Max, Min, Prod, and LogSumExp, whose log(exp(x)) is x
      return x;
  }
}

// op over `dims` (sorted, not empty) of floating x.
Tensor reduce_floating(Reduction op, const Tensor& x, const std::vector<int64_t>& dims,
                       bool keepdims) {
  switch (op) {
    case Reduction::Mean:
      return rcuda::mean(x, dims, keepdims);
    case Reduction::L2:
      return rcuda::sqrt(rcuda::sum(rcuda::mul(x, x), dims, keepdims));
    case Reduction::LogSum:
      return rcuda::log(rcuda::sum(x, dims, keepdims));
    case Reduction::LogSumExp:
      if (reduced_count(x.shape(), dims) == 0) {
        return rcuda::full(reduced_shape(x.shape(), dims, keepdims),
                           -std::numeric_limits<double>::infinity(),
                           TensorOptions(x.dtype(), x.device()));
      }
      return rcuda::logsumexp(x, dims, keepdims);
    default:
      throw InternalError("onnx import: reduce_floating reached for a non-floating reduction");
  }
}

// op over `dims` (sorted, not empty), in x's dtype.
Tensor reduce_over(Reduction op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdims) {
  switch (op) {
    case Reduction::Max:
    case Reduction::Min:
      return extreme(x, dims, keepdims, op == Reduction::Max);
    // Integer sums and products are int64 in rcuda: back to the input's dtype, as ONNX.
    case Reduction::Sum:
      return rcuda::to(rcuda::sum(x, dims, keepdims), x.dtype());
    case Reduction::Prod:
      return rcuda::to(rcuda::prod(x, dims, keepdims), x.dtype());
    case Reduction::L1:
      return rcuda::to(rcuda::sum(rcuda::abs(x), dims, keepdims), x.dtype());
    case Reduction::SumSquare:
      return rcuda::to(rcuda::sum(rcuda::mul(x, x), dims, keepdims), x.dtype());
    default:
      break;
  }
  if (is_floating(x.dtype())) return reduce_floating(op, x, dims, keepdims);
  // Integer means, norms and logs: computed in float64, truncated back as ONNX's reference.
  return rcuda::to(reduce_floating(op, rcuda::to(x, DType::Float64), dims, keepdims), x.dtype());
}

struct ReduceAttrs {
  std::string where;
  Reduction op;
  bool keepdims;
  bool noop_with_empty_axes;
  bool axes_from_input;
  std::vector<int64_t> axes;  // the attribute's, when !axes_from_input
};

Kernel make_reduction(NodeReader& node, Reduction op, int axes_input_since) {
  ReduceAttrs attrs{node.where(), op, node.i("keepdims", 1) != 0, false, false, {}};
  if (node.version() >= axes_input_since) {
    attrs.axes_from_input = true;
    attrs.noop_with_empty_axes = node.i("noop_with_empty_axes", 0) != 0;
    if (node.has_input(1)) node.host_input(1);
  } else {
    attrs.axes = node.ints("axes", {});
  }
  return [attrs](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in.at(0);
    std::vector<int64_t> axes = attrs.axes;
    if (attrs.axes_from_input && in.size() > 1 && in[1].defined()) axes = host_ints(in[1]);
    if (axes.empty() && attrs.noop_with_empty_axes) return {reduce_nothing(attrs.op, x)};
    const std::vector<int64_t> dims =
        axes.empty() ? all_dims(x.dim()) : sorted_axes(attrs.where, axes, x.dim());
    if (dims.empty()) return {reduce_nothing(attrs.op, x)};  // a 0-dim input
    return {reduce_over(attrs.op, x, dims, attrs.keepdims)};
  };
}

template <Reduction op, int axes_input_since>
Kernel make_reduce(NodeReader& node) {
  return make_reduction(node, op, axes_input_since);
}

// ArgMax, ArgMin: int64 positions along `axis`, the first of tied values unless
// select_last_index, which takes the last (the first of the reversed axis, counted back).
Kernel make_arg_extreme(NodeReader& node, bool is_max) {
  const int64_t axis = node.i("axis", 0);
  const bool keepdims = node.i("keepdims", 1) != 0;
  const bool last = node.version() >= 12 && node.i("select_last_index", 0) != 0;
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    Tensor x = in.at(0);
    const int64_t d = normalize_axis(axis, x.dim(), where + ": axis");
    if (x.dtype() == DType::Bool) x = rcuda::to(x, DType::UInt8);
    if (last) x = reduce_detail::flip(x, d);
    Tensor index = is_max ? rcuda::argmax(x, d, keepdims) : rcuda::argmin(x, d, keepdims);
    if (last) index = rcuda::sub(rcuda::full_like(index, x.size(d) - 1), index);
    return {index};
  };
}

Kernel make_argmax(NodeReader& node) { return make_arg_extreme(node, true); }
Kernel make_argmin(NodeReader& node) { return make_arg_extreme(node, false); }

std::vector<ImportOp> own_ops() {
  constexpr int kAxesInput = 18;  // where every reduction but ReduceSum took axes as an input
  return {
      {"ReduceSum", make_reduce<Reduction::Sum, 13>},
      {"ReduceMean", make_reduce<Reduction::Mean, kAxesInput>},
      {"ReduceMax", make_reduce<Reduction::Max, kAxesInput>},
      {"ReduceMin", make_reduce<Reduction::Min, kAxesInput>},
      {"ReduceProd", make_reduce<Reduction::Prod, kAxesInput>},
      {"ReduceL1", make_reduce<Reduction::L1, kAxesInput>},
      {"ReduceL2", make_reduce<Reduction::L2, kAxesInput>},
      {"ReduceLogSum", make_reduce<Reduction::LogSum, kAxesInput>},
      {"ReduceLogSumExp", make_reduce<Reduction::LogSumExp, kAxesInput>},
      {"ReduceSumSquare", make_reduce<Reduction::SumSquare, kAxesInput>},
      {"ArgMax", make_argmax},
      {"ArgMin", make_argmin},
  };
}

}  // namespace

const std::vector<ImportOp>& reduce_ops() {
  static const std::vector<ImportOp> ops = [] {
    std::vector<ImportOp> all = own_ops();
    for (const auto& part :
         {reduce_axis_ops(), reduce_loss_ops(), reduce_linalg_ops(), norm_ops()}) {
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return ops;
}

}  // namespace rcuda::io::onnx_import
