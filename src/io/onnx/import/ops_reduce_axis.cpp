// ONNX import: the ops along one axis: Softmax, LogSoftmax, Hardmax, CumSum and TopK (kernel.h,
// Note [Kernels run the public ops]).
//
// Note [Softmax before opset 13]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Softmax, LogSoftmax and Hardmax before version 13 view the input as a matrix: the dims before
// `axis` (default 1) make its rows, `axis` and every dim after it its columns, and each row is
// normalised as one vector. From 13 on they normalise along `axis` (default -1) alone.
#include "io/onnx/import/kernel.h"
#include "io/onnx/import/ops_reduce.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import {
namespace {

// A row-wise function of the softmax family: `f(x, dim)` along dim, x of any rank.
using AlongAxis = Tensor (*)(const Tensor& x, int64_t dim);

// Runs f along `axis` as the version asks (Note [Softmax before opset 13]).
Kernel make_along_axis(NodeReader& node, AlongAxis f) {
  const bool as_matrix = node.version() < 13;
  const int64_t axis = node.i("axis", as_matrix ? 1 : -1);
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in.at(0);
    if (!as_matrix || x.dim() == 0) {
      return {f(x, normalize_axis(axis, x.dim() == 0 ? 1 : x.dim(), where + ": axis"))};
    }
    // axis == rank is allowed here: every dim is a row, each of one column.
    const int64_t d = axis < 0 ? axis + x.dim() : axis;
    RCUDA_CHECK(d >= 0 && d <= x.dim(), IndexError, where, ": axis ", axis,
                " is out of range for an input of rank ", x.dim());
    int64_t rows = 1;
    for (int64_t i = 0; i < d; ++i) rows *= x.size(i);
    const Tensor matrix = rcuda::reshape(x, {rows, rows == 0 ? 0 : x.numel() / rows});
    return {rcuda::reshape(f(matrix, 1), x.shape())};
  };
}

Tensor softmax_along(const Tensor& x, int64_t dim) { return rcuda::softmax(x, dim); }
Tensor log_softmax_along(const Tensor& x, int64_t dim) { return rcuda::log_softmax(x, dim); }

// 1 at the first largest value along dim, 0 elsewhere, in x's dtype.
Tensor hardmax_along(const Tensor& x, int64_t dim) {
  if (x.dim() == 0) return rcuda::ones_like(x);
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  if (x.numel() == 0) return rcuda::zeros_like(x);
  const Tensor winner = rcuda::argmax(x, d, true);
  Shape positions_shape(static_cast<size_t>(x.dim() - d), 1);
  positions_shape[0] = x.size(d);
  const Tensor positions =
      rcuda::arange(0, x.size(d), 1, DType::Int64, x.device()).view(positions_shape);
  return rcuda::to(rcuda::eq(winner, positions), x.dtype());
}

Kernel make_softmax(NodeReader& node) { return make_along_axis(node, softmax_along); }
Kernel make_log_softmax(NodeReader& node) { return make_along_axis(node, log_softmax_along); }
Kernel make_hardmax(NodeReader& node) { return make_along_axis(node, hardmax_along); }

// The one value of a host input such as CumSum's axis or TopK's k.
int64_t single_int(const Tensor& t, const std::string& where, const char* what) {
  const std::vector<int64_t> values = host_ints(t);
  RCUDA_CHECK(values.size() == 1, ValueError, where, ": ", what,
              " must hold one value, got a tensor of ", values.size());
  return values[0];
}

// x shifted one place along d: a zero first, the last element dropped (an exclusive scan).
Tensor shift_in_zero(const Tensor& x, int64_t d) {
  const int64_t n = x.size(d);
  if (n == 0) return x;
  Shape zero_shape = x.shape();
  zero_shape[static_cast<size_t>(d)] = 1;
  const Tensor zero = rcuda::zeros(zero_shape, TensorOptions(x.dtype(), x.device()));
  return rcuda::cat({zero, x.narrow(d, 0, n - 1)}, d);
}

Kernel make_cumsum(NodeReader& node) {
  const bool exclusive = node.i("exclusive", 0) != 0;
  const bool reverse = node.i("reverse", 0) != 0;
  node.host_input(1);
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in.at(0);
    const int64_t rank = x.dim() == 0 ? 1 : x.dim();
    const int64_t d = normalize_axis(single_int(in.at(1), where, "axis"), rank, where + ": axis");
    if (x.dim() == 0) return {x};
    const Tensor forward = reverse ? reduce_detail::flip(x, d) : x;
    // rcuda's integer cumsum is int64: back to the input's dtype, as ONNX.
    Tensor sums = rcuda::to(rcuda::cumsum(forward, d), x.dtype());
    if (exclusive) sums = shift_in_zero(sums, d);
    return {reverse ? reduce_detail::flip(sums, d) : sums};
  };
}

// TopK: the k largest (or smallest) along axis with their int64 positions, sorted; ties keep
// the lower position first (rcuda's sort is stable). sorted = 0 allows any order, so sorted
// results serve it too.
Kernel make_topk(NodeReader& node) {
  const int64_t axis = node.i("axis", -1);
  const bool k_from_input = node.version() >= 10;
  const int64_t k_attribute = k_from_input ? 0 : node.i("k");
  const bool largest = node.version() < 11 || node.i("largest", 1) != 0;
  if (k_from_input) node.host_input(1);
  const std::string where = node.where();
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in.at(0);
    const int64_t d = normalize_axis(axis, x.dim(), where + ": axis");
    const int64_t k = k_from_input ? single_int(in.at(1), where, "K") : k_attribute;
    RCUDA_CHECK(k >= 0 && k <= x.size(d), ValueError, where, ": K (", k,
                ") must be between 0 and the size of axis ", axis, " (", x.size(d), ")");
    auto [values, indices] = rcuda::topk(x, k, d, largest, true);
    return {values, indices};
  };
}

}  // namespace

std::vector<ImportOp> reduce_axis_ops() {
  return {
      {"Softmax", make_softmax}, {"LogSoftmax", make_log_softmax},
      {"Hardmax", make_hardmax}, {"CumSum", make_cumsum, 11},
      {"TopK", make_topk},
  };
}

}  // namespace rcuda::io::onnx_import
