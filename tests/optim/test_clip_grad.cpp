// clip_grad_norm_ and clip_grad_value_ against double-precision references of torch's
// definitions, on fresh random gradients of several shapes (empty, 0-dim, non-contiguous),
// float32 and float64, fused (foreach) and per-tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "support/reference.h"

namespace rcuda {
namespace {

using test::all_close;
using test::error_message;
using test::random_tensor;
using test::to_doubles;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Parameters with gradients of the given shapes (transposed where 2-D), plus one without.
std::vector<Tensor> params_with_grads(DType dtype, double low = -2, double high = 2) {
  std::vector<Tensor> params;
  for (const Shape& s : std::vector<Shape>{{3, 4}, {7}, {}, {0}, {2, 3, 5}, {40, 30}}) {
    Tensor p = random_tensor(s, dtype);
    Tensor g = random_tensor(s, dtype, low, high);
    if (g.dim() == 2) g = test::transposed_copy(g);
    p.set_grad(g);
    params.push_back(p);
  }
  params.push_back(random_tensor({4}, dtype));  // no gradient: skipped
  return params;
}

double reference_norm(const std::vector<std::vector<double>>& grads, double p) {
  double acc = 0;
  for (const auto& g : grads)
    for (double x : g)
      acc = std::isinf(p) ? std::max(acc, std::fabs(x)) : acc + std::pow(std::fabs(x), p);
  return std::isinf(p) ? acc : std::pow(acc, 1.0 / p);
}

std::vector<std::vector<double>> grads_of(const std::vector<Tensor>& params) {
  std::vector<std::vector<double>> out;
  for (const Tensor& p : params)
    if (p.grad().defined()) out.push_back(to_doubles(p.grad()));
  return out;
}

TEST(OptimClipGradNorm, MatchesReference) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (double p : {1.0, 2.0, kInf, 3.0}) {
      for (bool foreach : {true, false}) {
        for (double max_norm : {0.5, 1e6}) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " p=" + std::to_string(p) +
                       (foreach ? " foreach" : " per-tensor") +
                       " max_norm=" + std::to_string(max_norm));
          const std::vector<Tensor> params = params_with_grads(dtype);
          const auto before = grads_of(params);
          const uint64_t version = params[0].grad().storage()->version();
          const double expected = reference_norm(before, p);
          const Tensor total = optim::clip_grad_norm_(params, max_norm, p, false, foreach);
          EXPECT_EQ(total.dim(), 0);
          EXPECT_EQ(total.dtype(), dtype);
          EXPECT_TRUE(total.device().is_cpu());
          const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
          EXPECT_TRUE(all_close(to_doubles(total), {expected}, tol));
          const double coefficient = std::min(1.0, max_norm / (expected + 1e-6));
          const auto after = grads_of(params);
          for (size_t i = 0; i < before.size(); ++i) {
            std::vector<double> scaled = before[i];
            for (double& x : scaled) x *= coefficient;
            EXPECT_TRUE(all_close(after[i], scaled, tol)) << "gradient " << i;
          }
          EXPECT_GT(params[0].grad().storage()->version(), version);
        }
      }
    }
  }
}

TEST(OptimClipGradNorm, MixedDtypesPromote) {
  Tensor a = random_tensor({5}, DType::Float32), b = random_tensor({3}, DType::Float64);
  a.set_grad(random_tensor({5}, DType::Float32));
  b.set_grad(random_tensor({3}, DType::Float64));
  const double expected = reference_norm(grads_of({a, b}), 2);
  const Tensor total = optim::clip_grad_norm_({a, b}, 1e9);
  EXPECT_EQ(total.dtype(), DType::Float64);
  EXPECT_TRUE(all_close(to_doubles(total), {expected}, 1e-12));
}

TEST(OptimClipGradNorm, NoGradientsGiveZero) {
  const Tensor a = random_tensor({5}, DType::Float64);
  const Tensor total = optim::clip_grad_norm_({a}, 1.0);
  EXPECT_EQ(total.dim(), 0);
  EXPECT_EQ(to_doubles(total), std::vector<double>{0});
  EXPECT_EQ(to_doubles(optim::clip_grad_norm_({}, 1.0)), std::vector<double>{0});
}

TEST(OptimClipGradNorm, NonFiniteNorms) {
  for (bool foreach : {true, false}) {
    Tensor a = random_tensor({4}, DType::Float32);
    a.set_grad(test::tensor_of({1, kNaN, 2, 3}, {4}, DType::Float32));
    const std::vector<double> before = to_doubles(a.grad());
    EXPECT_THROW(optim::clip_grad_norm_({a}, 1.0, 2, true, foreach), ValueError);
    const std::string message = error_message([&] { optim::clip_grad_norm_({a}, 1.0, 2, true); });
    EXPECT_NE(message.find("clip_grad_norm_: the total norm of order 2 of the gradients is nan"),
              std::string::npos)
        << message;
    EXPECT_TRUE(all_close(to_doubles(a.grad()), before, 0));  // untouched
    // Without the check, the NaN norm spreads to every gradient, as torch.
    const Tensor total = optim::clip_grad_norm_({a}, 1.0, 2, false, foreach);
    EXPECT_TRUE(std::isnan(to_doubles(total)[0]));
    for (double x : to_doubles(a.grad())) EXPECT_TRUE(std::isnan(x));
  }
  Tensor b = random_tensor({2}, DType::Float64);
  b.set_grad(test::tensor_of({kInf, 1}, {2}, DType::Float64));
  EXPECT_THROW(optim::clip_grad_norm_({b}, 1.0, kInf, true), ValueError);
}

TEST(OptimClipGradNorm, Checks) {
  const Tensor a = random_tensor({2}, DType::Float32);
  a.set_grad(random_tensor({2}, DType::Float32));
  EXPECT_THROW(optim::clip_grad_norm_({a}, 1.0, 0), ValueError);
  EXPECT_THROW(optim::clip_grad_norm_({a}, 1.0, -2), ValueError);
  EXPECT_THROW(optim::clip_grad_norm_({a}, 1.0, kNaN), ValueError);
  EXPECT_THROW(optim::clip_grad_norm_({a, Tensor()}, 1.0), ValueError);
}

TEST(OptimClipGradValue, ClampsEveryGradient) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const std::vector<Tensor> params = params_with_grads(dtype);
    const auto before = grads_of(params);
    optim::clip_grad_value_(params, 0.75);
    const auto after = grads_of(params);
    for (size_t i = 0; i < before.size(); ++i) {
      std::vector<double> clamped = before[i];
      for (double& x : clamped) x = std::min(0.75, std::max(-0.75, x));
      EXPECT_EQ(after[i], clamped) << "gradient " << i;
    }
  }
}

}  // namespace
}  // namespace rcuda
