// linear, dropout, layer_norm, embedding and one_hot against double-precision loops, their
// gradients against central differences, and their errors.
#include <cmath>

#include "nn/nn_test_util.h"

namespace rcuda::test {
namespace {

// x [..., in] @ w[out, in]^T + b, in double.
std::vector<double> linear_reference(const Tensor& x, const Tensor& w, const Tensor& b) {
  const std::vector<double> xv = to_doubles(x), wv = to_doubles(w);
  const std::vector<double> bv = b.defined() ? to_doubles(b) : std::vector<double>();
  const int64_t in = w.size(1), out = w.size(0);
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  std::vector<double> y;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = bv.empty() ? 0.0 : bv[o];
      for (int64_t k = 0; k < in; ++k) s += xv[r * in + k] * wv[o * in + k];
      y.push_back(s);
    }
  return y;
}

TEST(NnLinear, MatchesALoopForEveryRankLayoutAndBias) {
  for (DType dtype : floating_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const double tol = loss_tolerance(dtype);
    const Tensor w = random_tensor({3, 4}, dtype), b = random_tensor({3}, dtype);
    for (const Shape& shape : {Shape{5, 4}, Shape{4}, Shape{2, 5, 4}, Shape{2, 1, 3, 4}}) {
      SCOPED_TRACE(shape_str(shape));
      const Tensor x = random_tensor(shape, dtype);
      Shape out_shape = shape;
      out_shape.back() = 3;
      const Tensor y = nn::linear(x, w, b);
      EXPECT_EQ(y.shape(), out_shape);
      EXPECT_TRUE(all_close(to_doubles(y), linear_reference(x, w, b), tol));
      EXPECT_TRUE(all_close(to_doubles(nn::linear(x, w)), linear_reference(x, w, Tensor()), tol));
    }
    // Non-contiguous input and weight, an empty batch, zero in-features.
    const Tensor xt = transposed_copy(random_tensor({6, 4}, dtype));
    const Tensor wt = transposed_copy(random_tensor({3, 4}, dtype));
    EXPECT_TRUE(all_close(to_doubles(nn::linear(xt, wt, b)), linear_reference(xt, wt, b), tol));
    EXPECT_EQ(nn::linear(Tensor::empty({0, 4}, dtype), w, b).shape(), (Shape{0, 3}));
    const Tensor no_features =
        nn::linear(Tensor::empty({2, 0}, dtype), Tensor::empty({3, 0}, dtype), b);
    EXPECT_TRUE(all_close(
        to_doubles(no_features),
        linear_reference(Tensor::empty({2, 0}, dtype), Tensor::empty({3, 0}, dtype), b), tol));
  }
}

TEST(NnLinear, ErrorsNameBothShapes) {
  const Tensor x = random_tensor({2, 5}, DType::Float32), w = random_tensor({3, 4}, DType::Float32);
  EXPECT_THROW(nn::linear(x, w), ShapeError);
  EXPECT_TRUE(
      mentions(error_message([&] { nn::linear(x, w); }), {"linear", "[2, 5]", "[3, 4]", "5", "4"}));
  EXPECT_THROW(
      nn::linear(random_tensor({2, 4}, DType::Float32), random_tensor({4}, DType::Float32)),
      ShapeError);
  EXPECT_THROW(
      nn::linear(random_tensor({2, 4}, DType::Float32), w, random_tensor({4}, DType::Float32)),
      ShapeError);
  EXPECT_TRUE(mentions(
      error_message([&] {
        nn::linear(random_tensor({2, 4}, DType::Float32), w, random_tensor({4}, DType::Float32));
      }),
      {"linear", "bias", "[3]", "[4]"}));
  EXPECT_THROW(nn::linear(random_tensor({}, DType::Float32), w), ShapeError);
  EXPECT_THROW(nn::linear(random_tensor({2, 4}, DType::Float64), w), DTypeError);
  EXPECT_THROW(nn::linear(random_tensor({2, 4}, DType::Int64), w), DTypeError);
}

TEST(NnLinearGrad, InputWeightAndBiasForEveryRank) {
  for (const Shape& shape : {Shape{5, 4}, Shape{4}, Shape{2, 3, 4}}) {
    SCOPED_TRACE(shape_str(shape));
    EXPECT_TRUE(gradcheck([](const TensorList& t) { return nn::linear(t[0], t[1], t[2]); },
                          {leaf(shape), leaf({3, 4}), leaf({3})}));
    EXPECT_TRUE(gradcheck([](const TensorList& t) { return nn::linear(t[0], t[1]); },
                          {leaf(shape), leaf_transposed({3, 4})}));
  }
  EXPECT_TRUE(gradcheck([](const TensorList& t) { return nn::linear(t[0], t[1], t[2]); },
                        {leaf_transposed({5, 4}), leaf({3, 4}), leaf({3})}));
}

// ---- dropout ---------------------------------------------------------------------------

TEST(NnDropout, KeepsEachElementWithProbabilityOneMinusPScaled) {
  const int64_t n = 200000;
  const double p = 0.3;
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = random_tensor({n}, dtype, 1, 2);  // nonzero, so a zero means dropped
    const Tensor out = nn::dropout(x, p);
    EXPECT_EQ(out.dtype(), dtype);
    const std::vector<double> xv = to_doubles(x), ov = to_doubles(out);
    int64_t dropped = 0;
    bool scaled = true;
    for (int64_t i = 0; i < n; ++i) {
      if (ov[i] == 0) {
        ++dropped;
      } else if (std::fabs(ov[i] - xv[i] / (1 - p)) > 2 * tolerance(dtype) * std::fabs(ov[i])) {
        scaled = false;
      }
    }
    EXPECT_TRUE(scaled);
    // Binomial(n, p): 6 standard deviations.
    EXPECT_NEAR(static_cast<double>(dropped) / n, p, 6 * std::sqrt(p * (1 - p) / n));
  }
}

TEST(NnDropout, IdentityWhenNotTrainingOrPZeroAndZerosAtPOne) {
  const Tensor x = random_tensor({3, 4}, DType::Float32);
  EXPECT_TRUE(nn::dropout(x, 0.5, /*training=*/false).is_same(x));
  EXPECT_TRUE(nn::dropout(x, 0.0).is_same(x));
  EXPECT_TRUE(all_close(to_doubles(nn::dropout(x, 1.0)), std::vector<double>(12, 0.0), 0));
  EXPECT_EQ(nn::dropout(Tensor::empty({0}, DType::Float32), 0.5).numel(), 0);
  // A seed reproduces the mask; a strided input works like its contiguous copy.
  const Tensor strided = transposed_copy(random_tensor({6, 5}, DType::Float64, 1, 2));
  manual_seed(42);
  const std::vector<double> first = to_doubles(nn::dropout(strided, 0.5));
  manual_seed(42);
  EXPECT_TRUE(all_close(to_doubles(nn::dropout(contiguous(strided), 0.5)), first, 0));
}

TEST(NnDropout, Errors) {
  const Tensor x = random_tensor({3}, DType::Float32);
  for (double p : {-0.1, 1.5, std::nan("")}) {
    EXPECT_THROW(nn::dropout(x, p), ValueError);
    EXPECT_TRUE(mentions(error_message([&] { nn::dropout(x, p); }), {"dropout", "p must be in"}));
  }
  EXPECT_TRUE(mentions(error_message([&] { nn::dropout(x, 1.5); }), {"1.5"}));
  EXPECT_THROW(nn::dropout(tensor_of({1, 2}, {2}, DType::Int64), 0.5), DTypeError);
}

TEST(NnDropoutGrad, GradientIsTheScaledMask) {
  // The mask is the same in every evaluation when the seed is set inside the function.
  EXPECT_TRUE(gradcheck(
      [](const TensorList& t) {
        manual_seed(7);
        return nn::dropout(t[0], 0.4);
      },
      {leaf_transposed({6, 5}, 1, 2)}));
  const Tensor x = leaf({1000}, 1, 2);
  const Tensor out = nn::dropout(x, 0.25);
  autograd::backward(sum(out));
  const std::vector<double> g = to_doubles(x.grad()), o = to_doubles(out), xv = to_doubles(x);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], o[i] / xv[i], 1e-12);
}

// ---- layer_norm ------------------------------------------------------------------------

std::vector<double> layer_norm_reference(const Tensor& x, int64_t group, const Tensor& w,
                                         const Tensor& b, double eps) {
  const std::vector<double> v = to_doubles(x);
  const std::vector<double> wv = w.defined() ? to_doubles(w) : std::vector<double>(group, 1.0);
  const std::vector<double> bv = b.defined() ? to_doubles(b) : std::vector<double>(group, 0.0);
  std::vector<double> out(v.size());
  for (size_t start = 0; start < v.size(); start += group) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < group; ++i) mean += v[start + i] / group;
    for (int64_t i = 0; i < group; ++i)
      var += (v[start + i] - mean) * (v[start + i] - mean) / group;
    for (int64_t i = 0; i < group; ++i)
      out[start + i] = (v[start + i] - mean) / std::sqrt(var + eps) * wv[i] + bv[i];
  }
  return out;
}

TEST(NnLayerNorm, MatchesALoopWithAndWithoutAffineParameters) {
  struct Case {
    Shape shape, normalized;
    bool weight, bias;
    double eps;
  };
  const std::vector<Case> cases = {{{4, 6}, {6}, true, true, 1e-5},
                                   {{2, 3, 4}, {3, 4}, true, false, 1e-5},
                                   {{3, 5}, {5}, false, false, 1e-2},
                                   {{7}, {7}, false, true, 1e-5}};
  for (DType dtype : floating_dtypes()) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(c.shape));
      const Tensor x = random_tensor(c.shape, dtype, -3, 3);
      const Tensor w = c.weight ? random_tensor(c.normalized, dtype) : Tensor();
      const Tensor b = c.bias ? random_tensor(c.normalized, dtype) : Tensor();
      const Tensor y = nn::layer_norm(x, c.normalized, w, b, c.eps);
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_EQ(y.shape(), c.shape);
      const double tol = dtype == DType::Float64   ? 1e-12
                         : dtype == DType::Float32 ? 1e-5
                                                   : 2 * tolerance(dtype);
      EXPECT_TRUE(
          all_close(to_doubles(y), layer_norm_reference(x, numel(c.normalized), w, b, c.eps), tol));
    }
  }
  const Tensor strided = transposed_copy(random_tensor({6, 4}, DType::Float64));
  EXPECT_TRUE(all_close(to_doubles(nn::layer_norm(strided, {4})),
                        layer_norm_reference(strided, 4, Tensor(), Tensor(), 1e-5), 1e-12));
  EXPECT_EQ(nn::layer_norm(Tensor::empty({0, 4}, DType::Float32), {4}).shape(), (Shape{0, 4}));
}

TEST(NnLayerNorm, Errors) {
  const Tensor x = random_tensor({2, 6}, DType::Float32);
  EXPECT_THROW(nn::layer_norm(x, {5}), ShapeError);
  EXPECT_TRUE(
      mentions(error_message([&] { nn::layer_norm(x, {5}); }), {"layer_norm", "[2, 6]", "[5]"}));
  EXPECT_THROW(nn::layer_norm(x, {2, 6, 1}), ShapeError);
  EXPECT_THROW(nn::layer_norm(x, {}), ValueError);
  EXPECT_THROW(nn::layer_norm(x, {6}, random_tensor({5}, DType::Float32)), ShapeError);
  EXPECT_TRUE(mentions(error_message([&] {
                         nn::layer_norm(x, {6}, Tensor(), random_tensor({2, 3}, DType::Float32));
                       }),
                       {"layer_norm", "bias", "[2, 3]", "[6]"}));
  EXPECT_THROW(nn::layer_norm(tensor_of({1, 2}, {2}, DType::Int64), {2}), DTypeError);
}

TEST(NnLayerNormGrad, InputWeightAndBias) {
  EXPECT_TRUE(gradcheck([](const TensorList& t) { return nn::layer_norm(t[0], {6}, t[1], t[2]); },
                        {leaf({4, 6}), leaf({6}), leaf({6})}));
  EXPECT_TRUE(gradcheck(
      [](const TensorList& t) {
        return nn::layer_norm(t[0], {3, 4}, t[1]);
      },
      {leaf({2, 3, 4}), leaf({3, 4})}));
  EXPECT_TRUE(gradcheck([](const TensorList& t) { return nn::layer_norm(t[0], {4}, {}, {}, 0.1); },
                        {leaf_transposed({5, 4})}));
}

// ---- embedding, one_hot ----------------------------------------------------------------

TEST(NnEmbedding, PicksRowsForAnyIndexShape) {
  const Tensor w = random_tensor({10, 3}, DType::Float32);
  const std::vector<double> wv = to_doubles(w);
  for (DType index_dtype : {DType::Int64, DType::Int32}) {
    const Tensor index = tensor_of({1, 2, 9, 0, 2, 2}, {2, 3}, index_dtype);
    for (std::optional<int64_t> padding :
         {std::optional<int64_t>(), std::optional<int64_t>(2), std::optional<int64_t>(-1)}) {
      const Tensor out = nn::embedding(index, w, padding);
      EXPECT_EQ(out.shape(), (Shape{2, 3, 3}));
      std::vector<double> expected;
      for (double i : to_doubles(index))
        for (int64_t c = 0; c < 3; ++c) expected.push_back(wv[static_cast<size_t>(i) * 3 + c]);
      EXPECT_TRUE(all_close(to_doubles(out), expected, 0));
    }
  }
  EXPECT_EQ(nn::embedding(tensor_of({4}, {}, DType::Int64), w).shape(), (Shape{3}));
  EXPECT_EQ(nn::embedding(Tensor::empty({0}, DType::Int64), w).shape(), (Shape{0, 3}));
  const Tensor strided_weight = transposed_copy(random_tensor({10, 3}, DType::Float64));
  const std::vector<double> sv = to_doubles(strided_weight);
  EXPECT_TRUE(
      all_close(to_doubles(nn::embedding(tensor_of({2}, {1}, DType::Int64), strided_weight)),
                {sv[6], sv[7], sv[8]}, 0));
}

TEST(NnEmbedding, Errors) {
  const Tensor w = random_tensor({10, 3}, DType::Float32);
  EXPECT_THROW(nn::embedding(tensor_of({1, 10}, {2}, DType::Int64), w), IndexError);
  EXPECT_TRUE(mentions(error_message([&] {
                         nn::embedding(tensor_of({1, 10}, {2}, DType::Int64), w);
                       }),
                       {"embedding", "10", "10 embeddings"}));
  EXPECT_TRUE(mentions(error_message([&] { nn::embedding(tensor_of({-1}, {1}, DType::Int64), w); }),
                       {"embedding", "-1"}));
  EXPECT_THROW(nn::embedding(tensor_of({1}, {1}, DType::Float32), w), DTypeError);
  EXPECT_THROW(
      nn::embedding(tensor_of({1}, {1}, DType::Int64), random_tensor({10}, DType::Float32)),
      ShapeError);
  EXPECT_THROW(nn::embedding(tensor_of({1}, {1}, DType::Int64), w, 10), IndexError);
  EXPECT_TRUE(
      mentions(error_message([&] { nn::embedding(tensor_of({1}, {1}, DType::Int64), w, -11); }),
               {"embedding", "padding_idx", "-11"}));
}

TEST(NnEmbedding, OneHotIsReexported) {
  const Tensor out = nn::one_hot(tensor_of({0, 2, 1}, {3}, DType::Int64), 3);
  EXPECT_TRUE(all_close(to_doubles(out), {1, 0, 0, 0, 0, 1, 0, 1, 0}, 0));
}

TEST(NnEmbeddingGrad, WeightRowsSumTheirUsesAndPaddingGetsNone) {
  const Tensor index = tensor_of({1, 2, 4, 1, 2, 2}, {2, 3}, DType::Int64);
  EXPECT_TRUE(
      gradcheck([&](const TensorList& t) { return nn::embedding(index, t[0]); }, {leaf({5, 3})}));
  const Tensor w = leaf({5, 3});
  autograd::backward(sum(nn::embedding(index, w, /*padding_idx=*/2)));
  // Row r's gradient counts the uses of r: row 1 twice, row 4 once, row 2 (padding) none.
  EXPECT_TRUE(all_close(to_doubles(w.grad()), {0, 0, 0, 2, 2, 2, 0, 0, 0, 0, 0, 0, 1, 1, 1}, 0));
}

}  // namespace
}  // namespace rcuda::test
