// Gradients of reductions, softmax and cumsum against float64 central differences
// (tests/autograd/gradcheck.h), plus the cases where the gradient is a choice rather than a
// derivative (zeros in prod, ties in max/min, a zero norm or std), checked against values
// worked out by hand or by plain loops.
#include <limits>

#include "autograd/gradcheck.h"

namespace rcuda::test {
namespace {

using F = std::function<Tensor(const TensorList&)>;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The layouts every reduction is checked on: contiguous, transposed, and a 3-D one.
void expect_gradcheck_layouts(const F& f, double low = -2, double high = 2) {
  EXPECT_TRUE(gradcheck(f, {leaf({3, 4}, low, high)}));
  EXPECT_TRUE(gradcheck(f, {leaf_transposed({3, 4}, low, high)}));
  EXPECT_TRUE(gradcheck(f, {leaf({2, 3, 4}, low, high)}));
}

// A float64 leaf whose elements have magnitudes in [0.3, 2) and random signs, for formulas
// that are not smooth at 0 (|x|^p with p < 2); transposed: a non-contiguous one.
Tensor leaf_away_from_zero(const Shape& shape, bool transposed = false) {
  std::vector<double> v = to_doubles(random_tensor(shape, DType::Float64, 0.3, 2));
  for (double& x : v)
    if (rng()() & 1) x = -x;
  Tensor t = tensor_of(v, shape, DType::Float64);
  if (transposed) t = transposed_copy(t);
  t.requires_grad_();
  return t;
}

// x's gradient of sum(f(x)).
std::vector<double> grad_of_sum(const Tensor& x, const std::function<Tensor(const Tensor&)>& f) {
  autograd::backward(sum(f(x)));
  return to_doubles(x.grad());
}

TEST(GradReduction, ProdOverDims) {
  const std::vector<std::pair<const char*, F>> cases = {
      {"all", [](const TensorList& x) { return prod(x[0]); }},
      {"dim", [](const TensorList& x) { return prod(x[0], {1}); }},
      {"negative dim keepdim", [](const TensorList& x) { return prod(x[0], {-1}, true); }},
      {"two dims",
       [](const TensorList& x) {
         return prod(x[0], {0, -1});
       }},
      {"two dims keepdim",
       [](const TensorList& x) {
         return prod(x[0], {-1, 0}, true);
       }},
  };
  for (const auto& [name, f] : cases) {
    SCOPED_TRACE(name);
    expect_gradcheck_layouts(f);
  }
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return prod(x[0]); }, {leaf({})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return prod(x[0], {0}); }, {leaf({0, 3})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return prod(x[0], {1}); }, {leaf({0, 3})}));
}

// The product of the other elements of each row, by plain loops.
std::vector<double> product_of_others(const std::vector<double>& v, int64_t rows, int64_t cols) {
  std::vector<double> out(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double p = 1;
      for (int64_t k = 0; k < cols; ++k)
        if (k != c) p *= v[r * cols + k];
      out[r * cols + c] = p;
    }
  return out;
}

TEST(GradReduction, ProdWithZeroOneAndTwoZerosPerSlice) {
  // Row 0 has no zero, row 1 one, row 2 two, row 3 only zeros.
  for (const bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "transposed" : "contiguous");
    Tensor x = transposed ? leaf_transposed({4, 5}) : leaf({4, 5});
    {
      NoGradGuard no_grad;
      *element_address(x, 1 * 5 + 2) = 0;
      *element_address(x, 2 * 5 + 0) = 0;
      *element_address(x, 2 * 5 + 4) = 0;
      for (int64_t c = 0; c < 5; ++c) *element_address(x, 3 * 5 + c) = 0;
    }
    const std::vector<double> v = to_doubles(x);
    const std::vector<double> g = grad_of_sum(x, [](const Tensor& t) { return prod(t, {1}); });
    EXPECT_TRUE(all_close(g, product_of_others(v, 4, 5), 1e-12));
    for (int64_t c = 0; c < 5; ++c) {
      EXPECT_EQ(g[2 * 5 + c], 0.0) << "two zeros: column " << c;
      EXPECT_EQ(g[3 * 5 + c], 0.0) << "all zeros: column " << c;
    }
    EXPECT_TRUE(gradcheck([](const TensorList& t) { return prod(t[0], {-1}, true); }, {x}));
  }
  // Over all elements: one zero gets the product of the rest, the rest get 0.
  Tensor y = tensor_of({2, 0, -3, 0.5}, {4}, DType::Float64).requires_grad_();
  EXPECT_TRUE(all_close(grad_of_sum(y, [](const Tensor& t) { return prod(t); }), {0, -3, 0, 0}, 0));
  Tensor z = tensor_of({2, 0, -3, 0}, {2, 2}, DType::Float64).requires_grad_();
  EXPECT_TRUE(all_close(grad_of_sum(z, [](const Tensor& t) { return prod(t); }), {0, 0, 0, 0}, 0));
}

TEST(GradReduction, MaxMinOverAllElements) {
  for (const bool is_max : {true, false}) {
    SCOPED_TRACE(is_max ? "max" : "min");
    const F f = [is_max](const TensorList& x) { return is_max ? max(x[0]) : min(x[0]); };
    expect_gradcheck_layouts(f);
    EXPECT_TRUE(gradcheck(f, {leaf({})}));
    // Ties share the gradient evenly, as torch's max() and amax.
    const double e = is_max ? 3 : -3;
    Tensor two = tensor_of({1, e, e, 2}, {2, 2}, DType::Float64).requires_grad_();
    EXPECT_TRUE(all_close(grad_of_sum(two, [&](const Tensor& t) { return f({t}); }),
                          {0, 0.5, 0.5, 0}, 1e-15));
    // Three ties in a non-contiguous tensor: a third each.
    Tensor three = transposed_copy(tensor_of({e, 0, e, 1, e, 2}, {3, 2}, DType::Float64));
    three.requires_grad_();
    EXPECT_TRUE(all_close(grad_of_sum(three, [&](const Tensor& t) { return f({t}); }),
                          {1. / 3, 0, 1. / 3, 0, 1. / 3, 0}, 1e-15));
    // A NaN is the maximum and the minimum: it takes the whole gradient.
    Tensor with_nan = tensor_of({1, std::nan(""), 2}, {3}, DType::Float64).requires_grad_();
    EXPECT_TRUE(
        all_close(grad_of_sum(with_nan, [&](const Tensor& t) { return f({t}); }), {0, 1, 0}, 0));
  }
  EXPECT_STREQ(max(leaf({3})).grad_fn()->name(), "MaxBackward");
}

TEST(GradReduction, MaxMinAlongDim) {
  for (const bool is_max : {true, false}) {
    for (const bool keepdim : {false, true}) {
      for (const int64_t dim : {0, 1, -1}) {
        SCOPED_TRACE(std::string(is_max ? "max" : "min") + (keepdim ? " keepdim" : "") + " dim " +
                     std::to_string(dim));
        const F f = [=](const TensorList& x) {
          return (is_max ? max(x[0], dim, keepdim) : min(x[0], dim, keepdim)).first;
        };
        expect_gradcheck_layouts(f);
      }
    }
    const F f0 = [is_max](const TensorList& x) {
      return (is_max ? max(x[0], 0) : min(x[0], 0)).first;
    };
    EXPECT_TRUE(gradcheck(f0, {leaf({})}));
    EXPECT_TRUE(gradcheck(f0, {leaf({3, 0})}));  // empty along the kept dim
  }
}

TEST(GradReduction, MaxAlongDimSendsTiesToTheReturnedIndexOnly) {
  // Rows with ties: the backend returns the first index, which alone gets the gradient.
  Tensor x = tensor_of({3, 1, 3, 0, 0, 0, 2, 5, 5}, {3, 3}, DType::Float64).requires_grad_();
  const auto [values, indices] = max(x, 1);
  EXPECT_TRUE(values.requires_grad());
  EXPECT_FALSE(indices.requires_grad());
  EXPECT_EQ(indices.grad_fn(), nullptr);
  EXPECT_STREQ(values.grad_fn()->name(), "MaxBackward");
  const std::vector<double> idx = to_doubles(indices);
  autograd::backward(sum(values));
  std::vector<double> expected(9, 0.0);
  for (int r = 0; r < 3; ++r) expected[r * 3 + static_cast<int>(idx[r])] = 1;
  EXPECT_TRUE(all_close(to_doubles(x.grad()), expected, 0));
  EXPECT_TRUE(all_close(idx, {0, 0, 1}, 0));
}

TEST(GradReduction, IndexResultsCarryNoGradient) {
  Tensor x = leaf({3, 4});
  EXPECT_FALSE(argmax(x, 1).requires_grad());
  EXPECT_FALSE(argmin(x).requires_grad());
  EXPECT_FALSE(all(gt(x, 0.0)).requires_grad());
  EXPECT_FALSE(min(x, 0).second.requires_grad());
  // Only the values output was used: backward through it works with the indices ignored.
  autograd::backward(sum(min(x, 0, true).first));
  EXPECT_EQ(x.grad().shape(), (Shape{3, 4}));
}

TEST(GradReduction, VarAndStdWithCorrections) {
  for (const bool is_std : {false, true}) {
    for (const double correction : {0.0, 1.0, 2.5}) {
      const std::vector<std::pair<Dims, bool>> dims = {
          {{}, false}, {{1}, false}, {{-1}, true}, {{0, -1}, false}, {{-1, 0}, true}};
      for (const auto& [d, keepdim] : dims) {
        SCOPED_TRACE(std::string(is_std ? "std" : "var") + " correction " +
                     std::to_string(correction) + " dims " + shape_str(d) +
                     (keepdim ? " keepdim" : ""));
        const F f = [=, d = d, keepdim = keepdim](const TensorList& x) {
          return is_std ? rcuda::std(x[0], d, correction, keepdim)
                        : var(x[0], d, correction, keepdim);
        };
        expect_gradcheck_layouts(f);
      }
    }
  }
}

TEST(GradReduction, StdOfAConstantSliceHasZeroGradient) {
  // std's derivative is infinite at 0; torch (and rcuda) take 0 there.
  Tensor x = tensor_of({1, 1, 1, 2, 4, 3}, {2, 3}, DType::Float64).requires_grad_();
  const std::vector<double> g = grad_of_sum(x, [](const Tensor& t) { return rcuda::std(t, {1}); });
  EXPECT_TRUE(all_close({g[0], g[1], g[2]}, {0, 0, 0}, 0));
  // Row 1: d std / dx_i = (x_i - mean) / ((n - 1) std) with mean 3, std 1.
  EXPECT_TRUE(all_close({g[3], g[4], g[5]}, {-0.5, 0.5, 0}, 1e-12));
}

TEST(GradReduction, NormForEveryP) {
  const std::vector<std::pair<Dims, bool>> dims = {
      {{}, false}, {{1}, false}, {{-1}, true}, {{0, -1}, false}, {{0}, true}};
  for (const double p : {2.0, 1.0, 3.0, 1.5, 0.5, kInf, 0.0}) {
    for (const auto& [d, keepdim] : dims) {
      SCOPED_TRACE("p " + std::to_string(p) + " dims " + shape_str(d) +
                   (keepdim ? " keepdim" : ""));
      const F f = [p, d = d, keepdim = keepdim](const TensorList& x) {
        return norm(x[0], p, d, keepdim);
      };
      EXPECT_TRUE(gradcheck(f, {leaf_away_from_zero({3, 4})}));
      EXPECT_TRUE(gradcheck(f, {leaf_away_from_zero({3, 4}, /*transposed=*/true)}));
      EXPECT_TRUE(gradcheck(f, {leaf_away_from_zero({2, 3, 4})}));
    }
  }
}

TEST(GradReduction, NormAtZeroAndAtTies) {
  // The 2-norm of zeros: subgradient 0, not NaN; the 1-norm: sign, 0 at 0.
  Tensor zeros2 = tensor_of({0, 0, 0}, {3}, DType::Float64).requires_grad_();
  EXPECT_TRUE(
      all_close(grad_of_sum(zeros2, [](const Tensor& t) { return norm(t); }), {0, 0, 0}, 0));
  Tensor mixed = tensor_of({0, -2, 3}, {3}, DType::Float64).requires_grad_();
  EXPECT_TRUE(
      all_close(grad_of_sum(mixed, [](const Tensor& t) { return norm(t, 1); }), {0, -1, 1}, 0));
  // p = 3 and p = 0.5 at a zero element: 0 there.
  for (const double p : {3.0, 0.5}) {
    Tensor z = tensor_of({0, 1, -1}, {3}, DType::Float64).requires_grad_();
    EXPECT_EQ(grad_of_sum(z, [p](const Tensor& t) { return norm(t, p); })[0], 0.0) << p;
    Tensor all_zero = tensor_of({0, 0}, {2}, DType::Float64).requires_grad_();
    EXPECT_TRUE(
        all_close(grad_of_sum(all_zero, [p](const Tensor& t) { return norm(t, p); }), {0, 0}, 0))
        << p;
  }
  // The inf-norm's tied maxima of |x| share the gradient, with x's sign.
  Tensor ties = tensor_of({3, -3, 1}, {3}, DType::Float64).requires_grad_();
  EXPECT_TRUE(all_close(grad_of_sum(ties, [](const Tensor& t) { return norm(t, kInf); }),
                        {0.5, -0.5, 0}, 0));
  // p = 0 counts nonzeros: gradient 0 everywhere.
  Tensor counted = leaf({4});
  EXPECT_TRUE(
      all_close(grad_of_sum(counted, [](const Tensor& t) { return norm(t, 0); }), {0, 0, 0, 0}, 0));
}

TEST(GradReduction, Logsumexp) {
  const std::vector<std::pair<Dims, bool>> dims = {
      {{1}, false}, {{-1}, true}, {{0, -1}, false}, {{-1, 0}, true}, {{}, false}};
  for (const auto& [d, keepdim] : dims) {
    SCOPED_TRACE("dims " + shape_str(d) + (keepdim ? " keepdim" : ""));
    expect_gradcheck_layouts(
        [d = d, keepdim = keepdim](const TensorList& x) { return logsumexp(x[0], d, keepdim); });
  }
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return logsumexp(x[0], {0}); }, {leaf({})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return logsumexp(x[0], {1}); }, {leaf({0, 3})}));
}

TEST(GradReduction, SoftmaxAndLogSoftmax) {
  for (const bool log : {false, true}) {
    for (const int64_t dim : {0, 1, -1}) {
      SCOPED_TRACE(std::string(log ? "log_softmax" : "softmax") + " dim " + std::to_string(dim));
      const F f = [=](const TensorList& x) {
        return log ? log_softmax(x[0], dim) : softmax(x[0], dim);
      };
      expect_gradcheck_layouts(f);
    }
    const F f0 = [=](const TensorList& x) { return log ? log_softmax(x[0], 0) : softmax(x[0], 0); };
    EXPECT_TRUE(gradcheck(f0, {leaf({})}));
    EXPECT_TRUE(gradcheck(f0, {leaf({0, 4})}));
  }
  EXPECT_STREQ(log_softmax(leaf({3}), 0).grad_fn()->name(), "LogSoftmaxBackward");
}

TEST(GradReduction, Cumsum) {
  for (const int64_t dim : {0, 1, -1}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    expect_gradcheck_layouts([dim](const TensorList& x) { return cumsum(x[0], dim); });
  }
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return cumsum(x[0], 0); }, {leaf({})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return cumsum(x[0], 0); }, {leaf({0})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return cumsum(x[0], 1); }, {leaf({0, 3})}));
  // Against the reverse cumulative sum by loops: element i gets the sum of the weights from i on.
  Tensor x = leaf({6});
  const Tensor w = tensor_of({1, 2, 3, 4, 5, 6}, {6}, DType::Float64);
  autograd::backward(sum(mul(cumsum(x, 0), w)));
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {21, 20, 18, 15, 11, 6}, 1e-15));
}

TEST(GradReduction, ReducedFloatGradientsKeepTheDtype) {
  // The engine casts every gradient to its input's dtype; cumsum works in float32 inside.
  for (const DType dtype : {DType::Float16, DType::BFloat16, DType::Float32}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = random_tensor({3, 4}, dtype).requires_grad_();
    autograd::backward(sum(add(add(cumsum(x, 1), softmax(x, 0)), prod(x, {1}, true))));
    EXPECT_EQ(x.grad().dtype(), dtype);
    EXPECT_EQ(x.grad().shape(), (Shape{3, 4}));
  }
}

}  // namespace
}  // namespace rcuda::test
