// CUDA reductions, softmax and cumsum against the CPU backend (itself checked against double
// loops in tests/ops/test_reduction.cpp): fresh random inputs on the host, the op run on both
// devices, results compared with the tolerances stated below. Shapes run from 0-dim and
// zero-size to a 1-D input past 2^24 elements and [4096, 4096]; device inputs come contiguous,
// with transposed strides and as stepped slices; every dtype each op accepts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "support/devices.h"

namespace rcuda {
namespace {

using test::backend_tolerance;
using test::kCpu;
using test::on_cuda;
using test::values;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// |actual[i] - expected[i]| <= absolute[i] + relative * |expected[i]|; NaN must meet NaN and an
// infinity the same infinity.
::testing::AssertionResult near(const std::vector<double>& actual,
                                const std::vector<double>& expected, double relative,
                                const std::vector<double>& absolute) {
  if (actual.size() != expected.size() || absolute.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " vs " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    const bool same_special = (std::isnan(a) && std::isnan(e)) || (std::isinf(e) && a == e);
    if (same_special) continue;
    if (std::isnan(a) || std::isnan(e) || std::isinf(a) || std::isinf(e) ||
        !(std::fabs(a - e) <= absolute[i] + relative * std::fabs(e)))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a << " vs expected " << e << " (relative " << relative
             << ", absolute " << absolute[i] << ")";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult near(const std::vector<double>& actual,
                                const std::vector<double>& expected, double relative,
                                double absolute) {
  return near(actual, expected, relative, std::vector<double>(expected.size(), absolute));
}

// A sum of n terms of magnitude up to `scale`: the backends add in different orders (the CPU
// in per-thread runs, in double for float32; the GPU in per-thread runs joined by a tree, in
// float), so their rounding errors are independent random walks of about sqrt(n) roundings of
// the terms' size. Relative to the result that could be anything (random-sign terms cancel),
// so the bound is absolute, sqrt(n) * scale times the dtype's tolerance, plus one rounding of
// the result. Integer sums are exact (tolerance 0).
::testing::AssertionResult sums_near(const Tensor& actual, const Tensor& expected, int64_t n,
                                     double scale) {
  const double tol = backend_tolerance(expected.dtype());
  return near(values(actual), values(expected), tol,
              tol * std::sqrt(static_cast<double>(std::max<int64_t>(n, 1))) * scale);
}

// Note [Variance tolerance]
// Welford's update (GPU) and two passes in double (CPU) are both stable, but their rounding
// errors are a few roundings of the inputs' squares, not of the variance: a nearly constant row
// (three float64 values agreeing to 5 digits) has a variance 1e-5 of its mean square, whose
// relative error reaches 1e-10. So the bound on a variance is absolute, in units of the mean
// square of the row's inputs (growing like sqrt(n) roundings, times n / (n - correction) for
// the divisor), plus one rounding of the result. A standard deviation s = sqrt(v) then errs by
// at most |dv| / (sqrt(v') + sqrt(v)) <= dv / max(s, sqrt(dv)): dv / s for a spread-out row,
// sqrt(dv) for a constant one.

// The mean of the squares of x's elements over dims (the CPU backend, in float64).
std::vector<double> mean_squares(const Tensor& x, const Dims& dims, bool keepdim) {
  const Tensor x64 = to(x, DType::Float64);
  return values(mean(mul(x64, x64), dims, keepdim));
}

// Absolute bounds for var(x, dims, correction) of n elements per output (Note [Variance
// tolerance]); `relative` is the dtype's tolerance times the sum growth.
std::vector<double> variance_bounds(const Tensor& x, const Dims& dims, bool keepdim, int64_t n,
                                    double correction, double relative) {
  std::vector<double> bounds = mean_squares(x, dims, keepdim);
  const double divisor = std::max(1.0, static_cast<double>(n) - correction);
  for (double& b : bounds) b *= relative * static_cast<double>(std::max<int64_t>(n, 1)) / divisor;
  return bounds;
}

// The bounds for std given those for var and the expected standard deviations.
std::vector<double> std_bounds(std::vector<double> var_bounds, const std::vector<double>& s) {
  for (size_t i = 0; i < var_bounds.size(); ++i)
    var_bounds[i] /= std::max(std::fabs(s[i]), std::sqrt(var_bounds[i]));
  return var_bounds;
}

// The spacing of dtype's subnormal numbers (0 for integers).
double smallest_subnormal(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return std::ldexp(1.0, -24);
    case DType::BFloat16:
      return std::ldexp(1.0, -133);
    case DType::Float32:
      return std::numeric_limits<float>::denorm_min();
    case DType::Float64:
      return std::numeric_limits<double>::denorm_min();
    default:
      return 0;
  }
}

// Fresh random values in [low, high) (uint8 holds no negatives, so its range starts at 0).
Tensor random_input(const Shape& shape, DType dtype, double low = -2, double high = 2) {
  if (dtype == DType::UInt8) {
    low = std::max(low, 0.0);
    high = std::max(high, low + 2);
  }
  return test::random_tensor(shape, dtype, low, high);
}

// The same values as CPU and CUDA tensors in several layouts; the CUDA copies keep their
// strides on the device (to() alone would make them contiguous).
struct Variant {
  const char* layout;
  Tensor cpu, cuda;
};

std::vector<Variant> variants(const Tensor& x) {
  std::vector<Variant> out = {{"contiguous", x, on_cuda(x)}};
  if (x.dim() >= 2) {
    out.push_back({"transposed on device", x, on_cuda(clone(x.transpose(0, 1))).transpose(0, 1)});
    const Tensor t = test::transposed_copy(x);
    out.push_back({"transposed_copy", t, on_cuda(t)});
  }
  if (x.dim() >= 1 && x.shape().back() >= 2) {
    const int64_t last = x.dim() - 1, n = x.shape().back();
    out.push_back({"stepped on device", x.slice(last, 0, n, 2), on_cuda(x).slice(last, 0, n, 2)});
  }
  return out;
}

int64_t reduced_count(const Shape& shape, const Dims& dims) {
  if (dims.empty()) return numel(shape);
  int64_t n = 1;
  for (int64_t d : dims)
    if (!shape.empty()) n *= shape[static_cast<size_t>(d < 0 ? d + shape.size() : d)];
  return n;
}

std::string describe(const char* op, const Tensor& x, const Dims& dims, bool keepdim,
                     const char* layout) {
  std::ostringstream s;
  s << op << " " << dtype_name(x.dtype()) << " " << shape_str(x.shape()) << " dims "
    << shape_str(dims) << " keepdim " << keepdim << " " << layout;
  return s.str();
}

// The same shape, dtype and device type as the CPU result.
void expect_like(const Tensor& cuda_result, const Tensor& cpu_result, const std::string& what) {
  EXPECT_TRUE(cuda_result.device().is_cuda()) << what;
  EXPECT_EQ(cuda_result.shape(), cpu_result.shape()) << what;
  EXPECT_EQ(cuda_result.dtype(), cpu_result.dtype()) << what;
}

bool bit_identical(const Tensor& a, const Tensor& b) {
  const Tensor x = contiguous(to(a, kCpu)), y = contiguous(to(b, kCpu));
  return x.numel() == y.numel() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), x.numel() * x.element_size()) == 0;
}

struct ReduceCase {
  Shape shape;
  Dims dims;
};

// 0-dim, one element, zero-size dims, and reductions over {0}, {-1}, {0, 2} and everything of
// shapes that take the GPU's row, column and split paths.
const std::vector<ReduceCase>& reduce_cases() {
  static const std::vector<ReduceCase> cases = {
      {{}, {}},           {{}, {0}},          {{1}, {}},           {{1}, {0}},
      {{0}, {}},          {{3, 0, 5}, {1}},   {{3, 0, 5}, {0}},    {{3, 0, 5}, {}},
      {{7, 33, 65}, {0}}, {{7, 33, 65}, {1}}, {{7, 33, 65}, {-1}}, {{7, 33, 65}, {0, 2}},
      {{7, 33, 65}, {}},  {{2, 20000}, {1}},  {{20000, 3}, {0}},   {{20000, 3}, {-1}},
      {{40000}, {}}};
  return cases;
}

// Few elements per output, for products (hundreds of factors under- or overflow).
const std::vector<ReduceCase>& product_cases() {
  static const std::vector<ReduceCase> cases = {
      {{}, {}},          {{1}, {0}},          {{0}, {}},         {{3, 0, 5}, {1}}, {{7, 9, 5}, {0}},
      {{7, 9, 5}, {-1}}, {{7, 9, 5}, {0, 2}}, {{20000, 3}, {1}}, {{3, 40}, {}}};
  return cases;
}

// Runs f(variant, dims, keepdim, description) over every case, layout and keepdim.
template <typename F>
void for_each_case(const std::vector<ReduceCase>& cases, DType dtype, double low, double high,
                   const char* op, F f) {
  for (const ReduceCase& c : cases) {
    const Tensor x = random_input(c.shape, dtype, low, high);
    for (const Variant& v : variants(x))
      for (bool keepdim : {false, true})
        f(v, c.dims, keepdim, describe(op, x, c.dims, keepdim, v.layout));
  }
}

TEST(CudaReduction, SumAndMeanMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::all_dtypes()) {
    for_each_case(
        reduce_cases(), dtype, -2, 2, "sum",
        [&](const Variant& v, const Dims& dims, bool keepdim, const std::string& what) {
          const Tensor expected = sum(v.cpu, dims, keepdim), actual = sum(v.cuda, dims, keepdim);
          expect_like(actual, expected, what);
          EXPECT_TRUE(sums_near(actual, expected, reduced_count(v.cpu.shape(), dims), 2)) << what;
          if (!is_floating(dtype)) return;
          const Tensor m = mean(v.cpu, dims, keepdim), mc = mean(v.cuda, dims, keepdim);
          expect_like(mc, m, what);
          // A mean is a sum divided by n: its error is the sum's over n, within one rounding.
          EXPECT_TRUE(
              near(values(mc), values(m), backend_tolerance(dtype), backend_tolerance(dtype)))
              << "mean " << what;
        });
  }
}

TEST(CudaReduction, ProdMatchesCpu) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::all_dtypes()) {
    // Floating factors near 1 keep products representable; integer products wrap as int64
    // on both backends, exactly.
    const double low = is_floating(dtype) ? 0.5 : -3, high = is_floating(dtype) ? 1.5 : 3;
    for_each_case(product_cases(), dtype, low, high, "prod",
                  [&](const Variant& v, const Dims& dims, bool keepdim, const std::string& what) {
                    const Tensor expected = prod(v.cpu, dims, keepdim),
                                 actual = prod(v.cuda, dims, keepdim);
                    expect_like(actual, expected, what);
                    // Each factor adds one rounding (relative): n of them random-walk to sqrt(n).
                    // A float16 product of a hundred factors may be subnormal, where values are
                    // evenly spaced: there the backends may round one spacing apart.
                    const double n = static_cast<double>(reduced_count(v.cpu.shape(), dims));
                    EXPECT_TRUE(near(values(actual), values(expected),
                                     backend_tolerance(dtype) * std::max(1.0, std::sqrt(n)),
                                     2 * smallest_subnormal(dtype)))
                        << what;
                  });
  }
}

TEST(CudaReduction, MaxMinAllAnyMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::all_dtypes()) {
    // Values in {-1, 0, 1} (or [-1, 2) for floats): zeros for all/any, many ties for max/min.
    for_each_case(
        reduce_cases(), dtype, -1, 2, "max/min/all/any",
        [&](const Variant& v, const Dims& dims, bool keepdim, const std::string& what) {
          for (bool is_all : {true, false}) {
            const Tensor expected = is_all ? all(v.cpu, dims, keepdim) : any(v.cpu, dims, keepdim);
            const Tensor actual = is_all ? all(v.cuda, dims, keepdim) : any(v.cuda, dims, keepdim);
            expect_like(actual, expected, what);
            EXPECT_EQ(values(actual), values(expected)) << (is_all ? "all " : "any ") << what;
          }
          if (v.cpu.numel() == 0 || !dims.empty() || keepdim) return;
          // Over every element: picks an input value, so the backends agree exactly.
          EXPECT_EQ(values(max(v.cuda)), values(max(v.cpu))) << "max " << what;
          EXPECT_EQ(values(min(v.cuda)), values(min(v.cpu))) << "min " << what;
        });
  }
}

TEST(CudaReduction, ArgmaxArgminAndMaxMinWithDimKeepFirstIndex) {
  RCUDA_REQUIRE_CUDA();
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{}, 0},           {{1}, 0},        {{7, 33, 65}, 0}, {{7, 33, 65}, 1},
      {{7, 33, 65}, -1}, {{3, 0, 5}, 0},  {{3, 0, 5}, 2},   {{2, 20000}, 1},
      {{20000, 3}, 0},   {{20000, 3}, 1}, {{300000}, 0}};
  for (DType dtype : test::all_dtypes()) {
    for (const auto& [shape, dim] : cases) {
      // Integers in [0, 3) (converted to the dtype): ties everywhere, so first-index matters.
      const Tensor x = to(test::random_tensor(shape, DType::Int64, 0, 3), dtype);
      for (const Variant& v : variants(x)) {
        for (bool keepdim : {false, true}) {
          const std::string what = describe("arg", x, {dim}, keepdim, v.layout);
          for (bool is_max : {true, false}) {
            const auto [values_cpu, indices_cpu] =
                is_max ? max(v.cpu, dim, keepdim) : min(v.cpu, dim, keepdim);
            const auto [values_cuda, indices_cuda] =
                is_max ? max(v.cuda, dim, keepdim) : min(v.cuda, dim, keepdim);
            expect_like(values_cuda, values_cpu, what);
            expect_like(indices_cuda, indices_cpu, what);
            EXPECT_EQ(values(values_cuda), values(values_cpu)) << what;
            EXPECT_EQ(values(indices_cuda), values(indices_cpu)) << what;
            const Tensor a_cpu = is_max ? argmax(v.cpu, dim, keepdim) : argmin(v.cpu, dim, keepdim);
            const Tensor a_cuda =
                is_max ? argmax(v.cuda, dim, keepdim) : argmin(v.cuda, dim, keepdim);
            EXPECT_EQ(values(a_cuda), values(a_cpu)) << what;
            if (v.cpu.numel() == 0) continue;
            // Without a dim: the index into the flattened tensor.
            const Tensor flat_cpu = is_max ? argmax(v.cpu, std::nullopt, keepdim)
                                           : argmin(v.cpu, std::nullopt, keepdim);
            const Tensor flat_cuda = is_max ? argmax(v.cuda, std::nullopt, keepdim)
                                            : argmin(v.cuda, std::nullopt, keepdim);
            expect_like(flat_cuda, flat_cpu, what);
            EXPECT_EQ(values(flat_cuda), values(flat_cpu)) << "flat " << what;
          }
        }
      }
    }
  }
}

TEST(CudaReduction, NormVarStdLogsumexpMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::floating_dtypes()) {
    for_each_case(reduce_cases(), dtype, -2, 2, "norm/var/std",
                  [&](const Variant& v, const Dims& dims, bool keepdim, const std::string& what) {
                    const int64_t n = reduced_count(v.cpu.shape(), dims);
                    const double tol = backend_tolerance(dtype);
                    const double sum_growth = std::max(1.0, std::sqrt(static_cast<double>(n)) / 32);
                    for (double p : {1.0, 2.0, 3.5, kInf, 0.0}) {
                      if (std::isinf(p) && n == 0) continue;  // undefined over nothing: an error
                      const Tensor expected = norm(v.cpu, p, dims, keepdim);
                      const Tensor actual = norm(v.cuda, p, dims, keepdim);
                      expect_like(actual, expected, what);
                      // Sums of positive terms: the relative error grows like sqrt(n) roundings
                      // (see sums_near), and the 1/p-th root shrinks it; the 0-norm counts exactly.
                      EXPECT_TRUE(near(values(actual), values(expected), tol * sum_growth, 0))
                          << "norm p=" << p << " " << what;
                    }
                    for (double correction : {0.0, 1.0}) {
                      const Tensor expected = var(v.cpu, dims, correction, keepdim);
                      const Tensor actual = var(v.cuda, dims, correction, keepdim);
                      expect_like(actual, expected, what);
                      // Note [Variance tolerance]: absolute, in units of the inputs' mean square.
                      const std::vector<double> bounds = variance_bounds(
                          v.cpu, dims, keepdim, n, correction, 4 * tol * sum_growth);
                      EXPECT_TRUE(near(values(actual), values(expected), tol, bounds))
                          << "var correction=" << correction << " " << what;
                      const std::vector<double> s =
                          values(rcuda::std(v.cpu, dims, correction, keepdim));
                      EXPECT_TRUE(near(values(rcuda::std(v.cuda, dims, correction, keepdim)), s,
                                       tol, std_bounds(bounds, s)))
                          << "std correction=" << correction << " " << what;
                    }
                  });
  }
  for (DType dtype : test::all_dtypes()) {  // integers give float32, as torch
    for_each_case(reduce_cases(), dtype, -3, 3, "logsumexp",
                  [&](const Variant& v, const Dims& dims, bool keepdim, const std::string& what) {
                    const Tensor expected = logsumexp(v.cpu, dims, keepdim);
                    const Tensor actual = logsumexp(v.cuda, dims, keepdim);
                    expect_like(actual, expected, what);
                    // log(sum) turns the sum's relative error into an absolute one.
                    const double n = static_cast<double>(reduced_count(v.cpu.shape(), dims));
                    const double tol = backend_tolerance(expected.dtype());
                    EXPECT_TRUE(near(values(actual), values(expected), tol,
                                     tol * std::max(1.0, std::sqrt(n) / 32)))
                        << what;
                  });
  }
}

// A [37, 129] input with NaNs at random places (several in some rows, none in others) and one
// row of NaN only.
Tensor with_nans(DType dtype) {
  std::vector<double> v = values(test::random_tensor({37, 129}, DType::Float64, -2, 2));
  for (int k = 0; k < 40; ++k) v[test::rng()() % v.size()] = kNaN;
  for (int j = 0; j < 129; ++j) v[5 * 129 + j] = kNaN;
  return test::tensor_of(v, {37, 129}, dtype);
}

TEST(CudaReduction, NanPropagatesAsOnCpu) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::floating_dtypes()) {
    const Tensor x = with_nans(dtype), xc = on_cuda(x);
    const double tol = backend_tolerance(dtype);
    for (const Dims& dims : std::vector<Dims>{{0}, {1}, {}}) {
      const std::string what = describe("nan", x, dims, false, "contiguous");
      EXPECT_TRUE(sums_near(sum(xc, dims), sum(x, dims), 129 * 37, 2)) << what;
      EXPECT_TRUE(near(values(norm(xc, kInf, dims)), values(norm(x, kInf, dims)), 0, 0)) << what;
      EXPECT_TRUE(near(values(norm(xc, 2, dims)), values(norm(x, 2, dims)), 4 * tol, 0)) << what;
      const int64_t n = reduced_count(x.shape(), dims);
      EXPECT_TRUE(near(values(var(xc, dims)), values(var(x, dims)), tol,
                       variance_bounds(x, dims, false, n, 1.0, 4 * tol)))
          << what;
      EXPECT_TRUE(near(values(logsumexp(xc, dims)), values(logsumexp(x, dims)), tol, tol)) << what;
      EXPECT_EQ(values(all(xc, dims)), values(all(x, dims))) << what;  // NaN is non-zero
      EXPECT_EQ(values(any(xc, dims)), values(any(x, dims))) << what;
    }
    EXPECT_TRUE(near(values(max(xc)), values(max(x)), 0, 0));
    EXPECT_TRUE(near(values(min(xc)), values(min(x)), 0, 0));
    for (int64_t dim : {0, 1}) {
      // The first NaN along the dim wins, value and index.
      EXPECT_EQ(values(argmax(xc, dim)), values(argmax(x, dim))) << dim;
      EXPECT_EQ(values(argmin(xc, dim)), values(argmin(x, dim))) << dim;
      EXPECT_TRUE(near(values(max(xc, dim).first), values(max(x, dim).first), 0, 0)) << dim;
      EXPECT_TRUE(near(values(softmax(xc, dim)), values(softmax(x, dim)), tol, tol)) << dim;
      EXPECT_TRUE(near(values(log_softmax(xc, dim)), values(log_softmax(x, dim)), tol, tol)) << dim;
      EXPECT_TRUE(near(values(cumsum(xc, dim)), values(cumsum(x, dim)), tol, tol * 20)) << dim;
    }
    EXPECT_EQ(values(argmax(xc)), values(argmax(x)));
    EXPECT_EQ(values(argmin(xc)), values(argmin(x)));
  }
}

TEST(CudaReduction, EmptyReductionsGiveIdentities) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = test::random_tensor({3, 0, 5}, DType::Float32), xc = on_cuda(x);
  EXPECT_EQ(values(sum(xc, {1})), std::vector<double>(15, 0.0));
  EXPECT_EQ(values(prod(xc, {1})), std::vector<double>(15, 1.0));
  EXPECT_EQ(values(logsumexp(xc, {1})), std::vector<double>(15, -kInf));
  EXPECT_TRUE(near(values(var(xc, {1})), std::vector<double>(15, kNaN), 0, 0));
  EXPECT_EQ(values(all(xc, {1})), std::vector<double>(15, 1.0));
  EXPECT_EQ(values(any(xc, {1})), std::vector<double>(15, 0.0));
  EXPECT_EQ(sum(xc, {0}).shape(), (Shape{0, 5}));
  EXPECT_EQ(values(sum(on_cuda(test::random_tensor({0}, DType::Int64)))), std::vector<double>{0});
}

// 1-D past 2^24 elements (one output: the split path), [4096, 4096] by rows, by columns and
// whole, a half-type row sum (8 elements per 16-byte load) and a misaligned start.
TEST(CudaReduction, LargeInputsMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  const int64_t n = (int64_t{1} << 24) + 4099;
  const Tensor x = test::random_tensor({n}, DType::Float32), xc = on_cuda(x);
  const double tol = backend_tolerance(DType::Float32);
  EXPECT_TRUE(sums_near(sum(xc), sum(x), n, 2));
  EXPECT_TRUE(near(values(mean(xc)), values(mean(x)), tol, tol));
  EXPECT_EQ(values(max(xc)), values(max(x)));
  EXPECT_EQ(values(min(xc)), values(min(x)));
  EXPECT_EQ(values(argmax(xc)), values(argmax(x)));
  EXPECT_EQ(values(argmin(xc)), values(argmin(x)));
  const double growth = std::sqrt(static_cast<double>(n)) / 32;
  EXPECT_TRUE(near(values(norm(xc, 2)), values(norm(x, 2)), tol * growth, 0));
  EXPECT_EQ(values(norm(xc, kInf)), values(norm(x, kInf)));
  EXPECT_TRUE(near(values(var(xc)), values(var(x)), 4 * tol * growth, 0));
  const Tensor shifted = x.slice(0, 1, n), shifted_cuda = xc.slice(0, 1, n);
  EXPECT_TRUE(sums_near(sum(shifted_cuda), sum(shifted), n, 2));
  EXPECT_EQ(values(argmax(shifted_cuda)), values(argmax(shifted)));

  const Tensor m = test::random_tensor({4096, 4096}, DType::Float32), mc = on_cuda(m);
  for (const Dims& dims : std::vector<Dims>{{0}, {-1}, {}}) {
    const std::string what = shape_str(dims);
    EXPECT_TRUE(sums_near(sum(mc, dims), sum(m, dims), reduced_count(m.shape(), dims), 2)) << what;
    EXPECT_TRUE(near(values(var(mc, dims)), values(var(m, dims)), 8 * tol, 0)) << what;
    EXPECT_TRUE(near(values(norm(mc, 1, dims)), values(norm(m, 1, dims)), 4 * tol, 0)) << what;
    EXPECT_TRUE(near(values(logsumexp(mc, dims)), values(logsumexp(m, dims)), tol, tol)) << what;
  }
  for (int64_t dim : {0, 1}) {
    EXPECT_EQ(values(argmax(mc, dim)), values(argmax(m, dim))) << dim;
    EXPECT_EQ(values(min(mc, dim).first), values(min(m, dim).first)) << dim;
  }
  const Tensor h = to(m, DType::Float16), hc = on_cuda(h);
  EXPECT_TRUE(sums_near(sum(hc, {-1}), sum(h, {-1}), 4096, 2));
  EXPECT_TRUE(sums_near(sum(hc, {0}), sum(h, {0}), 4096, 2));
}

TEST(CudaReduction, ResultsAreDeterministic) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = on_cuda(test::random_tensor({(int64_t{1} << 24) + 77}, DType::Float32));
  const Tensor m = on_cuda(test::random_tensor({4096, 4096}, DType::Float32));
  const std::vector<std::function<Tensor()>> runs = {[&] { return sum(x); },
                                                     [&] { return var(x); },
                                                     [&] { return norm(x, 2); },
                                                     [&] { return argmax(x); },
                                                     [&] { return sum(m, {0}); },
                                                     [&] { return sum(m, {1}); },
                                                     [&] { return var(m, {0}); },
                                                     [&] { return softmax(m, 1); },
                                                     [&] { return log_softmax(m, 0); },
                                                     [&] { return cumsum(x, 0); },
                                                     [&] { return cumsum(m, 0); }};
  for (size_t k = 0; k < runs.size(); ++k) EXPECT_TRUE(bit_identical(runs[k](), runs[k]())) << k;
}

TEST(CudaSoftmax, MatchesCpuForEveryDimLayoutAndDtype) {
  RCUDA_REQUIRE_CUDA();
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{}, 0},          {{1}, 0},         {{0, 5}, 1},       {{7, 33, 65}, 0},
      {{7, 33, 65}, 1}, {{7, 33, 65}, 2}, {{7, 33, 65}, -1}, {{1000, 5}, -1},
      {{3, 1500}, 1},   {{2, 100003}, 1}, {{100003, 2}, 0},  {{64, 4096}, -1}};
  for (DType dtype : test::floating_dtypes()) {
    for (const auto& [shape, dim] : cases) {
      const Tensor x = test::random_tensor(shape, dtype, -8, 8);
      for (const Variant& v : variants(x)) {
        const std::string what = describe("softmax", x, {dim}, false, v.layout);
        // The normaliser is a sum of positive terms: relative error grows like sqrt(n).
        const double n =
            shape.empty() ? 1 : static_cast<double>(shape[dim < 0 ? dim + shape.size() : dim]);
        const double tol = backend_tolerance(dtype) * std::max(1.0, std::sqrt(n) / 32);
        const Tensor expected = softmax(v.cpu, dim), actual = softmax(v.cuda, dim);
        expect_like(actual, expected, what);
        EXPECT_TRUE(near(values(actual), values(expected), tol, tol * 1e-3)) << what;
        const Tensor log_expected = log_softmax(v.cpu, dim), log_actual = log_softmax(v.cuda, dim);
        EXPECT_TRUE(near(values(log_actual), values(log_expected), tol, tol)) << "log " << what;
      }
    }
  }
}

TEST(CudaSoftmax, LargeRowsAndInfinitiesMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  const Tensor m = test::random_tensor({4096, 4096}, DType::Float32, -8, 8), mc = on_cuda(m);
  const double tol = backend_tolerance(DType::Float32) * 2;
  for (int64_t dim : {0, 1}) {
    EXPECT_TRUE(near(values(softmax(mc, dim)), values(softmax(m, dim)), tol, tol * 1e-3)) << dim;
    EXPECT_TRUE(near(values(log_softmax(mc, dim)), values(log_softmax(m, dim)), tol, tol)) << dim;
  }
  // Rows: a -inf among finite values (weight 0), all -inf (NaN), a +inf (NaN), finite.
  const std::vector<double> rows = {1, -kInf, 2, 3, -kInf, -kInf, -kInf, -kInf,
                                    1, kInf,  2, 3, 0.5,   -1,    7,     2};
  for (DType dtype : test::floating_dtypes()) {
    const Tensor x = test::tensor_of(rows, {4, 4}, dtype), xc = on_cuda(x);
    const double t = 4 * backend_tolerance(dtype);
    EXPECT_TRUE(near(values(softmax(xc, 1)), values(softmax(x, 1)), t, 0)) << dtype_name(dtype);
    EXPECT_TRUE(near(values(log_softmax(xc, 1)), values(log_softmax(x, 1)), t, 0))
        << dtype_name(dtype);
    EXPECT_TRUE(near(values(softmax(xc, 0)), values(softmax(x, 0)), t, 0)) << dtype_name(dtype);
  }
}

TEST(CudaCumsum, MatchesCpuForEveryDtypeDimAndLayout) {
  RCUDA_REQUIRE_CUDA();
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{}, 0},          {{1}, 0},         {{0, 3}, 0},    {{0, 3}, 1},    {{7, 33, 65}, 0},
      {{7, 33, 65}, 1}, {{7, 33, 65}, 2}, {{3, 5000}, 1}, {{5000, 3}, 0}, {{5000, 3}, -1}};
  for (DType dtype : test::all_dtypes()) {
    for (const auto& [shape, dim] : cases) {
      const Tensor x = random_input(shape, dtype, -2, 2);
      for (const Variant& v : variants(x)) {
        const std::string what = describe("cumsum", x, {dim}, false, v.layout);
        const Tensor expected = cumsum(v.cpu, dim), actual = cumsum(v.cuda, dim);
        expect_like(actual, expected, what);
        const double n =
            shape.empty() ? 1 : static_cast<double>(shape[dim < 0 ? dim + shape.size() : dim]);
        EXPECT_TRUE(sums_near(actual, expected, static_cast<int64_t>(n), 2)) << what;
      }
    }
  }
}

// Lines long enough to be cut into chunks (Note [Chunked scan]): rows and strided lines.
TEST(CudaCumsum, LongLinesMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  const int64_t n = (int64_t{1} << 24) + 1001;
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int64}) {
    const Tensor x = test::random_tensor({n}, dtype, -2, 2);
    EXPECT_TRUE(sums_near(cumsum(on_cuda(x), 0), cumsum(x, 0), n, 2)) << dtype_name(dtype);
  }
  const Tensor m = test::random_tensor({4096, 4096}, DType::Float32), mc = on_cuda(m);
  for (int64_t dim : {0, 1})
    EXPECT_TRUE(sums_near(cumsum(mc, dim), cumsum(m, dim), 4096, 2)) << dim;
  const Tensor tall = test::random_tensor({300000, 3}, DType::Float16);
  EXPECT_TRUE(sums_near(cumsum(on_cuda(tall), 0), cumsum(tall, 0), 300000, 2));
  const Tensor ints = test::random_tensor({3, 300000}, DType::Int32, -100, 100);
  EXPECT_EQ(values(cumsum(on_cuda(ints), 1)), values(cumsum(ints, 1)));
}

}  // namespace
}  // namespace rcuda
