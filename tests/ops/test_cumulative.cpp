// cumprod, cummax, cummin and logcumsumexp against plain loops in double: every dim, every dtype
// each accepts, zeros in cumprod, ties and NaN in cummax/cummin, infinities in logcumsumexp,
// transposed views, 0-dim and empty tensors.
#include <cmath>
#include <limits>

#include "support/reference.h"

namespace rcuda::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

enum class Kind { Prod, Max, Min, LogSumExp };

// The running op along d of x (row-major values of shape): values and indices.
std::pair<std::vector<double>, std::vector<double>> reference(Kind kind,
                                                              const std::vector<double>& x,
                                                              const Shape& shape, int64_t d) {
  int64_t outer = 1, n = shape[d], inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < d) outer *= shape[i];
    if (i > d) inner *= shape[i];
  }
  std::vector<double> values(x.size()), indices(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = kind == Kind::Prod ? 1 : 0;
      int64_t where = 0;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t at = (o * n + j) * inner + i;
        const double v = x[at];
        if (kind == Kind::Prod) acc *= v;
        if (kind == Kind::LogSumExp) {
          double sum = 0;
          bool nan = false;
          for (int64_t k = 0; k <= j; ++k) {
            const double e = x[(o * n + k) * inner + i];
            nan = nan || std::isnan(e);
            sum += std::exp(e);
          }
          acc = nan ? kNaN : std::log(sum);
        }
        if (kind == Kind::Max || kind == Kind::Min) {
          // torch: a NaN becomes the extreme; otherwise >= (<=) moves to the latest tie.
          const bool better = kind == Kind::Max ? v >= acc : v <= acc;
          if (j == 0 || std::isnan(v) || (!std::isnan(acc) && better)) {
            acc = v;
            where = j;
          }
        }
        values[at] = acc;
        indices[at] = static_cast<double>(where);
      }
    }
  return {values, indices};
}

TEST(Cumulative, CumprodEveryDtypeAndDimWithZeros) {
  for (DType dtype : all_dtypes()) {
    for (int64_t dim : {0, 1, -1}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " dim " + std::to_string(dim));
      const Tensor x = random_tensor({4, 6}, dtype, -2, 3);  // integers include zeros
      const Tensor out = cumprod(x, dim);
      EXPECT_EQ(out.dtype(), is_floating(dtype) ? dtype : DType::Int64);
      const std::vector<double> expected =
          reference(Kind::Prod, to_doubles(x), x.shape(), dim < 0 ? dim + 2 : dim).first;
      EXPECT_TRUE(all_close(to_doubles(out), expected, tolerance(dtype) * 8));
    }
  }
  const Tensor t = transposed_copy(random_tensor({5, 3}, DType::Float64, 0.5, 1.5));
  EXPECT_TRUE(all_close(to_doubles(cumprod(t, 0)),
                        reference(Kind::Prod, to_doubles(t), t.shape(), 0).first, 1e-14));
}

TEST(Cumulative, CummaxCumminTiesNaNAndEveryDtype) {
  for (DType dtype : all_dtypes()) {
    for (int64_t dim : {0, 1}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " dim " + std::to_string(dim));
      Tensor x = random_tensor({5, 7}, dtype, 0, 4);  // many ties
      if (is_floating(dtype)) {
        std::vector<double> v = to_doubles(x);
        v[3] = kNaN;
        v[20] = kNaN;
        x = tensor_of(v, x.shape(), dtype);
      }
      for (Kind kind : {Kind::Max, Kind::Min}) {
        auto [values, indices] = kind == Kind::Max ? cummax(x, dim) : cummin(x, dim);
        EXPECT_EQ(values.dtype(), dtype);
        EXPECT_EQ(indices.dtype(), DType::Int64);
        auto [ev, ei] = reference(kind, to_doubles(x), x.shape(), dim);
        EXPECT_TRUE(all_close(to_doubles(values), ev, 0));
        EXPECT_EQ(to_doubles(indices), ei);
      }
    }
  }
}

TEST(Cumulative, LogcumsumexpFloatingDtypesAndInfinities) {
  for (DType dtype : floating_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = transposed_copy(random_tensor({6, 4}, dtype, -20, 20));
    const Tensor out = logcumsumexp(x, 0);
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_TRUE(all_close(to_doubles(out),
                          reference(Kind::LogSumExp, to_doubles(x), x.shape(), 0).first,
                          tolerance(dtype) * 4));
  }
  // Large values do not overflow; -inf adds nothing; NaN propagates.
  const Tensor x = tensor_of({-kInf, 1000, 1000, -kInf, kNaN, 1}, {6}, DType::Float64);
  EXPECT_TRUE(all_close(to_doubles(logcumsumexp(x, 0)),
                        {-kInf, 1000, 1000 + std::log(2.0), 1000 + std::log(2.0), kNaN, kNaN},
                        1e-14));
  EXPECT_THROW(logcumsumexp(tensor_of({1}, {1}, DType::Int64), 0), DTypeError);
}

TEST(Cumulative, ZeroDimAndEmpty) {
  const Tensor s = tensor_of({2.5}, {}, DType::Float32);
  EXPECT_EQ(cumprod(s, 0).dim(), 0);
  EXPECT_TRUE(all_close(to_doubles(cumprod(s, -1)), {2.5}, 0));
  EXPECT_EQ(to_doubles(cummax(s, 0).second), (std::vector<double>{0}));
  const Tensor e = Tensor::empty({0, 3}, DType::Float32);
  EXPECT_EQ(cumprod(e, 1).shape(), (Shape{0, 3}));
  EXPECT_EQ(cummin(e, 0).second.shape(), (Shape{0, 3}));
  EXPECT_THROW(cumprod(e, 2), IndexError);
}

}  // namespace
}  // namespace rcuda::test
