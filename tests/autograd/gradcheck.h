// Gradient checks: the analytic gradient that autograd computes against float64 central
// differences of the same function (flashlight's Jacobian tests, ggml's gradient mode).
//
// How to check an op's gradient:
//   expect_gradcheck([](const TensorList& x) { return mul(x[0], x[1]); },
//                    {leaf({3, 4}), leaf({4})});          // broadcasting
// `leaf` makes a float64 CPU leaf of fresh random values; `leaf_transposed` a non-contiguous
// one. The checked scalar is sum(f(x) * w) with fixed random weights w, so every output element
// counts with a different weight.
#pragma once

#include <functional>

#include "support/reference.h"

namespace rcuda::test {

using autograd::TensorList;

inline Tensor leaf(const Shape& shape, double low = -2, double high = 2) {
  Tensor t = random_tensor(shape, DType::Float64, low, high);
  t.requires_grad_();
  return t;
}

// A function of one leaf to check, and the range its input is drawn from: inside the domain,
// away from kinks where possible (the table-driven gradient tests).
struct GradCase {
  const char* name;
  std::function<Tensor(const TensorList&)> f;
  double low, high;
};

// A non-contiguous leaf: the transpose of a contiguous buffer (shape given as the result's).
inline Tensor leaf_transposed(const Shape& shape, double low = -2, double high = 2) {
  Tensor t = transposed_copy(random_tensor(shape, DType::Float64, low, high));
  t.requires_grad_();
  return t;
}

// The address of element `flat` (row-major order) of a CPU float64 tensor, through its strides.
inline double* element_address(const Tensor& t, int64_t flat) {
  int64_t off = t.offset();
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    off += (flat % t.shape()[d]) * t.strides()[d];
    flat /= t.shape()[d];
  }
  return static_cast<double*>(t.storage()->data()) + off;
}

inline double weighted_sum(const Tensor& out, const std::vector<double>& w) {
  const std::vector<double> v = to_doubles(out);
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}

// Checks every input's gradient element by element; inputs that do not require grad are
// treated as constants. Tolerance: |analytic - numeric| <= tol * max(1, |numeric|).
inline ::testing::AssertionResult gradcheck(const std::function<Tensor(const TensorList&)>& f,
                                            const TensorList& inputs, double eps = 1e-6,
                                            double tol = 1e-6) {
  const Tensor out = f(inputs);
  std::vector<double> w(static_cast<size_t>(out.numel()));
  std::uniform_real_distribution<double> weight(0.5, 1.5);
  for (double& x : w) x = weight(rng());
  TensorList wrt;
  for (const Tensor& x : inputs)
    if (x.requires_grad()) wrt.push_back(x);
  if (!out.requires_grad()) return ::testing::AssertionFailure() << "output requires no grad";
  const Tensor loss = sum(mul(out, tensor_of(w, out.shape(), out.dtype())));
  const TensorList grads = autograd::grad({loss}, wrt, {}, false, /*allow_unused=*/true);
  NoGradGuard no_grad;
  for (size_t i = 0; i < wrt.size(); ++i) {
    const Tensor& x = wrt[i];
    const std::vector<double> analytic =
        grads[i].defined() ? to_doubles(grads[i]) : std::vector<double>(x.numel(), 0.0);
    if (grads[i].defined() && grads[i].shape() != x.shape())
      return ::testing::AssertionFailure()
             << "input " << i << ": gradient of shape " << shape_str(grads[i].shape())
             << " for shape " << shape_str(x.shape());
    for (int64_t j = 0; j < x.numel(); ++j) {
      double* p = element_address(x, j);
      const double saved = *p;
      *p = saved + eps;
      const double up = weighted_sum(f(inputs), w);
      *p = saved - eps;
      const double down = weighted_sum(f(inputs), w);
      *p = saved;
      const double numeric = (up - down) / (2 * eps);
      if (std::fabs(analytic[j] - numeric) > tol * std::max(1.0, std::fabs(numeric)))
        return ::testing::AssertionFailure() << "input " << i << " element " << j << ": analytic "
                                             << analytic[j] << " vs numeric " << numeric;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace rcuda::test

namespace rcuda::test {

// Second derivatives (PyTorch's gradgradcheck): the Hessian-vector product that a backward pass
// with create_graph gives, grad(<grad(L, x), v>, x), against float64 central differences of
// the first derivative <grad(L, x), v> computed by a plain backward. L = sum(w1 * f + w2 * f^2)
// with fixed random weights, so that the gradient reaching f's node depends on x too (the
// second derivative flows through it, as in a gradient penalty). Also checks that the gradient
// made with create_graph equals the plain one.
inline ::testing::AssertionResult gradgradcheck(const std::function<Tensor(const TensorList&)>& f,
                                                const TensorList& inputs, double eps = 1e-5,
                                                double tol = 1e-6) {
  const Tensor out0 = f(inputs);
  if (!out0.requires_grad()) return ::testing::AssertionFailure() << "output requires no grad";
  std::uniform_real_distribution<double> weight(0.5, 1.5), direction(-1, 1);
  std::vector<double> w1(static_cast<size_t>(out0.numel())), w2(w1.size());
  for (double& x : w1) x = weight(rng());
  for (double& x : w2) x = weight(rng());
  const Tensor w1t = tensor_of(w1, out0.shape(), out0.dtype());
  const Tensor w2t = tensor_of(w2, out0.shape(), out0.dtype());
  TensorList wrt, v;
  for (const Tensor& x : inputs) {
    if (!x.requires_grad()) continue;
    wrt.push_back(x);
    std::vector<double> d(static_cast<size_t>(x.numel()));
    for (double& e : d) e = direction(rng());
    v.push_back(tensor_of(d, x.shape(), x.dtype()));
  }
  const auto loss = [&] {
    const Tensor out = f(inputs);
    return add(sum(mul(out, w1t)), sum(mul(mul(out, out), w2t)));
  };
  // <grad(L, x), v> from the gradients `grads`.
  const auto project = [&](const TensorList& grads) {
    Tensor total;
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) continue;
      const Tensor term = sum(mul(grads[i], v[i]));
      total = total.defined() ? add(total, term) : term;
    }
    return total;
  };
  const TensorList first = autograd::grad({loss()}, wrt, {}, false, /*allow_unused=*/true,
                                          /*create_graph=*/true);
  const TensorList plain = autograd::grad({loss()}, wrt, {}, false, /*allow_unused=*/true);
  for (size_t i = 0; i < first.size(); ++i) {
    if (first[i].defined() != plain[i].defined())
      return ::testing::AssertionFailure() << "input " << i << ": create_graph changes definedness";
    if (!first[i].defined()) continue;
    ::testing::AssertionResult same = all_close(to_doubles(first[i]), to_doubles(plain[i]), 1e-10);
    if (!same) return same << " (input " << i << ": first derivative with create_graph)";
  }
  const Tensor projected = project(first);
  TensorList hv(wrt.size());
  if (projected.defined() && projected.requires_grad())
    hv = autograd::grad({projected}, wrt, {}, false, /*allow_unused=*/true);
  const auto first_derivative = [&] {
    const TensorList g = autograd::grad({loss()}, wrt, {}, false, /*allow_unused=*/true);
    const Tensor p = project(g);
    return p.defined() ? to_doubles(p)[0] : 0.0;
  };
  for (size_t i = 0; i < wrt.size(); ++i) {
    const Tensor& x = wrt[i];
    const std::vector<double> analytic =
        hv[i].defined() ? to_doubles(hv[i]) : std::vector<double>(x.numel(), 0.0);
    for (int64_t j = 0; j < x.numel(); ++j) {
      double* p = element_address(x, j);
      const double saved = *p;
      *p = saved + eps;
      const double up = first_derivative();
      *p = saved - eps;
      const double down = first_derivative();
      *p = saved;
      const double numeric = (up - down) / (2 * eps);
      if (std::fabs(analytic[j] - numeric) > tol * std::max(1.0, std::fabs(numeric)))
        return ::testing::AssertionFailure()
               << "input " << i << " element " << j << ": second derivative " << analytic[j]
               << " vs numeric " << numeric;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace rcuda::test
