// Random tensors: each element must equal the Philox formula of rcuda/core/philox.h for its
// index (the reference, itself checked against Random123's known answers in test_philox.cpp),
// and the streams must have the right statistics and reproduce from a seed.
#include <gtest/gtest.h>

#include <cmath>

#include "rcuda/core/philox.h"
#include "support/reference.h"

namespace rcuda {
namespace {

using test::to_doubles;

TEST(RandomTest, RandMatchesPhiloxElementFormula) {
  manual_seed(1234);
  const uint64_t offset = default_generator().offset();
  Tensor t = rand({1001});  // not a multiple of the block size
  const std::vector<double> v = to_doubles(t);
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(static_cast<float>(v[i]), philox::uniform_float(1234, offset, i)) << i;
  Tensor d = rand({333}, DType::Float64);
  const std::vector<double> w = to_doubles(d);
  for (size_t i = 0; i < w.size(); ++i)
    ASSERT_EQ(w[i], philox::uniform_double(1234, offset + 1, i)) << i;
}

// float32 normals come from vectorised libm on the CPU (src/backend/cpu/normal_simd.cpp), which
// is within 4 ulp of the scalar formula: compare to 2e-6 (absolute near zero).
constexpr double kNormalTolerance = 2e-6;

std::vector<double> philox_normals(uint64_t seed, uint64_t offset, size_t n) {
  std::vector<double> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = philox::normal_float(seed, offset, i);
  return r;
}

TEST(RandomTest, RandnMatchesPhiloxElementFormula) {
  manual_seed(99);
  Tensor t = randn({50, 41});
  const std::vector<double> v = to_doubles(t);
  EXPECT_TRUE(test::all_close(v, philox_normals(99, 0, v.size()), kNormalTolerance));
  Tensor d = randn({77}, DType::Float64);
  const std::vector<double> w = to_doubles(d);
  for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(w[i], philox::normal_double(99, 1, i)) << i;
}

TEST(RandomTest, SeedReproducesAndCallsDiffer) {
  manual_seed(7);
  const std::vector<double> a = to_doubles(randn({100}));
  const std::vector<double> b = to_doubles(randn({100}));
  manual_seed(7);
  EXPECT_EQ(to_doubles(randn({100})), a);
  EXPECT_EQ(to_doubles(randn({100})), b);
  EXPECT_NE(a, b);
}

TEST(RandomTest, LargeParallelFillMatchesSerialFormula) {
  manual_seed(5);
  Tensor t = randn({300001});  // several threads' worth
  const std::vector<double> v = to_doubles(t);
  EXPECT_TRUE(test::all_close(v, philox_normals(5, 0, v.size()), kNormalTolerance));
  double mean = 0, sq = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  const double var = sq / static_cast<double>(v.size() - 1);
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.01);
}

TEST(RandomTest, HalfTypesRoundTheFloatStream) {
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    manual_seed(11);
    const std::vector<double> v = to_doubles(randn({64}, dtype));
    const std::vector<double> ref =
        to_doubles(test::tensor_of(philox_normals(11, 0, 64), {64}, dtype));
    // One unit of the half type where the float lands next to a rounding boundary.
    EXPECT_TRUE(test::all_close(v, ref, test::tolerance(dtype))) << dtype_name(dtype);
  }
}

TEST(RandomTest, NormalAndUniformParameters) {
  manual_seed(3);
  const std::vector<double> v = to_doubles(normal(10.0, 0.5, {20000}, DType::Float64));
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  EXPECT_NEAR(mean, 10.0, 0.02);
  Tensor u = Tensor::empty({1000}, DType::Float32);
  uniform_(u, -3, -1);
  for (double x : to_doubles(u)) {
    ASSERT_GE(x, -3.0);
    ASSERT_LT(x, -1.0);
  }
}

TEST(RandomTest, NonContiguousViewIsFilledInPlace) {
  Tensor base = zeros({6, 8});
  Tensor view = base.slice(1, 0, 8, 2);  // every other column
  manual_seed(21);
  normal_(view);
  const std::vector<double> all = to_doubles(base);
  const std::vector<double> got = to_doubles(view);
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 8; ++c) {
      if (c % 2 == 1) {
        EXPECT_EQ(all[r * 8 + c], 0.0);  // untouched
      } else {
        // Element (r, c/2) of the view is element r * 4 + c/2 of the call's stream.
        EXPECT_NEAR(all[r * 8 + c],
                    philox::normal_float(21, 0, static_cast<uint64_t>(r * 4 + c / 2)),
                    kNormalTolerance * std::max(1.0, std::fabs(all[r * 8 + c])));
      }
    }
  EXPECT_EQ(got.size(), 24u);
}

TEST(RandomTest, RandintRangeAndDtypes) {
  manual_seed(8);
  EXPECT_THROW(randint(-3, 5, {2}, DType::UInt8), ValueError);  // -3 does not fit uint8
  EXPECT_THROW(randint(0, 257, {2}, DType::UInt8), ValueError);
  for (DType dtype : {DType::Int64, DType::Int32, DType::Float32}) {
    const std::vector<double> v = to_doubles(randint(-3, 5, {5000}, dtype));
    std::vector<int> seen(8, 0);
    for (double x : v) {
      ASSERT_GE(x, -3);
      ASSERT_LT(x, 5);
      ASSERT_EQ(x, std::floor(x));
      ++seen[static_cast<int>(x) + 3];
    }
    for (int c : seen) EXPECT_GT(c, 400) << dtype_name(dtype);  // expected 625 each
  }
  const std::vector<double> bits = to_doubles(randint(0, 2, {1000}, DType::Bool));
  double ones = 0;
  for (double b : bits) ones += b;
  EXPECT_GT(ones, 400);
  EXPECT_LT(ones, 600);
}

TEST(RandomTest, ErrorsNameTheOp) {
  EXPECT_THROW(rand({3}, DType::Int32), DTypeError);
  EXPECT_THROW(randn({-1}), ShapeError);
  EXPECT_THROW(randint(5, 5, {3}), ValueError);
  EXPECT_THROW(randint(0, 3, {3}, DType::Bool), ValueError);
  EXPECT_THROW(normal(0, -1, {3}), ValueError);
  Tensor t = Tensor::empty({2}, DType::Float32);
  EXPECT_THROW(uniform_(t, 2, 1), ValueError);
  try {
    randn({2}, DType::Int64);
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("randn"), std::string::npos);
  }
  EXPECT_EQ(randn({0, 4}).numel(), 0);
}

}  // namespace
}  // namespace rcuda
