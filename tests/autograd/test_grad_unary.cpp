// Gradients of every differentiable unary op (one fused backend pass each) against float64
// central differences, on contiguous and transposed inputs, away from each op's kinks.
#include "autograd/gradcheck.h"

namespace rcuda::test {
namespace {

using Case = GradCase;

TEST(GradUnary, EveryOpAgainstCentralDifferences) {
  const std::vector<Case> cases = {
      {"neg", [](const TensorList& x) { return neg(x[0]); }, -2, 2},
      {"abs", [](const TensorList& x) { return abs(x[0]); }, 0.1, 2},
      {"abs negative", [](const TensorList& x) { return abs(x[0]); }, -2, -0.1},
      {"exp", [](const TensorList& x) { return exp(x[0]); }, -2, 2},
      {"expm1", [](const TensorList& x) { return expm1(x[0]); }, -2, 2},
      {"log", [](const TensorList& x) { return log(x[0]); }, 0.2, 3},
      {"log1p", [](const TensorList& x) { return log1p(x[0]); }, -0.8, 3},
      {"sqrt", [](const TensorList& x) { return sqrt(x[0]); }, 0.2, 3},
      {"rsqrt", [](const TensorList& x) { return rsqrt(x[0]); }, 0.2, 3},
      {"sin", [](const TensorList& x) { return sin(x[0]); }, -3, 3},
      {"cos", [](const TensorList& x) { return cos(x[0]); }, -3, 3},
      {"tanh", [](const TensorList& x) { return tanh(x[0]); }, -3, 3},
      {"sigmoid", [](const TensorList& x) { return sigmoid(x[0]); }, -4, 4},
      {"relu positive", [](const TensorList& x) { return relu(x[0]); }, 0.1, 2},
      {"relu negative", [](const TensorList& x) { return relu(x[0]); }, -2, -0.1},
      {"gelu", [](const TensorList& x) { return gelu(x[0]); }, -3, 3},
      {"gelu tanh", [](const TensorList& x) { return gelu(x[0], "tanh"); }, -3, 3},
      {"silu", [](const TensorList& x) { return silu(x[0]); }, -3, 3},
      {"pow 3", [](const TensorList& x) { return pow(x[0], 3); }, -2, 2},
      {"pow -1.5", [](const TensorList& x) { return pow(x[0], -1.5); }, 0.3, 2},
      {"pow 0.5", [](const TensorList& x) { return pow(x[0], 0.5); }, 0.3, 2},
      {"clamp", [](const TensorList& x) { return clamp(x[0], -0.5, 0.5); }, -2, 2},
      {"clamp min", [](const TensorList& x) { return clamp(x[0], 0.3, std::nullopt); }, -2, 2},
      {"leaky_relu", [](const TensorList& x) { return leaky_relu(x[0], 0.2); }, -2, 2},
      {"elu", [](const TensorList& x) { return elu(x[0], 1.5); }, -2, 2},
      {"softplus", [](const TensorList& x) { return softplus(x[0], 2, 3); }, -3, 3},
      {"hardtanh", [](const TensorList& x) { return hardtanh(x[0], -0.7, 0.8); }, -2, 2},
      {"unary_op by name", [](const TensorList& x) { return unary_op("tanh", x[0]); }, -2, 2},
      {"floor (zero)", [](const TensorList& x) { return floor(x[0]); }, 0.1, 0.9},
      {"round (zero)", [](const TensorList& x) { return round(x[0]); }, 0.1, 0.4},
      {"sign (zero)", [](const TensorList& x) { return sign(x[0]); }, 0.1, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // Inputs near a kink (clamp's bounds, relu's 0) would make differences straddle it:
    // the random values are kept at least 1e-3 away by resampling.
    auto away_from_kinks = [](Tensor t) {
      double* p = t.data<double>();
      for (int64_t i = 0; i < t.numel(); ++i)
        for (double k : {-0.7, -0.5, 0.0, 0.3, 0.5, 0.8})
          if (std::fabs(p[i] - k) < 1e-3) p[i] = k + 2e-3;
      return t;
    };
    Tensor x = away_from_kinks(random_tensor({3, 5}, DType::Float64, c.low, c.high));
    x.requires_grad_();
    EXPECT_TRUE(gradcheck(c.f, {x}));
    Tensor xt =
        transposed_copy(away_from_kinks(random_tensor({4, 3}, DType::Float64, c.low, c.high)));
    xt.requires_grad_();
    EXPECT_TRUE(gradcheck(c.f, {xt}));
  }
}

TEST(GradUnary, TorchConventionsAtKinks) {
  Tensor x = tensor_of({0, -1, 2}, {3}, DType::Float64).requires_grad_();
  autograd::backward(sum(add(relu(x), add(abs(x), clamp(x, -1.0, 2.0)))));
  // relu'(0) = 0, abs'(0) = 0, clamp passes the gradient at its bounds (min <= x <= max).
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {1, 0, 3}, 0));
}

TEST(GradUnary, SavesOnlyWhatTheFormulaReads) {
  // exp reads its output, so an in-place change of the input does not break its backward...
  Tensor x = leaf({4});
  Tensor h = mul(x, 1.0);
  Tensor y = exp(h);
  {
    NoGradGuard no_grad;
    add_(h, ones({4}, DType::Float64));
  }
  EXPECT_NO_THROW(autograd::backward(sum(y)));
  // ...while sin reads its input, and the same change is caught.
  Tensor h2 = mul(x, 1.0);
  Tensor y2 = sin(h2);
  {
    NoGradGuard no_grad;
    add_(h2, ones({4}, DType::Float64));
  }
  EXPECT_THROW(autograd::backward(sum(y2)), ValueError);
}

}  // namespace
}  // namespace rcuda::test
