// Regression losses, binary cross-entropy (on probabilities and on logits) and kl_div against
// double-precision loops for every reduction, their gradients, and their errors.
#include <cmath>

#include "nn/nn_test_util.h"

namespace rcuda::test {
namespace {

const std::vector<std::string> kReductions = {"none", "mean", "sum"};

using Loss = std::function<Tensor(const Tensor&, const Tensor&, const std::string&)>;
using ElementRef = std::function<double(double, double)>;

struct Regression {
  const char* name;
  Loss f;
  ElementRef reference;
};

double smooth_l1_ref(double d, double beta) {
  const double a = std::fabs(d);
  return beta == 0 ? a : a < beta ? 0.5 * d * d / beta : a - 0.5 * beta;
}
double huber_ref(double d, double delta) {
  const double a = std::fabs(d);
  return a < delta ? 0.5 * d * d : delta * (a - 0.5 * delta);
}

std::vector<Regression> regressions() {
  return {
      {"mse_loss", [](auto& x, auto& t, auto& r) { return nn::mse_loss(x, t, r); },
       [](double x, double t) { return (x - t) * (x - t); }},
      {"l1_loss", [](auto& x, auto& t, auto& r) { return nn::l1_loss(x, t, r); },
       [](double x, double t) { return std::fabs(x - t); }},
      {"smooth_l1_loss", [](auto& x, auto& t, auto& r) { return nn::smooth_l1_loss(x, t, r); },
       [](double x, double t) { return smooth_l1_ref(x - t, 1.0); }},
      {"smooth_l1_loss beta 0.5",
       [](auto& x, auto& t, auto& r) { return nn::smooth_l1_loss(x, t, r, 0.5); },
       [](double x, double t) { return smooth_l1_ref(x - t, 0.5); }},
      {"smooth_l1_loss beta 0",
       [](auto& x, auto& t, auto& r) { return nn::smooth_l1_loss(x, t, r, 0.0); },
       [](double x, double t) { return smooth_l1_ref(x - t, 0.0); }},
      {"huber_loss", [](auto& x, auto& t, auto& r) { return nn::huber_loss(x, t, r); },
       [](double x, double t) { return huber_ref(x - t, 1.0); }},
      {"huber_loss delta 0.3",
       [](auto& x, auto& t, auto& r) { return nn::huber_loss(x, t, r, 0.3); },
       [](double x, double t) { return huber_ref(x - t, 0.3); }},
  };
}

// f(x, t) elementwise over the broadcast shape of x and t, then reduced.
std::vector<double> elementwise_reference(const Tensor& x, const Tensor& t,
                                          const std::string& reduction,
                                          const std::function<double(int64_t, double, double)>& f) {
  const Shape shape = broadcast_shapes(x.shape(), t.shape(), "reference");
  const std::vector<double> xv = to_doubles(x), tv = to_doubles(t);
  std::vector<double> losses;
  for (int64_t i = 0; i < numel(shape); ++i)
    losses.push_back(
        f(i, broadcast_at(xv, x.shape(), shape, i), broadcast_at(tv, t.shape(), shape, i)));
  return reduce_reference(losses, reduction);
}

TEST(NnRegressionLoss, EveryReductionWithBroadcastingAndLayouts) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{4}, {3, 4}}, {{2, 1, 3}, {4, 1}}};
  for (const Regression& loss : regressions()) {
    for (DType dtype : floating_dtypes()) {
      for (const std::string& reduction : kReductions) {
        SCOPED_TRACE(std::string(loss.name) + " " + dtype_name(dtype) + " " + reduction);
        auto ref = [&](int64_t, double x, double t) { return loss.reference(x, t); };
        for (const auto& [xs, ts] : shapes) {
          const Tensor x = random_tensor(xs, dtype, -3, 3), t = random_tensor(ts, dtype, -3, 3);
          const Tensor out = loss.f(x, t, reduction);
          EXPECT_EQ(out.dtype(), dtype);
          EXPECT_EQ(out.shape(), reduction == "none" ? broadcast_shapes(xs, ts, "") : Shape{});
          EXPECT_TRUE(all_close(to_doubles(out), elementwise_reference(x, t, reduction, ref),
                                loss_tolerance(dtype)));
        }
        const Tensor xt = transposed_copy(random_tensor({5, 3}, dtype, -3, 3));
        const Tensor tt = transposed_copy(random_tensor({5, 3}, dtype, -3, 3));
        EXPECT_TRUE(all_close(to_doubles(loss.f(xt, tt, reduction)),
                              elementwise_reference(xt, tt, reduction, ref),
                              loss_tolerance(dtype)));
        const Tensor empty = Tensor::empty({0, 3}, dtype);
        EXPECT_TRUE(all_close(to_doubles(loss.f(empty, empty, reduction)),
                              reduce_reference({}, reduction), 0));
      }
    }
  }
}

TEST(NnRegressionLoss, Errors) {
  const Tensor x = random_tensor({3, 4}, DType::Float32);
  for (const Regression& loss : regressions()) {
    SCOPED_TRACE(loss.name);
    const std::string name = std::string(loss.name).substr(0, std::string(loss.name).find(' '));
    EXPECT_THROW(loss.f(x, x, "avg"), ValueError);
    EXPECT_TRUE(mentions(error_message([&] { loss.f(x, x, "avg"); }),
                         {name, "reduction", "\"avg\"", "\"none\", \"mean\" or \"sum\""}));
    EXPECT_THROW(loss.f(x, random_tensor({5}, DType::Float32), "mean"), ShapeError);
    EXPECT_TRUE(
        mentions(error_message([&] { loss.f(x, random_tensor({5}, DType::Float32), "mean"); }),
                 {name, "[3, 4]", "[5]"}));
    EXPECT_THROW(
        loss.f(tensor_of({1, 2}, {2}, DType::Int64), random_tensor({2}, DType::Float32), "mean"),
        DTypeError);
    EXPECT_TRUE(mentions(
        error_message([&] {
          loss.f(random_tensor({2}, DType::Float32), tensor_of({1, 2}, {2}, DType::Int64), "mean");
        }),
        {name, "target", "int64"}));
  }
  EXPECT_THROW(nn::smooth_l1_loss(x, x, "mean", -1), ValueError);
  EXPECT_TRUE(mentions(error_message([&] { nn::smooth_l1_loss(x, x, "mean", -1); }),
                       {"smooth_l1_loss", "beta", "-1"}));
  EXPECT_THROW(nn::huber_loss(x, x, "mean", 0), ValueError);
  EXPECT_TRUE(mentions(error_message([&] { nn::huber_loss(x, x, "mean", 0); }),
                       {"huber_loss", "delta", "0"}));
}

TEST(NnRegressionLossGrad, MseLossInputAndTarget) {
  for (const std::string& reduction : kReductions) {
    SCOPED_TRACE(reduction);
    auto f = [&](const TensorList& t) { return nn::mse_loss(t[0], t[1], reduction); };
    EXPECT_TRUE(gradcheck(f, {leaf({3, 4}), leaf({3, 4})}));
    EXPECT_TRUE(gradcheck(f, {leaf_transposed({4, 3}), leaf({3})}));
  }
}

TEST(NnRegressionLossGrad, LossesOfAbsoluteDifferences) {
  for (const Regression& loss : regressions()) {
    for (const std::string& reduction : kReductions) {
      SCOPED_TRACE(std::string(loss.name) + " " + reduction);
      auto f = [&](const TensorList& t) { return loss.f(t[0], t[1], reduction); };
      EXPECT_TRUE(gradcheck(f, {leaf({3, 4}), leaf({3, 4})}));
      EXPECT_TRUE(gradcheck(f, {leaf_transposed({4, 3}), leaf({3})}));
    }
  }
}

// ---- binary cross-entropy ----------------------------------------------------------------

double bce_ref(double x, double t) {
  const double log_x = std::fmax(std::log(x), -100.0), log_1mx = std::fmax(std::log1p(-x), -100.0);
  return -(t * log_x + (1 - t) * log_1mx);
}

double bce_logits_ref(double x, double t, double pos_weight) {
  const double log_sigmoid_neg = std::log1p(std::exp(-std::fabs(x))) + std::fmax(-x, 0.0);
  return (1 - t) * x + (1 + (pos_weight - 1) * t) * log_sigmoid_neg;
}

TEST(NnBinaryCrossEntropy, EveryReductionWithWeightsAndClampedLogs) {
  for (DType dtype : floating_dtypes()) {
    for (const std::string& reduction : kReductions) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + reduction);
      std::vector<double> probs = to_doubles(random_tensor({3, 4}, DType::Float64, 0, 1));
      probs[0] = 0, probs[5] = 1, probs[7] = 1e-50;  // clamped at -100 (1e-50 underflows float32)
      const Tensor x = tensor_of(probs, {3, 4}, dtype);
      const Tensor t = random_tensor({3, 4}, dtype, 0, 1);
      const Tensor w = random_tensor({4}, dtype, 0.5, 2);
      const std::vector<double> wv = to_doubles(w);
      EXPECT_TRUE(
          all_close(to_doubles(nn::binary_cross_entropy(x, t, Tensor(), reduction)),
                    elementwise_reference(
                        x, t, reduction, [](int64_t, double a, double b) { return bce_ref(a, b); }),
                    loss_tolerance(dtype)));
      EXPECT_TRUE(all_close(to_doubles(nn::binary_cross_entropy(x, t, w, reduction)),
                            elementwise_reference(x, t, reduction,
                                                  [&](int64_t i, double a, double b) {
                                                    return wv[i % 4] * bce_ref(a, b);
                                                  }),
                            loss_tolerance(dtype)));
      const Tensor xt = transposed_copy(random_tensor({4, 3}, dtype, 0.01, 0.99));
      const Tensor tt = transposed_copy(random_tensor({4, 3}, dtype, 0, 1));
      EXPECT_TRUE(all_close(
          to_doubles(nn::binary_cross_entropy(xt, tt, Tensor(), reduction)),
          elementwise_reference(xt, tt, reduction,
                                [](int64_t, double a, double b) { return bce_ref(a, b); }),
          loss_tolerance(dtype)));
    }
  }
}

TEST(NnBinaryCrossEntropy, WithLogitsIsStableForLargeLogits) {
  for (DType dtype : floating_dtypes()) {
    for (const std::string& reduction : kReductions) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + reduction);
      // The stable form adds (1 - t) x to (1 + (pos_weight - 1) t) (log1p(exp(-|x|)) + max(-x, 0)):
      // terms up to about |x| * pos_weight that cancel, each rounded in the input's dtype. So
      // float16/bfloat16 take logits in [-3, 3] and a tolerance for a sum of terms up to about
      // 24 (weights included) rather than of the result; wider dtypes take large logits too.
      const bool reduced = is_reduced_float(dtype);
      std::vector<double> logits =
          to_doubles(random_tensor({3, 4}, DType::Float64, reduced ? -3 : -6, reduced ? 3 : 6));
      logits[2] = 0;
      if (!reduced) logits[0] = 80, logits[1] = -80, logits[3] = 500;
      const double tol = reduced ? 16 * tolerance(dtype) : loss_tolerance(dtype);
      const Tensor x = tensor_of(logits, {3, 4}, dtype);
      const Tensor t = random_tensor({3, 4}, dtype, 0, 1);
      const Tensor w = random_tensor({3, 1}, dtype, 0.5, 2), pw = random_tensor({4}, dtype, 0.5, 3);
      const std::vector<double> wv = to_doubles(w), pwv = to_doubles(pw);
      EXPECT_TRUE(all_close(
          to_doubles(nn::binary_cross_entropy_with_logits(x, t, Tensor(), reduction)),
          elementwise_reference(
              x, t, reduction, [](int64_t, double a, double b) { return bce_logits_ref(a, b, 1); }),
          tol));
      EXPECT_TRUE(
          all_close(to_doubles(nn::binary_cross_entropy_with_logits(x, t, w, reduction, pw)),
                    elementwise_reference(x, t, reduction,
                                          [&](int64_t i, double a, double b) {
                                            return wv[i / 4] * bce_logits_ref(a, b, pwv[i % 4]);
                                          }),
                    tol));
    }
  }
}

TEST(NnBinaryCrossEntropy, Errors) {
  const Tensor x = random_tensor({3, 4}, DType::Float32, 0, 1);
  EXPECT_THROW(nn::binary_cross_entropy(x, random_tensor({4}, DType::Float32, 0, 1)), ShapeError);
  EXPECT_TRUE(mentions(
      error_message([&] { nn::binary_cross_entropy(x, random_tensor({4}, DType::Float32, 0, 1)); }),
      {"binary_cross_entropy", "target", "[4]", "[3, 4]"}));
  EXPECT_THROW(nn::binary_cross_entropy(x, x, random_tensor({5}, DType::Float32)), ShapeError);
  EXPECT_TRUE(mentions(
      error_message([&] { nn::binary_cross_entropy(x, x, random_tensor({5}, DType::Float32)); }),
      {"binary_cross_entropy", "weight", "[5]"}));
  const Tensor outside = tensor_of({0.5, 1.5}, {2}, DType::Float32);
  EXPECT_THROW(nn::binary_cross_entropy(outside, outside), ValueError);
  EXPECT_TRUE(mentions(error_message([&] { nn::binary_cross_entropy(outside, outside); }),
                       {"binary_cross_entropy", "[0, 1]", "1.5"}));
  EXPECT_THROW(nn::binary_cross_entropy(x, x, Tensor(), "avg"), ValueError);
  EXPECT_THROW(nn::binary_cross_entropy_with_logits(x, x, Tensor(), "mean",
                                                    random_tensor({5}, DType::Float32)),
               ShapeError);
  EXPECT_TRUE(mentions(error_message([&] {
                         nn::binary_cross_entropy_with_logits(x, x, Tensor(), "mean",
                                                              random_tensor({5}, DType::Float32));
                       }),
                       {"binary_cross_entropy_with_logits", "pos_weight", "[5]"}));
  EXPECT_THROW(nn::binary_cross_entropy_with_logits(x, random_tensor({3, 1}, DType::Float32)),
               ShapeError);
  EXPECT_THROW(nn::binary_cross_entropy_with_logits(tensor_of({1}, {1}, DType::Int64), x),
               DTypeError);
}

TEST(NnBinaryCrossEntropyGrad, InputTargetWeights) {
  for (const std::string& reduction : kReductions) {
    SCOPED_TRACE(reduction);
    EXPECT_TRUE(gradcheck(
        [&](const TensorList& t) { return nn::binary_cross_entropy(t[0], t[1], t[2], reduction); },
        {leaf({3, 4}, 0.05, 0.95), leaf({3, 4}, 0, 1),
         random_tensor({4}, DType::Float64, 0.5, 2)}));
    EXPECT_TRUE(gradcheck(
        [&](const TensorList& t) {
          return nn::binary_cross_entropy_with_logits(t[0], t[1], t[2], reduction, t[3]);
        },
        {leaf_transposed({4, 3}, -4, 4), leaf({4, 3}, 0, 1), leaf({3}, 0.5, 2),
         leaf({3}, 0.5, 3)}));
  }
  // At logit 0 the gradient is sigmoid(0) - t (no kink of |x| leaks into it).
  const Tensor x = tensor_of({0, 0}, {2}, DType::Float64).requires_grad_();
  autograd::backward(nn::binary_cross_entropy_with_logits(
      x, tensor_of({1, 0.25}, {2}, DType::Float64), Tensor(), "sum"));
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {-0.5, 0.25}, 1e-15));
}

// ---- kl_div ----------------------------------------------------------------------------

TEST(NnKlDiv, EveryReductionIncludingBatchmeanAndLogTargets) {
  for (DType dtype : floating_dtypes()) {
    for (const std::string reduction : {"none", "mean", "sum", "batchmean"}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + reduction);
      const Tensor input = random_tensor({3, 4}, dtype, -4, 0);
      std::vector<double> tv = to_doubles(random_tensor({3, 4}, DType::Float64, 0, 1));
      tv[1] = 0, tv[6] = 0;  // 0 * log(0) counts 0
      const Tensor target = tensor_of(tv, {3, 4}, dtype);
      const Tensor log_target = random_tensor({3, 4}, dtype, -4, 0);
      const std::string base = std::string(reduction) == "batchmean" ? "sum" : reduction;
      auto scale = [&](std::vector<double> v) {
        if (std::string(reduction) == "batchmean") v[0] /= 3;
        return v;
      };
      EXPECT_TRUE(all_close(to_doubles(nn::kl_div(input, target, reduction)),
                            scale(elementwise_reference(input, target, base,
                                                        [](int64_t, double x, double t) {
                                                          return t > 0 ? t * (std::log(t) - x)
                                                                       : 0.0;
                                                        })),
                            loss_tolerance(dtype)));
      EXPECT_TRUE(all_close(to_doubles(nn::kl_div(input, log_target, reduction, true)),
                            scale(elementwise_reference(
                                input, log_target, base,
                                [](int64_t, double x, double t) { return std::exp(t) * (t - x); })),
                            loss_tolerance(dtype)));
    }
  }
  // batchmean of a 0-dim input is the sum.
  const Tensor x = tensor_of({-1.5}, {}, DType::Float64), t = tensor_of({0.25}, {}, DType::Float64);
  EXPECT_TRUE(
      all_close(to_doubles(nn::kl_div(x, t, "batchmean")), {0.25 * (std::log(0.25) + 1.5)}, 1e-15));
}

TEST(NnKlDiv, Errors) {
  const Tensor x = random_tensor({3, 4}, DType::Float32);
  EXPECT_THROW(nn::kl_div(x, x, "avg"), ValueError);
  EXPECT_TRUE(mentions(error_message([&] { nn::kl_div(x, x, "avg"); }),
                       {"kl_div", "\"batchmean\"", "\"avg\""}));
  EXPECT_THROW(nn::kl_div(x, random_tensor({5}, DType::Float32)), ShapeError);
  EXPECT_THROW(nn::mse_loss(x, x, "batchmean"), ValueError);
}

TEST(NnKlDivGrad, Input) {
  for (const std::string reduction : {"none", "mean", "sum", "batchmean"}) {
    SCOPED_TRACE(reduction);
    const Tensor target = random_tensor({3, 4}, DType::Float64, 0, 1);
    EXPECT_TRUE(gradcheck([&](const TensorList& t) { return nn::kl_div(t[0], target, reduction); },
                          {leaf({3, 4}, -3, 0)}));
    EXPECT_TRUE(gradcheck(
        [&](const TensorList& t) {
          return nn::kl_div(t[0], target, reduction, /*log_target=*/true);
        },
        {leaf_transposed({3, 4}, -3, 0)}));
  }
}

TEST(NnKlDivGrad, Target) {
  for (bool log_target : {false, true}) {
    EXPECT_TRUE(gradcheck(
        [&](const TensorList& t) { return nn::kl_div(t[0], t[1], "batchmean", log_target); },
        {leaf({3, 4}, -3, 0), leaf({3, 4}, 0.1, 1)}));
  }
}

}  // namespace
}  // namespace rcuda::test
