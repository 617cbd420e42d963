// Tests for ops::dropout / dropout_backward and ops::index_add_ / embedding_backward on the CPU
// backend. Dropout's mask is checked against the Philox uniform stream it is defined by (Note
// [Dropout mask]) and its rate against p; the scaling against double arithmetic. index_add_
// against plain loops adding in index order, for every dtype, each dim, repeated indices,
// non-contiguous operands, alpha and empty indices.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "rcuda/core/philox.h"
#include "rcuda/ops/nn.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double stored(double v, DType dtype) {
  char buf[8];
  write_element(buf, dtype, v);
  return read_element(buf, dtype);
}

// The mask Note [Dropout mask] defines, from the stream ops::rand would draw for (seed, offset).
std::vector<double> expected_mask(uint64_t seed, uint64_t offset, int64_t n, double p) {
  const double threshold = std::ceil(p * 16777216.0) / 16777216.0;
  std::vector<double> m(n);
  for (int64_t i = 0; i < n; ++i)
    m[i] = philox::uniform_float(seed, offset, static_cast<uint64_t>(i)) >= threshold ? 1 : 0;
  return m;
}

TEST(NnDropout, MaskIsThePhiloxStreamAndScalesKeptValues) {
  for (DType dtype : floating_dtypes()) {
    for (double p : {0.1, 0.5, 0.9}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " p " + std::to_string(p));
      const Tensor x = random_tensor({37, 29}, dtype);
      ops::manual_seed(1234);
      const auto [out, mask] = ops::dropout(x, p, true);
      EXPECT_EQ(mask.dtype(), DType::Bool);
      EXPECT_EQ(out.dtype(), dtype);
      EXPECT_EQ(mask.shape(), x.shape());
      const std::vector<double> m = to_doubles(mask);
      EXPECT_EQ(m, expected_mask(1234, 0, x.numel(), p));
      const std::vector<double> xv = to_doubles(x);
      // The scale is rounded to the compute type (float for all but float64) first, as the kernels.
      const double scale = dtype == DType::Float64
                               ? 1 / (1 - p)
                               : static_cast<double>(static_cast<float>(1 / (1 - p)));
      std::vector<double> expected(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) expected[i] = stored(xv[i] * m[i] * scale, dtype);
      EXPECT_TRUE(all_close(to_doubles(out), expected, tolerance(dtype)));
    }
  }
}

TEST(NnDropout, RateSeedsAndOffsets) {
  const Tensor x = ops::ones({1000, 1000});  // past the OpenMP grain
  for (double p : {0.2, 0.5, 0.7}) {
    ops::manual_seed(99);
    const auto [out, mask] = ops::dropout(x, p);
    double kept = 0;
    for (double v : to_doubles(mask)) kept += v;
    const double n = 1e6, sigma = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(kept / n, 1 - p, 6 * sigma) << "p " << p;
    double total = 0;
    for (double v : to_doubles(out)) total += v;
    EXPECT_NEAR(total / n, 1.0, 6 * sigma / (1 - p));  // the expectation is kept
  }
  ops::manual_seed(5);
  const Tensor small = ops::ones({100});
  const Tensor first = ops::dropout(small, 0.5).second;
  const Tensor second = ops::dropout(small, 0.5).second;  // the next offset
  EXPECT_NE(to_doubles(first), to_doubles(second));
  EXPECT_EQ(to_doubles(second), expected_mask(5, 1, 100, 0.5));
  ops::manual_seed(5);
  EXPECT_EQ(to_doubles(ops::dropout(small, 0.5).second), to_doubles(first));
}

TEST(NnDropout, SpecialCasesLayoutsAndNaN) {
  const Tensor x = random_tensor({4, 6}, DType::Float32);
  const auto [same, no_mask] = ops::dropout(x, 0.0);
  EXPECT_TRUE(same.is_same(x));
  EXPECT_FALSE(no_mask.defined());
  const auto [eval_out, eval_mask] = ops::dropout(x, 0.7, false);
  EXPECT_TRUE(eval_out.is_same(x));
  EXPECT_FALSE(eval_mask.defined());
  const auto [zeros_out, all_dropped] = ops::dropout(x, 1.0);
  EXPECT_EQ(to_doubles(zeros_out), std::vector<double>(24, 0.0));
  EXPECT_EQ(to_doubles(all_dropped), std::vector<double>(24, 0.0));
  // A non-contiguous input is masked in its row-major order.
  const Tensor t = transposed_copy(random_tensor({6, 5}, DType::Float64));
  ops::manual_seed(7);
  const auto [out, mask] = ops::dropout(t, 0.4);
  const std::vector<double> m = expected_mask(7, 0, 30, 0.4), tv = to_doubles(t);
  EXPECT_EQ(to_doubles(mask), m);
  for (size_t i = 0; i < tv.size(); ++i) EXPECT_DOUBLE_EQ(to_doubles(out)[i], tv[i] * m[i] / 0.6);
  // Empty tensors, and NaN, which stays NaN when dropped (x * 0, as torch).
  const auto [empty_out, empty_mask] = ops::dropout(Tensor::empty({0, 3}, DType::Float16), 0.5);
  EXPECT_EQ(empty_out.shape(), (Shape{0, 3}));
  EXPECT_EQ(empty_mask.shape(), (Shape{0, 3}));
  const auto [nan_out, nan_mask] = ops::dropout(ops::full({64}, kNaN), 0.5);
  for (double v : to_doubles(nan_out)) EXPECT_TRUE(std::isnan(v));
}

TEST(NnDropout, BackwardAndChecks) {
  for (DType dtype : floating_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = random_tensor({9, 8}, dtype);
    const auto [out, mask] = ops::dropout(x, 0.25);
    const Tensor g = random_tensor({9, 8}, dtype);
    const Tensor grad = ops::dropout_backward(g, mask, 0.25);
    const std::vector<double> gv = to_doubles(g), m = to_doubles(mask);
    const double scale = dtype == DType::Float64 ? 1 / 0.75 : static_cast<float>(1 / 0.75);
    std::vector<double> expected(gv.size());
    for (size_t i = 0; i < gv.size(); ++i) expected[i] = stored(gv[i] * m[i] * scale, dtype);
    EXPECT_TRUE(all_close(to_doubles(grad), expected, tolerance(dtype)));
    // Non-contiguous grad.
    const Tensor gt = transposed_copy(random_tensor({9, 8}, dtype));
    ASSERT_FALSE(gt.is_contiguous());
    const std::vector<double> gtv = to_doubles(gt);
    std::vector<double> expected_t(gtv.size());
    for (size_t i = 0; i < gtv.size(); ++i) expected_t[i] = stored(gtv[i] * m[i] * scale, dtype);
    EXPECT_TRUE(
        all_close(to_doubles(ops::dropout_backward(gt, mask, 0.25)), expected_t, tolerance(dtype)));
  }
  const Tensor g = random_tensor({3}, DType::Float32);
  EXPECT_TRUE(ops::dropout_backward(g, Tensor(), 0.0).is_same(g));
  const Tensor dropped = ops::dropout(g, 1.0).second;
  EXPECT_EQ(to_doubles(ops::dropout_backward(g, dropped, 1.0)), std::vector<double>(3, 0.0));
  EXPECT_THROW(ops::dropout(g, -0.1), ValueError);
  EXPECT_THROW(ops::dropout(g, 1.5), ValueError);
  EXPECT_THROW(ops::dropout(g, kNaN), ValueError);
  EXPECT_THROW(ops::dropout(random_tensor({3}, DType::Int32), 0.5), DTypeError);
  EXPECT_THROW(ops::dropout_backward(g, random_tensor({3}, DType::Float32), 0.5), DTypeError);
  EXPECT_THROW(ops::dropout_backward(g, dropped.slice(0, 0, 2), 0.5), ShapeError);
  const std::string message = error_message([&] { ops::dropout(g, 1.5); });
  EXPECT_NE(message.find("dropout"), std::string::npos) << message;
  EXPECT_NE(message.find("1.5"), std::string::npos) << message;
}

// ---- index_add_ ---------------------------------------------------------------------------------

// self[.., index[i], ..] += alpha * source[.., i, ..] in index order, rounding each sum to dtype.
std::vector<double> index_add_reference(const Tensor& self, int64_t dim,
                                        const std::vector<double>& index, const Tensor& source,
                                        double alpha) {
  std::vector<double> out = to_doubles(self);
  const std::vector<double> src = to_doubles(source);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= self.shape()[d];
  for (int64_t d = dim + 1; d < self.dim(); ++d) inner *= self.shape()[d];
  const int64_t size = self.shape()[dim], count = static_cast<int64_t>(index.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < count; ++i)
      for (int64_t k = 0; k < inner; ++k) {
        double& dst = out[(o * size + static_cast<int64_t>(index[i])) * inner + k];
        const double add = stored(alpha * src[(o * count + i) * inner + k], self.dtype());
        if (self.dtype() == DType::Bool)
          dst = (dst != 0 || add != 0) ? 1 : 0;
        else
          dst = stored(dst + add, self.dtype());
      }
  return out;
}

TEST(NnIndexAdd, EveryDtypeAndDim) {
  for (DType dtype : all_dtypes()) {
    for (int64_t dim : {0, 1, 2}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " dim " + std::to_string(dim));
      const Shape shape = {4, 5, 3};
      const double low = dtype == DType::UInt8 ? 0 : -5;
      const Tensor self = random_tensor(shape, dtype, low, 5);
      Shape src_shape = shape;
      src_shape[dim] = 7;
      const Tensor source = random_tensor(src_shape, dtype, low, 5);
      std::vector<double> index(7);
      for (int64_t i = 0; i < 7; ++i) index[i] = static_cast<double>((i * 3) % shape[dim]);
      const std::vector<double> expected = index_add_reference(self, dim, index, source, 1.0);
      const Tensor out = ops::clone(self);
      ops::index_add_(out, dim, tensor_of(index, {7}, DType::Int64), source);
      EXPECT_TRUE(all_close(to_doubles(out), expected, tolerance(dtype)));
      // Negative dim, int32 index, out-of-place form.
      const Tensor again =
          ops::index_add(self, dim - 3, tensor_of(index, {7}, DType::Int32), source);
      EXPECT_EQ(to_doubles(again), to_doubles(out));
    }
  }
}

TEST(NnIndexAdd, LayoutsAlphaAndEmpty) {
  const Tensor self = transposed_copy(random_tensor({6, 40}, DType::Float32));
  ASSERT_FALSE(self.is_contiguous());
  const Tensor source = transposed_copy(random_tensor({9, 40}, DType::Float32));
  const std::vector<double> index = {0, 5, 5, 2, 0, 1, 3, 5, 4};
  const std::vector<double> expected = index_add_reference(self, 0, index, source, 0.5);
  const uint64_t version = self.storage()->version();
  ops::index_add_(self, 0, tensor_of(index, {9}, DType::Int64), source, 0.5);
  EXPECT_TRUE(all_close(to_doubles(self), expected, 2e-6));
  EXPECT_GT(self.storage()->version(), version);
  // Large enough for the OpenMP path.
  const Tensor big = random_tensor({50, 1000}, DType::Float64);
  const Tensor rows = random_tensor({80, 1000}, DType::Float64);
  std::vector<double> big_index(80);
  for (int64_t i = 0; i < 80; ++i) big_index[i] = static_cast<double>((i * 7) % 50);
  const std::vector<double> big_expected = index_add_reference(big, 0, big_index, rows, 1.0);
  ops::index_add_(big, 0, tensor_of(big_index, {80}, DType::Int64), rows);
  EXPECT_TRUE(all_close(to_doubles(big), big_expected, 1e-12));
  // 0-dim self and source, empty index.
  const Tensor scalar = tensor_of({2.0}, {}, DType::Float32);
  ops::index_add_(scalar, 0, tensor_of({0}, {}, DType::Int64),
                  tensor_of({3.0}, {}, DType::Float32));
  EXPECT_EQ(to_doubles(scalar)[0], 5.0);
  const Tensor untouched = random_tensor({3, 2}, DType::Float32);
  const std::vector<double> before = to_doubles(untouched);
  ops::index_add_(untouched, 0, Tensor::empty({0}, DType::Int64),
                  Tensor::empty({0, 2}, DType::Float32));
  EXPECT_EQ(to_doubles(untouched), before);
}

TEST(NnIndexAdd, ChecksAndOutOfRangeIndices) {
  const Tensor self = ops::zeros({4, 3});
  const Tensor source = ops::ones({2, 3});
  const std::string message = error_message([&] {
    ops::index_add_(self, 0, tensor_of({1, 9}, {2}, DType::Int64), source);
  });
  EXPECT_NE(message.find("index_add_"), std::string::npos) << message;
  EXPECT_NE(message.find("9"), std::string::npos) << message;
  EXPECT_EQ(to_doubles(self), std::vector<double>(12, 0.0));  // nothing written
  EXPECT_THROW(ops::index_add_(self, 0, tensor_of({1, -1}, {2}, DType::Int64), source), IndexError);
  const Tensor good = tensor_of({1, 2}, {2}, DType::Int64);
  EXPECT_THROW(ops::index_add_(self, 2, good, source), IndexError);
  EXPECT_THROW(ops::index_add_(self, 0, tensor_of({1, 2}, {2}, DType::Float32), source),
               DTypeError);
  EXPECT_THROW(ops::index_add_(self, 0, good, ops::ones({2, 3}, DType::Float64)), DTypeError);
  EXPECT_THROW(ops::index_add_(self, 0, good, ops::ones({3, 3})), ShapeError);
  EXPECT_THROW(ops::index_add_(self, 0, good, ops::ones({2, 4})), ShapeError);
  EXPECT_THROW(ops::index_add_(ops::zeros({4, 3}, DType::Int64), 0, good,
                               ops::ones({2, 3}, DType::Int64), 0.5),
               DTypeError);
}

TEST(NnEmbeddingBackward, SumsRowsAndSkipsPadding) {
  for (DType dtype : floating_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor indices = tensor_of({1, 3, 1, 0, 3, 3}, {2, 3}, DType::Int64);
    const Tensor grad_out = random_tensor({2, 3, 4}, dtype);
    const std::vector<double> g = to_doubles(grad_out), idx = to_doubles(indices);
    for (std::optional<int64_t> padding :
         {std::optional<int64_t>(), std::optional<int64_t>(3), std::optional<int64_t>(-2)}) {
      std::vector<double> expected(5 * 4, 0.0);
      const int64_t pad = !padding ? -1 : (*padding < 0 ? *padding + 5 : *padding);
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t k = 0; k < 4; ++k) {
          double& dst = expected[static_cast<int64_t>(idx[i]) * 4 + k];
          dst = stored(dst + g[i * 4 + k], dtype);
        }
      if (pad >= 0)
        for (int64_t k = 0; k < 4; ++k) expected[pad * 4 + k] = 0;
      const Tensor grad_weight = ops::embedding_backward(grad_out, indices, 5, padding);
      EXPECT_EQ(grad_weight.shape(), (Shape{5, 4}));
      EXPECT_TRUE(all_close(to_doubles(grad_weight), expected, tolerance(dtype)));
    }
  }
  EXPECT_THROW(ops::embedding_backward(ops::ones({3, 2}), tensor_of({0, 1}, {2}, DType::Int64), 4),
               ShapeError);
  EXPECT_THROW(
      ops::embedding_backward(ops::ones({2, 2}), tensor_of({0, 1}, {2}, DType::Int64), 4, 4),
      IndexError);
  EXPECT_THROW(ops::embedding_backward(ops::ones({2, 2}), tensor_of({0, 7}, {2}, DType::Int64), 4),
               IndexError);
}

}  // namespace
}  // namespace rcuda::test
