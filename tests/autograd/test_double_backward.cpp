// Gradients of gradients (create_graph; Note [Gradients of gradients] in docs/autograd.md):
// Hessian-vector products of every op family that supports them against float64 central
// differences of the first derivative (gradgradcheck in autograd/gradcheck.h), on fresh random
// inputs with broadcasting and non-contiguous views; the refusal of fused ops; and a plain
// backward left as it was.
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "rcuda/rcuda.h"

namespace rcuda::test {
namespace {

// Random values kept at least 1e-3 from the kinks of relu, clamp and friends, so that central
// differences never straddle one.
Tensor away_from_kinks(Tensor t) {
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i)
    for (double k : {-0.7, -0.5, 0.0, 0.3, 0.5, 0.8})
      if (std::fabs(p[i] - k) < 1e-3) p[i] = k + 2e-3;
  return t;
}

void check_unary_cases(const std::vector<GradCase>& cases) {
  for (const GradCase& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = away_from_kinks(random_tensor({3, 4}, DType::Float64, c.low, c.high));
    x.requires_grad_();
    EXPECT_TRUE(gradgradcheck(c.f, {x}));
    Tensor xt =
        transposed_copy(away_from_kinks(random_tensor({3, 4}, DType::Float64, c.low, c.high)));
    xt.requires_grad_();
    EXPECT_TRUE(gradgradcheck(c.f, {xt}));
  }
}

TEST(DoubleBackward, UnaryOps) {
  check_unary_cases({
      {"neg", [](const TensorList& x) { return neg(x[0]); }, -2, 2},
      {"abs", [](const TensorList& x) { return abs(x[0]); }, -2, 2},
      {"exp", [](const TensorList& x) { return exp(x[0]); }, -2, 2},
      {"expm1", [](const TensorList& x) { return expm1(x[0]); }, -2, 2},
      {"log", [](const TensorList& x) { return log(x[0]); }, 0.3, 3},
      {"log1p", [](const TensorList& x) { return log1p(x[0]); }, -0.7, 3},
      {"sqrt", [](const TensorList& x) { return sqrt(x[0]); }, 0.3, 3},
      {"rsqrt", [](const TensorList& x) { return rsqrt(x[0]); }, 0.3, 3},
      {"sin", [](const TensorList& x) { return sin(x[0]); }, -3, 3},
      {"cos", [](const TensorList& x) { return cos(x[0]); }, -3, 3},
      {"tan", [](const TensorList& x) { return tan(x[0]); }, -1, 1},
      {"tanh", [](const TensorList& x) { return tanh(x[0]); }, -3, 3},
      {"sigmoid", [](const TensorList& x) { return sigmoid(x[0]); }, -4, 4},
      {"relu", [](const TensorList& x) { return relu(x[0]); }, -2, 2},
      {"gelu", [](const TensorList& x) { return gelu(x[0]); }, -3, 3},
      {"gelu tanh", [](const TensorList& x) { return gelu(x[0], "tanh"); }, -3, 3},
      {"silu", [](const TensorList& x) { return silu(x[0]); }, -3, 3},
      {"softplus", [](const TensorList& x) { return softplus(x[0], 2, 3); }, -3, 3},
      {"elu", [](const TensorList& x) { return elu(x[0], 1.5); }, -2, 2},
      {"leaky_relu", [](const TensorList& x) { return leaky_relu(x[0], 0.2); }, -2, 2},
      {"hardtanh", [](const TensorList& x) { return hardtanh(x[0], -0.7, 0.8); }, -2, 2},
      {"clamp", [](const TensorList& x) { return clamp(x[0], -0.5, 0.5); }, -2, 2},
      {"pow 3", [](const TensorList& x) { return pow(x[0], 3); }, -2, 2},
      {"pow -1.5", [](const TensorList& x) { return pow(x[0], -1.5); }, 0.3, 2},
      {"reciprocal", [](const TensorList& x) { return reciprocal(x[0]); }, 0.3, 2},
      {"asin", [](const TensorList& x) { return asin(x[0]); }, -0.8, 0.8},
      {"atan", [](const TensorList& x) { return atan(x[0]); }, -2, 2},
      {"sinh", [](const TensorList& x) { return sinh(x[0]); }, -2, 2},
      {"cosh", [](const TensorList& x) { return cosh(x[0]); }, -2, 2},
      {"atanh", [](const TensorList& x) { return atanh(x[0]); }, -0.8, 0.8},
      {"erf", [](const TensorList& x) { return erf(x[0]); }, -2, 2},
      {"erfinv", [](const TensorList& x) { return erfinv(x[0]); }, -0.8, 0.8},
      {"lgamma", [](const TensorList& x) { return lgamma(x[0]); }, 0.5, 3},
      {"log2", [](const TensorList& x) { return log2(x[0]); }, 0.3, 3},
      {"exp2", [](const TensorList& x) { return exp2(x[0]); }, -2, 2},
      {"floor (zero)", [](const TensorList& x) { return floor(x[0]); }, 0.1, 0.9},
  });
}

TEST(DoubleBackward, BinaryOpsWithBroadcasting) {
  const std::vector<GradCase> cases = {
      {"add", [](const TensorList& x) { return add(x[0], x[1], 2.5); }, -2, 2},
      {"sub", [](const TensorList& x) { return sub(x[0], x[1]); }, -2, 2},
      {"mul", [](const TensorList& x) { return mul(x[0], x[1]); }, -2, 2},
      {"div", [](const TensorList& x) { return div(x[0], x[1]); }, 0.5, 2},
      {"pow", [](const TensorList& x) { return pow(x[0], x[1]); }, 0.5, 2},
      {"maximum", [](const TensorList& x) { return maximum(x[0], x[1]); }, -2, 2},
      {"atan2", [](const TensorList& x) { return atan2(x[0], x[1]); }, 0.5, 2},
      {"mul by itself", [](const TensorList& x) { return mul(x[0], x[0]); }, -2, 2},
  };
  for (const GradCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(gradgradcheck(c.f, {leaf({3, 4}, c.low, c.high), leaf({4}, c.low, c.high)}));
    EXPECT_TRUE(
        gradgradcheck(c.f, {leaf_transposed({4, 3}, c.low, c.high), leaf({4, 1}, c.low, c.high)}));
  }
}

TEST(DoubleBackward, NumbersAndWhere) {
  const Tensor mask = gt(random_tensor({3, 4}, DType::Float64), 0.0);
  const std::vector<GradCase> cases = {
      {"x * 2", [](const TensorList& x) { return mul(x[0], 2.0); }, -2, 2},
      {"x / 3", [](const TensorList& x) { return div(x[0], 3.0); }, -2, 2},
      {"2 / x", [](const TensorList& x) { return binary_op("div", 2.0, x[0]); }, 0.5, 2},
      {"2 ^ x", [](const TensorList& x) { return binary_op("pow", 2.0, x[0]); }, -2, 2},
      {"1 - x", [](const TensorList& x) { return binary_op("sub", 1.0, x[0]); }, -2, 2},
      {"where", [&](const TensorList& x) { return where(mask, x[0], exp(x[0])); }, -2, 2},
      {"where number", [&](const TensorList& x) { return where(mask, mul(x[0], x[0]), 1.0); }, -2,
       2},
  };
  check_unary_cases(cases);
}

TEST(DoubleBackward, Reductions) {
  check_unary_cases({
      {"sum", [](const TensorList& x) { return sum(x[0]); }, -2, 2},
      {"sum dim", [](const TensorList& x) { return sum(x[0], {1}); }, -2, 2},
      {"mean keepdim", [](const TensorList& x) { return mean(x[0], {0}, true); }, -2, 2},
      {"prod", [](const TensorList& x) { return prod(x[0], {1}); }, 0.5, 1.5},
      {"max", [](const TensorList& x) { return max(x[0]); }, -2, 2},
      {"min", [](const TensorList& x) { return min(x[0]); }, -2, 2},
      {"max dim", [](const TensorList& x) { return max(x[0], 1).first; }, -2, 2},
      {"var", [](const TensorList& x) { return var(x[0], {1}); }, -2, 2},
      {"std", [](const TensorList& x) { return rcuda::std(x[0], {0}); }, -2, 2},
      {"norm 2", [](const TensorList& x) { return norm(x[0], 2, {1}); }, -2, 2},
      {"norm 3", [](const TensorList& x) { return norm(x[0], 3); }, -2, 2},
      {"norm 1.5", [](const TensorList& x) { return norm(x[0], 1.5, {1}); }, 0.3, 2},
      {"logsumexp", [](const TensorList& x) { return logsumexp(x[0], {1}); }, -2, 2},
      {"softmax", [](const TensorList& x) { return softmax(x[0], 1); }, -2, 2},
      {"log_softmax", [](const TensorList& x) { return log_softmax(x[0], 0); }, -2, 2},
      {"cumsum", [](const TensorList& x) { return cumsum(x[0], 1); }, -2, 2},
  });
}

TEST(DoubleBackward, MatrixProducts) {
  const auto mm_tanh = [](const TensorList& x) { return tanh(matmul(x[0], x[1])); };
  EXPECT_TRUE(gradgradcheck(mm_tanh, {leaf({3, 4}), leaf({4, 2})}));
  EXPECT_TRUE(gradgradcheck(mm_tanh, {leaf_transposed({3, 4}), leaf({4, 2})}));
  EXPECT_TRUE(gradgradcheck(mm_tanh, {leaf({2, 3, 4}), leaf({4, 2})}));  // broadcast batch
  EXPECT_TRUE(gradgradcheck(mm_tanh, {leaf({4}), leaf({4, 2})}));        // 1-D operand
  EXPECT_TRUE(gradgradcheck([](const TensorList& x) { return mm(x[0], x[1]); },
                            {leaf({3, 4}), leaf({4, 2})}));
  EXPECT_TRUE(gradgradcheck([](const TensorList& x) { return bmm(x[0], x[1]); },
                            {leaf({2, 3, 4}), leaf({2, 4, 2})}));
  EXPECT_TRUE(gradgradcheck([](const TensorList& x) { return addmm(x[0], x[1], x[2], 0.5, 2); },
                            {leaf({2}), leaf({3, 4}), leaf({4, 2})}));
  EXPECT_TRUE(gradgradcheck([](const TensorList& x) { return nn::linear(x[0], x[1], x[2]); },
                            {leaf({3, 4}), leaf({2, 4}), leaf({2})}));
  EXPECT_TRUE(gradgradcheck([](const TensorList& x) { return nn::linear(x[0], x[1], x[2]); },
                            {leaf({2, 3, 4}), leaf({2, 4}), leaf({2})}));
}

TEST(DoubleBackward, ViewsAndShapes) {
  check_unary_cases({
      {"reshape",
       [](const TensorList& x) {
         return exp(reshape(x[0], {2, 6}));
       },
       -2, 2},
      {"view", [](const TensorList& x) { return exp(contiguous(x[0]).view({12})); }, -2, 2},
      {"transpose", [](const TensorList& x) { return exp(x[0].t()); }, -2, 2},
      {"permute",
       [](const TensorList& x) {
         return exp(x[0].permute({1, 0}));
       },
       -2, 2},
      {"expand",
       [](const TensorList& x) {
         return exp(x[0].unsqueeze(0).expand({2, 3, 4}));
       },
       -2, 2},
      {"slice", [](const TensorList& x) { return exp(x[0].slice(1, 1, 4, 2)); }, -2, 2},
      {"narrow", [](const TensorList& x) { return exp(x[0].narrow(0, 1, 2)); }, -2, 2},
      {"select", [](const TensorList& x) { return exp(x[0].select(1, 2)); }, -2, 2},
      {"diagonal", [](const TensorList& x) { return exp(x[0].diagonal()); }, -2, 2},
      {"squeeze", [](const TensorList& x) { return exp(x[0].unsqueeze(1).squeeze(1)); }, -2, 2},
      {"flatten", [](const TensorList& x) { return exp(flatten(x[0])); }, -2, 2},
      {"cat",
       [](const TensorList& x) {
         return exp(cat({x[0], mul(x[0], x[0])}, 1));
       },
       -2, 2},
      {"stack",
       [](const TensorList& x) {
         return exp(stack({x[0], sin(x[0])}, 0));
       },
       -2, 2},
      {"clone", [](const TensorList& x) { return exp(clone(x[0])); }, -2, 2},
  });
}

TEST(DoubleBackward, Indexing) {
  const Tensor index = tensor_of({2, 0, 2}, {3}, DType::Int64);
  const Tensor gather_index = tensor_of({0, 3, 1, 1, 2, 0}, {3, 2}, DType::Int64);
  const Tensor mask = gt(random_tensor({3, 4}, DType::Float64), 0.0);
  check_unary_cases({
      {"index_select", [&](const TensorList& x) { return exp(index_select(x[0], 1, index)); }, -2,
       2},
      {"gather", [&](const TensorList& x) { return exp(gather(x[0], 1, gather_index)); }, -2, 2},
      {"masked_fill", [&](const TensorList& x) { return exp(masked_fill(x[0], mask, 0.5)); }, -2,
       2},
      {"masked_select", [&](const TensorList& x) { return exp(masked_select(x[0], mask)); }, -2, 2},
      {"scatter_add",
       [&](const TensorList& x) {
         return exp(scatter_add(x[0], 1, gather_index, mul(x[0].narrow(1, 0, 2), 0.5)));
       },
       -1, 1},
  });
}

TEST(DoubleBackward, NetworkAndLoss) {
  const Tensor target = random_tensor({5, 2}, DType::Float64);
  const auto mlp = [&](const TensorList& p) {
    const Tensor h = nn::relu(nn::linear(p[0], p[1], p[2]));
    return nn::mse_loss(nn::linear(nn::softplus(h), p[3], p[4]), target, "mean");
  };
  EXPECT_TRUE(gradgradcheck(mlp, {leaf({5, 3}), leaf({4, 3}), leaf({4}), leaf({2, 4}), leaf({2})}));
  // A classifier's loss as log_softmax and nll_loss (cross_entropy's fused kernel is refused).
  const Tensor labels = tensor_of({0, 2, 1, 2, 0}, {5}, DType::Int64);
  const auto classifier = [&](const TensorList& p) {
    return nn::nll_loss(log_softmax(nn::linear(tanh(p[0]), p[1], p[2]), 1), labels);
  };
  EXPECT_TRUE(gradgradcheck(classifier, {leaf({5, 3}), leaf({3, 3}), leaf({3})}));
}

// A convolution's gradient passes record ConvGradBackward nodes (grads/conv.cpp).
TEST(DoubleBackward, Convolution) {
  ConvParams strided;
  strided.stride = {2, 1};
  strided.padding = {1, 1};
  strided.dilation = {1, 2};
  ConvParams grouped;
  grouped.groups = 2;
  const auto conv = [](const ConvParams& params) {
    return [params](const TensorList& x) { return tanh(conv2d(x[0], x[1], x[2], params)); };
  };
  EXPECT_TRUE(gradgradcheck(conv({}), {leaf({2, 2, 4, 4}), leaf({3, 2, 3, 3}), leaf({3})}));
  EXPECT_TRUE(gradgradcheck(conv(strided), {leaf({1, 2, 5, 6}), leaf({2, 2, 3, 2}), leaf({2})}));
  EXPECT_TRUE(gradgradcheck(conv(grouped), {leaf({1, 4, 4, 4}), leaf({2, 2, 2, 2}), leaf({2})}));
  // A CNN critic's gradient penalty: grad with respect to the image, then to the weights.
  Tensor image = leaf({2, 1, 5, 5});
  const auto penalty = [&](const TensorList& w) {
    const Tensor critic = sum(mul(tanh(conv2d(image, w[0], w[1], strided)), w[2]));
    const Tensor g = autograd::grad({critic}, {image}, {}, false, false, true)[0];
    return sum(mul(g, g));
  };
  EXPECT_TRUE(gradgradcheck([&](const TensorList& w) { return penalty(w); },
                            {leaf({2, 1, 3, 2}), leaf({2}), leaf({2, 2, 3, 5})}));
}

// layer_norm's fused backward is replaced by a recorded formula (src/nn/layers.cpp).
TEST(DoubleBackward, LayerNorm) {
  EXPECT_TRUE(
      gradgradcheck([](const TensorList& x) { return nn::layer_norm(x[0], {4}, x[1], x[2]); },
                    {leaf({3, 4}), leaf({4}), leaf({4})}));
  EXPECT_TRUE(gradgradcheck(
      [](const TensorList& x) {
        return nn::layer_norm(x[0], {2, 3});
      },
      {leaf({2, 2, 3})}));
  EXPECT_TRUE(gradgradcheck([](const TensorList& x) { return nn::layer_norm(x[0], {3}); },
                            {leaf_transposed({4, 3})}));
  EXPECT_TRUE(gradgradcheck([](const TensorList& x) { return nn::layer_norm(x[0], {3}, x[1], {}); },
                            {leaf({2, 2, 3}), leaf({3})}));
}

// WGAN-GP's penalty (grad(critic(x), x), its norm pulled to 1) differentiated by the weights,
// against central differences of the penalty itself.
TEST(DoubleBackward, GradientPenaltyAgainstCentralDifferences) {
  Tensor x = leaf({4, 3});
  Tensor w1 = leaf({5, 3}), b1 = leaf({5}), w2 = leaf({1, 5});
  const auto penalty = [&](bool create_graph) {
    const Tensor critic = sum(nn::linear(tanh(nn::linear(x, w1, b1)), w2, {}));
    const Tensor g = autograd::grad({critic}, {x}, {}, false, false, create_graph)[0];
    const Tensor norms = sqrt(sum(mul(g, g), {1}));
    return mean(pow(sub(norms, 1.0), 2));
  };
  const Tensor gp = penalty(true);
  ASSERT_TRUE(gp.requires_grad());
  autograd::backward(gp);
  for (Tensor* w : {&w1, &b1, &w2}) {
    ASSERT_TRUE(w->grad().defined());
    const std::vector<double> analytic = to_doubles(w->grad());
    NoGradGuard no_grad;
    for (int64_t j = 0; j < w->numel(); ++j) {
      double* p = element_address(*w, j);
      const double saved = *p;
      *p = saved + 1e-6;
      EnableGradGuard grad_on;
      const double up = to_doubles(penalty(false))[0];
      *p = saved - 1e-6;
      const double down = to_doubles(penalty(false))[0];
      *p = saved;
      EXPECT_NEAR(analytic[j], (up - down) / 2e-6, 1e-6 * std::max(1.0, std::fabs(analytic[j])));
    }
  }
}

TEST(DoubleBackward, BackwardCreateGraphKeepsTheGraphInGrad) {
  Tensor x = leaf({3});
  const Tensor y = sum(pow(x, 3));
  autograd::backward(y, {}, false, /*create_graph=*/true);
  ASSERT_TRUE(x.grad().requires_grad());  // 3 x^2, with its history
  const Tensor g = x.grad();
  x.set_grad(Tensor());
  autograd::backward(sum(g));  // d/dx sum(3 x^2) = 6 x
  EXPECT_TRUE(all_close(to_doubles(x.grad()), to_doubles(mul(x, 6.0)), 1e-12));
  // A second create_graph pass adds to grad with a recorded sum, so the graph is kept.
  Tensor z = leaf({2});
  autograd::backward(sum(mul(z, z)), {}, false, true);
  autograd::backward(sum(mul(z, z)), {}, false, true);
  ASSERT_TRUE(z.grad().requires_grad());
  EXPECT_TRUE(all_close(to_doubles(z.grad()), to_doubles(mul(z, 4.0)), 1e-12));
}

TEST(DoubleBackward, ThirdDerivative) {
  Tensor x = leaf({4});
  const Tensor y = sum(mul(exp(x), sin(x)));
  const Tensor g1 = autograd::grad({y}, {x}, {}, false, false, true)[0];
  const Tensor g2 = autograd::grad({sum(g1)}, {x}, {}, false, false, true)[0];
  const Tensor g3 = autograd::grad({sum(g2)}, {x})[0];
  // d^3/dx^3 e^x sin x = 2 e^x (cos x - sin x)
  NoGradGuard no_grad;
  const Tensor expected = mul(mul(exp(x), sub(cos(x), sin(x))), 2.0);
  EXPECT_TRUE(all_close(to_doubles(g3), to_doubles(expected), 1e-10));
}

TEST(DoubleBackward, PlainBackwardRecordsNothing) {
  Tensor x = leaf({3, 4});
  autograd::backward(sum(exp(x)));
  EXPECT_FALSE(x.grad().requires_grad());
  EXPECT_EQ(x.grad().grad_fn(), nullptr);
  EXPECT_TRUE(GradMode::is_enabled());
  const Tensor g = autograd::grad({sum(tanh(x))}, {x})[0];
  EXPECT_FALSE(g.requires_grad());
}

TEST(DoubleBackward, FusedOpsAreRefusedByName) {
  const auto refused = [](const std::function<Tensor()>& forward, const Tensor& wrt) {
    return error_message(
        [&] { autograd::grad({sum(forward())}, {wrt}, {}, false, false, /*create_graph=*/true); });
  };
  Tensor image = leaf({1, 2, 5, 5});
  Tensor kernel = leaf({2, 3, 3, 3});
  EXPECT_EQ(refused([&] { return conv_transpose2d(image, kernel); }, image),
            "conv_transpose2d: gradients of gradients (create_graph = TRUE) are not supported for "
            "this op yet: its backward (ConvolutionBackward) does not record a graph of its own");
  Tensor x = leaf({3, 4});
  EXPECT_NE(refused([&] { return group_norm(x, 2); }, x)
                .find("group_norm: gradients of gradients (create_graph = TRUE) are not supported"),
            std::string::npos);
  const Tensor labels = tensor_of({0, 3, 1}, {3}, DType::Int64);
  EXPECT_NE(refused([&] { return nn::cross_entropy(x, labels); }, x).find("cross_entropy: "),
            std::string::npos);
  EXPECT_NE(refused([&] { return digamma(x); }, x).find("digamma: "), std::string::npos);
  // The same ops in a plain backward still work.
  EXPECT_EQ(error_message([&] { autograd::grad({sum(conv_transpose2d(image, kernel))}, {image}); }),
            "(no error)");
}

}  // namespace
}  // namespace rcuda::test
