// Gradients of reductions, softmax and cumsum (PyTorch's formulas of derivatives.yaml). Every
// formula is made of elementwise ops and reductions only, so on CUDA none reads a value back
// or waits for the device: where torch branches on the data (a zero in prod, a NaN maximum),
// the branch is a where() over both cases. They call formula:: ops, which record in a backward
// pass that creates a graph (Note [Gradients of gradients] in docs/autograd.md).
#include "reduction.h"

#include "../formula.h"

#include <algorithm>
#include <cmath>

#include "rcuda/core/error.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::autograd {
namespace {

// How many elements of the input each output element reduces.
int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& dims) {
  if (dims.empty()) return numel(shape);
  const int64_t n = static_cast<int64_t>(shape.size());
  int64_t count = 1;
  if (n == 0) return count;
  for (int64_t d : dims) count *= shape[wrap_dim(d, n, "reduction")];
  return count;
}

Tensor isnan(const Tensor& t) { return ops::ne(t, t); }

// Product of the other elements of each slice, without dividing by zero: with no zero in the
// slice it is prod / x; with one, the zero gets the product of the nonzero elements and the
// rest get 0; with two or more, everything gets 0.
Tensor prod_grad(const Tensor& g, const Tensor& x, const std::vector<int64_t>& dims) {
  const Tensor is_zero = ops::eq(x, 0.0);
  const Tensor zeros_in_slice = formula::sum(is_zero, dims, /*keepdim=*/true);
  const Tensor nonzero_x = formula::where(is_zero, 1.0, x);
  const Tensor nonzero_product = formula::prod(nonzero_x, dims, /*keepdim=*/true);
  const Tensor no_zero = formula::div(nonzero_product, nonzero_x);
  const Tensor the_zero = ops::logical_and(is_zero, ops::eq(zeros_in_slice, 1));
  const Tensor one_zero = formula::where(the_zero, nonzero_product, 0.0);
  return formula::mul(g, formula::where(ops::eq(zeros_in_slice, 0), no_zero, one_zero));
}

// max/min over dims: the gradient is shared evenly by the elements equal to the result (NaN
// meets NaN), as torch's evenly_distribute_backward and amax/amin.
Tensor extreme_grad(const Tensor& g, const Tensor& x, const Tensor& out,
                    const std::vector<int64_t>& dims) {
  const Tensor mask = ops::logical_or(ops::eq(x, out), ops::logical_and(isnan(x), isnan(out)));
  const Tensor count = formula::sum(mask, dims, /*keepdim=*/true);
  return formula::where(mask, formula::div(g, count), 0.0);
}

// d var / dx = 2 (x - mean) / (N - correction).
Tensor var_grad(const Tensor& g, const Tensor& x, const std::vector<int64_t>& dims,
                double correction) {
  const double dof = static_cast<double>(reduced_count(x.shape(), dims)) - correction;
  const Tensor centred = formula::sub(x, formula::mean(x, dims, /*keepdim=*/true));
  return formula::mul(formula::mul(g, 2.0 / dof), centred);
}

// torch's norm_backward, case by case in p; the subgradient at a zero norm is 0.
Tensor norm_grad(const Tensor& g, const Tensor& x, const Tensor& norm,
                 const std::vector<int64_t>& dims, double p) {
  const Tensor zero_norm = ops::eq(norm, 0.0);
  if (p == 0) return ops::zeros_like(x);  // the count of nonzeros is piecewise constant
  if (p == 1) return formula::mul(formula::sign(x), g);
  if (p == 2) return formula::mul(g, formula::where(zero_norm, 0.0, formula::div(x, norm)));
  const Tensor abs_x = formula::abs(x);
  if (std::isinf(p)) {
    // The maximum's gradient, shared by ties and NaNs as in extreme_grad.
    const Tensor mask = ops::logical_or(ops::eq(abs_x, norm), isnan(abs_x));
    const Tensor count = formula::sum(mask, dims, /*keepdim=*/true);
    return formula::mul(formula::sign(x), formula::where(mask, formula::div(g, count), 0.0));
  }
  if (p < 1) {
    // |x|^(p - 1) is infinite at 0, where the subgradient is taken as 0.
    const Tensor scaled = formula::mul(
        formula::sign(x), formula::where(ops::eq(x, 0.0), 0.0, formula::pow(abs_x, p - 1)));
    return formula::mul(formula::mul(scaled, g), formula::pow(norm, 1 - p));
  }
  const Tensor scaled = p < 2 ? formula::mul(formula::sign(x), formula::pow(abs_x, p - 1))
                              : formula::mul(x, formula::pow(abs_x, p - 2));
  const Tensor scale = formula::where(zero_norm, 0.0, formula::div(g, formula::pow(norm, p - 1)));
  return formula::mul(scaled, scale);
}

}  // namespace

Tensor unsqueeze_reduced(const Tensor& grad, const Shape& input_shape,
                         const std::vector<int64_t>& dims, bool keepdim) {
  const int64_t n = static_cast<int64_t>(input_shape.size());
  if (keepdim || n == 0) return grad;
  std::vector<int64_t> wrapped;
  if (dims.empty()) {
    for (int64_t d = 0; d < n; ++d) wrapped.push_back(d);
  } else {
    for (int64_t d : dims) wrapped.push_back(wrap_dim(d, n, "reduction"));
  }
  std::sort(wrapped.begin(), wrapped.end());
  Tensor g = grad;
  for (int64_t d : wrapped) g = g.unsqueeze(d);
  return g;
}

TensorList SumBackward::apply(TensorList&& grads) {
  const Shape& shape = input_meta()[0].shape();
  Tensor g = unsqueeze_reduced(grads[0], shape, dims, keepdim);
  if (mean) g = formula::div(g, static_cast<double>(reduced_count(shape, dims)));
  return {g.expand(shape)};
}

const char* ReductionBackward::name() const {
  switch (kind) {
    case ReductionKind::Prod:
      return "ProdBackward";
    case ReductionKind::Max:
      return "MaxBackward";
    case ReductionKind::Min:
      return "MinBackward";
    case ReductionKind::Var:
      return "VarBackward";
    case ReductionKind::Std:
      return "StdBackward";
    case ReductionKind::Norm:
      return "NormBackward";
    case ReductionKind::Logsumexp:
      return "LogsumexpBackward";
  }
  return "ReductionBackward";
}

TensorList ReductionBackward::apply(TensorList&& grads) {
  const Tensor xv = x.unpack(*this);
  const Shape& shape = xv.shape();
  const Tensor g = unsqueeze_reduced(grads[0], shape, dims, keepdim);
  // The result in keepdim form, for the formulas that read it.
  const auto result = [&] { return unsqueeze_reduced(out.unpack(*this), shape, dims, keepdim); };
  switch (kind) {
    case ReductionKind::Prod:
      return {prod_grad(g, xv, dims)};
    case ReductionKind::Max:
    case ReductionKind::Min:
      return {extreme_grad(g, xv, result(), dims)};
    case ReductionKind::Var:
      return {var_grad(g, xv, dims, correction)};
    case ReductionKind::Std: {
      // d std = d var / (2 std); 0 where std is 0, as torch.
      const Tensor s = result();
      const Tensor g_var =
          formula::where(ops::eq(s, 0.0), 0.0, formula::div(g, formula::mul(s, 2.0)));
      return {var_grad(g_var, xv, dims, correction)};
    }
    case ReductionKind::Norm:
      return {norm_grad(g, xv, result(), dims, p)};
    case ReductionKind::Logsumexp:
      return {formula::mul(g, formula::exp(formula::sub(xv, result())))};
  }
  throw InternalError("internal error in autograd: ReductionBackward of an unknown kind");
}

// The gradient goes where the index points: a comparison of each position along dim with the
// index, rather than a scatter, so that no index is bounds-checked on the host.
TensorList ArgReduceBackward::apply(TensorList&& grads) {
  const Tensor& grad = grads[0];
  if (!grad.defined()) return {Tensor()};
  const InputMeta& meta = input_meta(0);
  const int64_t n = static_cast<int64_t>(meta.sizes.size());
  if (n == 0) return {grad};
  const int64_t d = wrap_dim(dim, n, is_max ? "max" : "min");
  const Tensor g = keepdim ? grad : grad.unsqueeze(d);
  const Tensor index = keepdim ? indices.unpack(*this) : indices.unpack(*this).unsqueeze(d);
  Shape along(static_cast<size_t>(n), 1);
  along[d] = meta.sizes[d];
  const Tensor positions = ops::arange(0, meta.sizes[d], 1, DType::Int64, meta.device).view(along);
  return {formula::where(ops::eq(positions, index), g, 0.0)};
}

TensorList SoftmaxBackward::apply(TensorList&& grads) {
  const Tensor& g = grads[0];
  const Tensor y = out.unpack(*this);
  if (log)
    return {
        formula::sub(g, formula::mul(formula::exp(y), formula::sum(g, {dim}, /*keepdim=*/true)))};
  return {
      formula::mul(y, formula::sub(g, formula::sum(formula::mul(g, y), {dim}, /*keepdim=*/true)))};
}

// The cumulative sum from the far end, as total - cumsum + g: torch flips, cumsums and flips
// back, but a flip here would be an index_select, which checks its indices on the host. Half
// types work in float32 so that the subtraction does not lose the small tail sums.
TensorList CumsumBackward::apply(TensorList&& grads) {
  const DType dtype = grads[0].dtype();
  const Tensor g = is_reduced_float(dtype) ? formula::to(grads[0], DType::Float32) : grads[0];
  const Tensor total = formula::sum(g, {dim}, /*keepdim=*/true);
  return {formula::add(formula::sub(total, formula::cumsum(g, dim)), g)};
}

}  // namespace rcuda::autograd
