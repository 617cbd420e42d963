// layer_norm forward and backward: argument checks, the [rows, cols] view the primitives take
// (contiguous; normalized dims flattened into cols), and the statistics' shapes.
#include <cmath>

#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/nn.h"

namespace rcuda::ops {
namespace {

DType stats_dtype(DType dtype) { return dtype == DType::Float64 ? DType::Float64 : DType::Float32; }

struct RowsView {
  int64_t rows = 1, cols = 1;
  Shape stats_shape;  // x's leading dims, then 1s
};

RowsView rows_view(const char* op, const Tensor& x, const Shape& normalized_shape) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  RCUDA_CHECK(k >= 1, ValueError, op, ": normalized_shape must have at least one dim");
  bool matches = x.dim() >= k;
  for (int64_t d = 0; matches && d < k; ++d)
    matches = x.shape()[x.dim() - k + d] == normalized_shape[d];
  RCUDA_CHECK(matches, ShapeError, op, ": normalized_shape ", shape_str(normalized_shape),
              " does not match the last dims of x, of shape ", shape_str(x.shape()));
  RowsView v;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const bool normalized = d >= x.dim() - k;
    (normalized ? v.cols : v.rows) *= x.shape()[d];
    v.stats_shape.push_back(normalized ? 1 : x.shape()[d]);
  }
  return v;
}

void check_affine(const char* op, const char* arg, const Tensor& t, const Tensor& x,
                  const Shape& normalized_shape) {
  if (!t.defined()) return;
  RCUDA_CHECK(t.shape() == normalized_shape, ShapeError, op, ": ", arg, " has shape ",
              shape_str(t.shape()), ", expected normalized_shape ", shape_str(normalized_shape));
  RCUDA_CHECK(t.dtype() == x.dtype(), DTypeError, op, ": ", arg, " is ", dtype_name(t.dtype()),
              " but x is ", dtype_name(x.dtype()));
  check_same_device(op, {x, t});
}

void check_input(const char* op, const Tensor& x) {
  check_not_float8(op, x);
  check_floating(op, "x", x);
}

Tensor flat(const Tensor& t, int64_t n) { return t.defined() ? contiguous(t).view({n}) : Tensor(); }

}  // namespace

LayerNormForward layer_norm_forward(const Tensor& x, const Shape& normalized_shape,
                                    const Tensor& weight, const Tensor& bias, double eps) {
  constexpr const char* kOp = "layer_norm";
  check_input(kOp, x);
  const RowsView v = rows_view(kOp, x, normalized_shape);
  check_affine(kOp, "weight", weight, x, normalized_shape);
  check_affine(kOp, "bias", bias, x, normalized_shape);
  RCUDA_CHECK(std::isfinite(eps) && eps >= 0, ValueError, kOp,
              ": eps must be finite and non-negative, got ", eps);
  const DType stats = stats_dtype(x.dtype());
  LayerNormForward r;
  r.out = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({v.rows}, stats, x.device());
  Tensor rstd = Tensor::empty({v.rows}, stats, x.device());
  if (v.rows > 0 && v.cols == 0) {  // the mean and variance of nothing
    fill_(mean, NAN);
    fill_(rstd, NAN);
  } else if (v.rows > 0) {
    backend_of(x).layer_norm(r.out.view({v.rows, v.cols}), mean, rstd,
                             contiguous(x).view({v.rows, v.cols}), flat(weight, v.cols),
                             flat(bias, v.cols), eps);
  }
  r.mean = mean.view(v.stats_shape);
  r.rstd = rstd.view(v.stats_shape);
  return r;
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  return layer_norm_forward(x, normalized_shape, weight, bias, eps).out;
}

LayerNormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& x,
                                   const Shape& normalized_shape, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& weight, const Tensor& bias,
                                   std::array<bool, 3> output_mask) {
  constexpr const char* kOp = "layer_norm_backward";
  check_input(kOp, x);
  const RowsView v = rows_view(kOp, x, normalized_shape);
  check_affine(kOp, "weight", weight, x, normalized_shape);
  check_affine(kOp, "bias", bias, x, normalized_shape);
  RCUDA_CHECK(grad_out.defined() && grad_out.shape() == x.shape(), ShapeError, kOp,
              ": grad_out must have x's shape ", shape_str(x.shape()), ", got ",
              grad_out.defined() ? shape_str(grad_out.shape()) : "undefined");
  RCUDA_CHECK(grad_out.dtype() == x.dtype(), DTypeError, kOp, ": grad_out is ",
              dtype_name(grad_out.dtype()), " but x is ", dtype_name(x.dtype()));
  const DType stats = stats_dtype(x.dtype());
  for (const Tensor* t : {&mean, &rstd}) {
    const char* name = t == &mean ? "mean" : "rstd";
    RCUDA_CHECK(t->defined() && t->numel() == v.rows, ShapeError, kOp, ": ", name, " must have ",
                v.rows, " elements (one per normalized row)");
    RCUDA_CHECK(t->dtype() == stats, DTypeError, kOp, ": ", name, " must be ", dtype_name(stats),
                " for ", dtype_name(x.dtype()), " input, got ", dtype_name(t->dtype()));
  }
  check_same_device(kOp, {x, grad_out, mean, rstd});

  LayerNormGrads g;
  if (output_mask[0]) g.grad_input = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (output_mask[1] && weight.defined())
    g.grad_weight = Tensor::empty(normalized_shape, x.dtype(), x.device());
  if (output_mask[2] && bias.defined())
    g.grad_bias = Tensor::empty(normalized_shape, x.dtype(), x.device());
  if (v.rows == 0 || v.cols == 0) {  // no rows: weight and bias gradients are sums of nothing
    if (g.grad_weight.defined()) fill_(g.grad_weight, 0);
    if (g.grad_bias.defined()) fill_(g.grad_bias, 0);
    return g;
  }
  if (!g.grad_input.defined() && !g.grad_weight.defined() && !g.grad_bias.defined()) return g;
  backend_of(x).layer_norm_backward(
      g.grad_input.defined() ? g.grad_input.view({v.rows, v.cols}) : Tensor(),
      g.grad_weight.defined() ? g.grad_weight.view({v.cols}) : Tensor(),
      g.grad_bias.defined() ? g.grad_bias.view({v.cols}) : Tensor(),
      contiguous(grad_out).view({v.rows, v.cols}), contiguous(x).view({v.rows, v.cols}),
      flat(mean, v.rows), flat(rstd, v.rows), flat(weight, v.cols));
  return g;
}

}  // namespace rcuda::ops
