// Gradients of binary elementwise ops, views, copies, sum/mean and matrix products against
// float64 central differences (tests/autograd/gradcheck.h).
#include <string>

#include "autograd/gradcheck.h"

namespace rcuda::test {
namespace {

using F = std::function<Tensor(const TensorList&)>;

TEST(GradBinary, ArithmeticWithBroadcastingAndLayouts) {
  const std::vector<std::pair<const char*, F>> ops = {
      {"add", [](const TensorList& x) { return add(x[0], x[1]); }},
      {"add alpha", [](const TensorList& x) { return add(x[0], x[1], 2.5); }},
      {"sub alpha", [](const TensorList& x) { return sub(x[0], x[1], -0.5); }},
      {"mul", [](const TensorList& x) { return mul(x[0], x[1]); }},
      {"div", [](const TensorList& x) { return div(x[0], x[1]); }},
      {"maximum", [](const TensorList& x) { return maximum(x[0], x[1]); }},
      {"minimum", [](const TensorList& x) { return minimum(x[0], x[1]); }},
      {"binary_op mul", [](const TensorList& x) { return binary_op("mul", x[0], x[1]); }},
  };
  for (const auto& [name, f] : ops) {
    SCOPED_TRACE(name);
    // A divisor near 0 makes a / b too steep for central differences: divisors stay in
    // [0.5, 2] (either sign would do; one keeps the test simple).
    const double low = std::string(name) == "div" ? 0.5 : -2;
    EXPECT_TRUE(gradcheck(f, {leaf({3, 4}), leaf({3, 4}, low)}));
    EXPECT_TRUE(gradcheck(f, {leaf({2, 3, 4}), leaf({4}, low)}));          // broadcast b
    EXPECT_TRUE(gradcheck(f, {leaf({3, 1}), leaf({1, 5}, low)}));          // both broadcast
    EXPECT_TRUE(gradcheck(f, {leaf_transposed({4, 3}), leaf({3}, low)}));  // non-contiguous
    EXPECT_TRUE(gradcheck(f, {leaf({}), leaf({2, 2}, low)}));              // 0-dim
    // Only one input requires grad: the other is a constant.
    EXPECT_TRUE(gradcheck(f, {leaf({3, 4}), random_tensor({3, 4}, DType::Float64, low, 2)}));
  }
}

TEST(GradBinary, PowRemainderAndNumbers) {
  // pow of positive bases (log(a) in b's gradient), remainder away from its jumps.
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return pow(x[0], x[1]); },
                        {leaf({3, 4}, 0.5, 2), leaf({4}, -1.5, 1.5)}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return pow(2.5, x[0]); }, {leaf({5})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return remainder(x[0], x[1]); },
                        {leaf({6}, 0.1, 0.9), leaf({6}, 1.1, 1.9)}));
  EXPECT_TRUE(
      gradcheck([](const TensorList& x) { return remainder(x[0], 1.5); }, {leaf({6}, 0.1, 1.4)}));
  const std::vector<F> with_numbers = {
      [](const TensorList& x) { return add(x[0], 3.0); },
      [](const TensorList& x) { return sub(x[0], 3.0); },
      [](const TensorList& x) { return mul(x[0], -1.5); },
      [](const TensorList& x) { return div(x[0], 4.0); },
  };
  for (const F& f : with_numbers) EXPECT_TRUE(gradcheck(f, {leaf_transposed({3, 2})}));
}

// binary_op with a number on either side, as the bindings call it (`x * 2`, `2 - x`): each op
// records the number as a number, or composes (pow, maximum, ...), and its gradient matches.
TEST(GradBinary, NamedOpsWithANumberOnEitherSide) {
  struct Case {
    const char* op;
    double number;
    double low, high;  // the tensor's range: away from a / b's pole and remainder's jumps
  };
  const Case cases[] = {
      {"add", 3.0, -2, 2},     {"sub", -0.5, -2, 2},         {"mul", -1.5, -2, 2},
      {"div", 4.0, 0.5, 2},    {"remainder", 2.5, 1.3, 1.9}, {"pow", 1.5, 0.5, 2},
      {"maximum", 0.3, -2, 2}, {"minimum", 0.3, -2, 2},      {"atan2", 0.7, -2, 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    const Scalar n = c.number;
    EXPECT_TRUE(gradcheck([&](const TensorList& x) { return binary_op(c.op, x[0], n); },
                          {leaf_transposed({3, 2}, c.low, c.high)}));
    EXPECT_TRUE(gradcheck([&](const TensorList& x) { return binary_op(c.op, n, x[0]); },
                          {leaf({2, 3}, c.low, c.high)}));
    EXPECT_TRUE(gradcheck([&](const TensorList& x) { return binary_op(c.op, x[0], n); },
                          {leaf({}, c.low, c.high)}));  // 0-dim
  }
  // The same values as the operator with the number as a 0-dim tensor of the tensor's dtype.
  const Tensor x = random_tensor({4, 5}, DType::Float64, 0.5, 2);
  for (const Case& c : cases) {
    const Tensor n = full({}, c.number, TensorOptions(DType::Float64));
    EXPECT_TRUE(all_close(to_doubles(binary_op(c.op, x, Scalar(c.number))),
                          to_doubles(binary_op(c.op, x, n)), 1e-15))
        << c.op;
    EXPECT_TRUE(all_close(to_doubles(binary_op(c.op, Scalar(c.number), x)),
                          to_doubles(binary_op(c.op, n, x)), 1e-15))
        << c.op;
  }
}

TEST(GradBinary, PowAtZeroBaseGivesNoNaN) {
  // d/da a^b at a = 0, b = 0 is 0 and d/db at a = 0, b >= 0 is 0 (torch's masking).
  Tensor a = tensor_of({0, 0, 2}, {3}, DType::Float64).requires_grad_();
  Tensor b = tensor_of({0, 2, 3}, {3}, DType::Float64).requires_grad_();
  autograd::backward(sum(pow(a, b)));
  EXPECT_TRUE(all_close(to_doubles(a.grad()), {0, 0, 12}, 1e-12));
  EXPECT_TRUE(all_close(to_doubles(b.grad()), {0, 0, 8 * std::log(2.0)}, 1e-12));
}

TEST(GradBinary, MaximumSplitsTiesEvenly) {
  Tensor a = tensor_of({1, 2, 3}, {3}, DType::Float64).requires_grad_();
  Tensor b = tensor_of({3, 2, 1}, {3}, DType::Float64).requires_grad_();
  autograd::backward(sum(maximum(a, b)));
  EXPECT_TRUE(all_close(to_doubles(a.grad()), {0, 0.5, 1}, 0));
  EXPECT_TRUE(all_close(to_doubles(b.grad()), {1, 0.5, 0}, 0));
}

TEST(GradBinary, WhereSendsEachSideItsPart) {
  const Tensor cond = gt(random_tensor({3, 4}, DType::Float64), 0.0);
  EXPECT_TRUE(gradcheck([&](const TensorList& x) { return where(cond, x[0], x[1]); },
                        {leaf({3, 4}), leaf({4})}));
  EXPECT_TRUE(
      gradcheck([&](const TensorList& x) { return where(cond, x[0], 2.0); }, {leaf({3, 4})}));
}

TEST(GradViews, EveryViewMethod) {
  const std::vector<std::pair<const char*, F>> views = {
      {"t", [](const TensorList& x) { return x[0].select(0, 1).t(); }},
      {"transpose", [](const TensorList& x) { return x[0].transpose(0, 2); }},
      {"permute",
       [](const TensorList& x) {
         return x[0].permute({2, 0, 1});
       }},
      {"permute negative",
       [](const TensorList& x) {
         return x[0].permute({-1, 0, 1});
       }},
      {"view", [](const TensorList& x) { return contiguous(x[0]).view({-1}); }},
      {"slice step", [](const TensorList& x) { return x[0].slice(1, 0, 3, 2); }},
      {"select", [](const TensorList& x) { return x[0].select(-1, 1); }},
      {"narrow", [](const TensorList& x) { return x[0].narrow(0, 1, 1); }},
      {"expand",
       [](const TensorList& x) {
         return x[0].unsqueeze(0).expand({4, -1, -1, -1});
       }},
      {"squeeze", [](const TensorList& x) { return x[0].narrow(0, 0, 1).squeeze(); }},
      {"unsqueeze", [](const TensorList& x) { return x[0].unsqueeze(1); }},
      {"diagonal", [](const TensorList& x) { return x[0].diagonal(1, 1, 2); }},
      {"diagonal negative", [](const TensorList& x) { return x[0].diagonal(-1, 2, 1); }},
      {"as_strided",
       [](const TensorList& x) {
         return contiguous(x[0]).as_strided({2, 2}, {1, 3}, 1);
       }},
      {"reshape",
       [](const TensorList& x) {
         return reshape(x[0], {3, -1});
       }},
      {"flatten", [](const TensorList& x) { return flatten(x[0], 1); }},
      {"clone", [](const TensorList& x) { return clone(x[0]); }},
      {"to float32 and back",
       [](const TensorList& x) { return to(to(x[0], DType::Float32), DType::Float64); }},
      {"chained",
       [](const TensorList& x) { return x[0].transpose(0, 1).slice(0, 1, 3).select(1, 0); }},
  };
  for (const auto& [name, f] : views) {
    SCOPED_TRACE(name);
    // The float32 round trip rounds the perturbed inputs: a larger step keeps that small.
    const bool float32 = std::string(name).find("float32") != std::string::npos;
    EXPECT_TRUE(gradcheck(f, {leaf({2, 3, 4})}, float32 ? 1e-2 : 1e-6, float32 ? 1e-4 : 1e-6));
  }
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return x[0].t(); }, {leaf_transposed({4, 3})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return x[0].t(); }, {leaf({5})}));
}

TEST(GradViews, ViewsHaveTheirOwnGradients) {
  // A view's metadata is its own: retain_grad on the view fills the view's grad, not the base's.
  Tensor base = leaf({3, 4});
  Tensor v = base.t();
  autograd::retain_grad(v);
  autograd::backward(sum(mul(v, 2.0)));
  ASSERT_TRUE(v.grad().defined());
  EXPECT_EQ(v.grad().shape(), (Shape{4, 3}));
  EXPECT_EQ(base.grad().shape(), (Shape{3, 4}));
  EXPECT_TRUE(all_close(to_doubles(base.grad()), std::vector<double>(12, 2.0), 0));
  EXPECT_FALSE(base.grad().is_same(v.grad()));
}

TEST(GradReduction, SumAndMeanOverDims) {
  const std::vector<std::pair<const char*, F>> cases = {
      {"sum all", [](const TensorList& x) { return sum(x[0]); }},
      {"sum dim", [](const TensorList& x) { return sum(x[0], {1}); }},
      {"sum dims keepdim",
       [](const TensorList& x) {
         return sum(x[0], {0, -1}, true);
       }},
      {"mean all", [](const TensorList& x) { return mean(x[0]); }},
      {"mean dim", [](const TensorList& x) { return mean(x[0], {-2}); }},
      {"mean dims keepdim",
       [](const TensorList& x) {
         return mean(x[0], {2, 0}, true);
       }},
  };
  for (const auto& [name, f] : cases) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(gradcheck(f, {leaf({2, 3, 4})}));
    EXPECT_TRUE(gradcheck(f, {leaf_transposed({4, 3}).unsqueeze(0)}));
  }
}

TEST(GradLinalg, MatmulEveryRankAndBroadcast) {
  const F matmul_f = [](const TensorList& x) { return matmul(x[0], x[1]); };
  EXPECT_TRUE(gradcheck(matmul_f, {leaf({4}), leaf({4})}));                 // dot
  EXPECT_TRUE(gradcheck(matmul_f, {leaf({3, 4}), leaf({4})}));              // matrix-vector
  EXPECT_TRUE(gradcheck(matmul_f, {leaf({4}), leaf({4, 5})}));              // vector-matrix
  EXPECT_TRUE(gradcheck(matmul_f, {leaf({3, 4}), leaf({4, 5})}));           // matrix
  EXPECT_TRUE(gradcheck(matmul_f, {leaf({2, 3, 4}), leaf({4, 5})}));        // batched x matrix
  EXPECT_TRUE(gradcheck(matmul_f, {leaf({4}), leaf({2, 4, 5})}));           // vector x batched
  EXPECT_TRUE(gradcheck(matmul_f, {leaf({2, 1, 3, 4}), leaf({3, 4, 2})}));  // broadcast batch
  EXPECT_TRUE(gradcheck(matmul_f, {leaf_transposed({3, 4}), leaf_transposed({4, 2})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return mm(x[0], x[1]); },
                        {leaf({3, 4}), leaf_transposed({4, 2})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return bmm(x[0], x[1]); },
                        {leaf({2, 3, 4}), leaf({2, 4, 5})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return addmm(x[0], x[1], x[2], 0.5, -2); },
                        {leaf({5}), leaf({3, 4}), leaf({4, 5})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return addmm(x[0], x[1], x[2]); },
                        {leaf({3, 5}), leaf({3, 4}), leaf({4, 5})}));
}

TEST(GradLinalg, OnlyOneOperandRequiresGrad) {
  // The other operand is data: only the weight's partner is saved.
  const Tensor x = random_tensor({3, 4}, DType::Float64);
  EXPECT_TRUE(gradcheck([&](const TensorList& w) { return matmul(x, w[0]); }, {leaf({4, 2})}));
  EXPECT_TRUE(gradcheck([&](const TensorList& w) { return matmul(w[0], x); }, {leaf({5, 3})}));
  EXPECT_TRUE(gradcheck([&](const TensorList& w) { return matmul(x.select(0, 0), w[0]); },
                        {leaf({2, 4, 3})}));
  EXPECT_TRUE(gradcheck([&](const TensorList& w) { return mm(x, w[0]); }, {leaf({4, 2})}));
  EXPECT_TRUE(gradcheck([&](const TensorList& w) { return addmm(w[1], x, w[0]); },
                        {leaf({4, 2}), leaf({2})}));
}

TEST(GradLinalg, ZeroSizeOperands) {
  Tensor a = leaf({0, 4}), b = leaf({4, 3});
  autograd::backward(sum(matmul(a, b)));
  EXPECT_EQ(a.grad().shape(), (Shape{0, 4}));
  EXPECT_TRUE(all_close(to_doubles(b.grad()), std::vector<double>(12, 0.0), 0));
}

}  // namespace
}  // namespace rcuda::test
