// Gradients of the Math group, atan2, the cumulative ops and the sort family against float64
// central differences (contiguous and transposed leaves), and their torch conventions: values
// picked by an index send their gradient to that index; cumprod's gradient is exact with zeros.
#include "autograd/gradcheck.h"

namespace rcuda::test {
namespace {

using Case = GradCase;

void check_both_layouts(const Case& c, const Shape& shape = {3, 5}) {
  SCOPED_TRACE(c.name);
  EXPECT_TRUE(gradcheck(c.f, {leaf(shape, c.low, c.high)}));
  EXPECT_TRUE(gradcheck(c.f, {leaf_transposed({shape[1], shape[0]}, c.low, c.high)}));
}

TEST(GradMath, UnaryOpsAgainstCentralDifferences) {
  const std::vector<Case> cases = {
      {"tan", [](const TensorList& x) { return tan(x[0]); }, -1.2, 1.2},
      {"asin", [](const TensorList& x) { return asin(x[0]); }, -0.9, 0.9},
      {"acos", [](const TensorList& x) { return acos(x[0]); }, -0.9, 0.9},
      {"atan", [](const TensorList& x) { return atan(x[0]); }, -3, 3},
      {"sinh", [](const TensorList& x) { return sinh(x[0]); }, -2, 2},
      {"cosh", [](const TensorList& x) { return cosh(x[0]); }, -2, 2},
      {"asinh", [](const TensorList& x) { return asinh(x[0]); }, -3, 3},
      {"acosh", [](const TensorList& x) { return acosh(x[0]); }, 1.2, 4},
      {"atanh", [](const TensorList& x) { return atanh(x[0]); }, -0.9, 0.9},
      {"erf", [](const TensorList& x) { return erf(x[0]); }, -2, 2},
      {"erfc", [](const TensorList& x) { return erfc(x[0]); }, -2, 2},
      {"erfinv", [](const TensorList& x) { return erfinv(x[0]); }, -0.9, 0.9},
      {"lgamma", [](const TensorList& x) { return lgamma(x[0]); }, 0.3, 6},
      {"lgamma negative", [](const TensorList& x) { return lgamma(x[0]); }, -2.8, -2.2},
      {"digamma", [](const TensorList& x) { return digamma(x[0]); }, 0.3, 15},
      {"log2", [](const TensorList& x) { return log2(x[0]); }, 0.2, 5},
      {"log10", [](const TensorList& x) { return log10(x[0]); }, 0.2, 5},
      {"exp2", [](const TensorList& x) { return exp2(x[0]); }, -3, 3},
      {"reciprocal", [](const TensorList& x) { return reciprocal(x[0]); }, 0.3, 3},
      {"trunc (zero)", [](const TensorList& x) { return trunc(x[0]); }, 0.1, 0.9},
      {"by name", [](const TensorList& x) { return unary_op("digamma", x[0]); }, 0.5, 3},
  };
  for (const Case& c : cases) check_both_layouts(c);
}

TEST(GradMath, Atan2BothArgumentsAndBroadcasting) {
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return atan2(x[0], x[1]); },
                        {leaf({3, 4}), leaf_transposed({3, 4})}));
  EXPECT_TRUE(
      gradcheck([](const TensorList& x) { return atan2(x[0], x[1]); }, {leaf({3, 1}), leaf({4})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return binary_op("atan2", x[0], x[1]); },
                        {leaf({5}), leaf({5})}));
}

TEST(GradCumulative, CumprodWithAndWithoutZeros) {
  check_both_layouts(
      {"cumprod dim 1", [](const TensorList& x) { return cumprod(x[0], 1); }, -2, 2});
  check_both_layouts(
      {"cumprod dim 0", [](const TensorList& x) { return cumprod(x[0], 0); }, -2, 2});
  // Zeros: one, two, and at the start of a row.
  Tensor x = random_tensor({3, 6}, DType::Float64);
  double* p = x.data<double>();
  p[2] = 0;          // row 0: one zero
  p[7] = p[10] = 0;  // row 1: two zeros
  p[12] = 0;         // row 2: zero first
  x.requires_grad_();
  EXPECT_TRUE(gradcheck([](const TensorList& t) { return cumprod(t[0], 1); }, {x}));
  EXPECT_TRUE(gradcheck([](const TensorList& t) { return cumprod(t[0], -1); }, {leaf({4})}));
}

TEST(GradCumulative, LogcumsumexpCummaxCummin) {
  check_both_layouts(
      {"logcumsumexp", [](const TensorList& x) { return logcumsumexp(x[0], 1); }, -5, 5});
  check_both_layouts({"cummax", [](const TensorList& x) { return cummax(x[0], 1).first; }, -2, 2});
  check_both_layouts({"cummin", [](const TensorList& x) { return cummin(x[0], 0).first; }, -2, 2});
}

TEST(GradSort, ValuesSendTheirGradientToTheirIndices) {
  const std::vector<Case> cases = {
      {"sort", [](const TensorList& x) { return sort(x[0], 1).first; }, -2, 2},
      {"sort descending dim 0", [](const TensorList& x) { return sort(x[0], 0, true).first; }, -2,
       2},
      {"topk", [](const TensorList& x) { return topk(x[0], 2, 1).first; }, -2, 2},
      {"topk smallest", [](const TensorList& x) { return topk(x[0], 2, 0, false).first; }, -2, 2},
      {"kthvalue", [](const TensorList& x) { return kthvalue(x[0], 2, 1).first; }, -2, 2},
      {"kthvalue keepdim", [](const TensorList& x) { return kthvalue(x[0], 3, 0, true).first; }, -2,
       2},
      {"median", [](const TensorList& x) { return median(x[0], 1).first; }, -2, 2},
      {"median all", [](const TensorList& x) { return median(x[0]); }, -2, 2},
      {"mode", [](const TensorList& x) { return mode(x[0], 1).first; }, -2, 2},
  };
  for (const Case& c : cases) check_both_layouts(c);
}

TEST(GradSort, QuantileEveryInterpolation) {
  for (const char* mode : {"linear", "lower", "higher", "midpoint", "nearest"}) {
    SCOPED_TRACE(mode);
    const std::string interpolation = mode;
    const Tensor q = tensor_of({0.1, 0.5, 0.77}, {3}, DType::Float64);
    EXPECT_TRUE(
        gradcheck([&](const TensorList& x) { return quantile(x[0], q, 1, false, interpolation); },
                  {leaf_transposed({4, 6})}));
    EXPECT_TRUE(gradcheck(
        [&](const TensorList& x) {
          return quantile(x[0], tensor_of({0.3}, {}, DType::Float64), std::nullopt, true,
                          interpolation);
        },
        {leaf({3, 5})}));
  }
}

TEST(GradSort, RepeatedIndicesAddUp) {
  // A cummax that holds one element's value along the row sends it every position's gradient.
  Tensor x = tensor_of({3, 1, 2}, {3}, DType::Float64).requires_grad_();
  autograd::backward(sum(cummax(x, 0).first));
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {3, 0, 0}, 0));
}

}  // namespace
}  // namespace rcuda::test
