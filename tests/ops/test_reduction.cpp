// Tests for rcuda/ops/reduction.h and the CPU backend's reduce, arg_reduce, var, softmax and
// cumsum: every result is checked against plain double-precision loops over the input's values,
// read back by hand with to_doubles (support/reference.h), on fresh random inputs in contiguous,
// transposed and stepped layouts, over shapes from 0-dim to large enough to run in parallel.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "support/reference.h"

namespace rcuda::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct ReduceCase {
  Shape shape;
  Dims dims;
};

// Shapes from 0-dim to past kParallelGrain (32768 elements): [200, 300] reduced along one dim
// has many outputs (threads split the outputs); [40000] and [2, 20000] have few (threads split
// the reduced range and merge partials).
const std::vector<ReduceCase>& reduce_cases() {
  static const std::vector<ReduceCase> cases = {{{}, {}},
                                                {{}, {0}},
                                                {{}, {-1}},
                                                {{1}, {}},
                                                {{7}, {0}},
                                                {{3, 4, 5}, {1}},
                                                {{3, 4, 5}, {0, 2}},
                                                {{3, 4, 5}, {-1}},
                                                {{3, 4, 5}, {}},
                                                {{3, 4, 5}, {-3, -1}},
                                                {{2, 3, 4, 5}, {1, 3}},
                                                {{200, 300}, {0}},
                                                {{200, 300}, {1}},
                                                {{200, 300}, {}},
                                                {{40000}, {}},
                                                {{2, 20000}, {1}},
                                                {{3, 0, 4}, {1}},
                                                {{3, 0, 4}, {0}},
                                                {{3, 0, 4}, {}},
                                                {{0}, {}}};
  return cases;
}

// Cases whose reductions cover few elements, for products (a product of hundreds of values in
// [-2, 2] under- or overflows, and integer products wrap).
const std::vector<ReduceCase>& small_reduce_cases() {
  static const std::vector<ReduceCase> cases = {
      {{}, {}},          {{1}, {}},         {{7}, {0}},       {{3, 4, 5}, {1}}, {{3, 4, 5}, {0, 2}},
      {{3, 4, 5}, {-1}}, {{20000, 3}, {1}}, {{3, 0, 4}, {1}}, {{3, 0, 4}, {0}}, {{0}, {}}};
  return cases;
}

std::string describe(const Tensor& x, const Dims& dims, bool keepdim, const char* layout) {
  std::ostringstream s;
  s << dtype_name(x.dtype()) << " " << shape_str(x.shape()) << " dims " << shape_str(dims)
    << " keepdim " << keepdim << " " << layout;
  return s.str();
}

// The same random values in three layouts: contiguous, transposed (dim >= 2) and stepped
// (every other element of a larger tensor along dim 0).
std::vector<std::pair<const char*, Tensor>> layouts(const Shape& shape, DType dtype,
                                                    double low = -2, double high = 2) {
  // uint8 holds no negatives (and converting a negative double to it is undefined).
  if (dtype == DType::UInt8) {
    low = std::max(low, 0.0);
    high = std::max(high, low + 2);
  }
  std::vector<std::pair<const char*, Tensor>> out;
  out.emplace_back("contiguous", random_tensor(shape, dtype, low, high));
  if (shape.size() >= 2) {
    out.emplace_back("transposed", transposed_copy(random_tensor(shape, dtype, low, high)));
  }
  if (!shape.empty()) {
    Shape big = shape;
    big[0] *= 2;
    out.emplace_back("stepped", random_tensor(big, dtype, low, high).slice(0, 0, big[0], 2));
  }
  return out;
}

std::vector<bool> reduced_mask(int64_t ndim, const Dims& dims) {
  std::vector<bool> mask(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : dims)
    if (ndim > 0) mask[static_cast<size_t>(d < 0 ? d + ndim : d)] = true;
  return mask;
}

Shape result_shape(const Shape& shape, const Dims& dims, bool keepdim) {
  const std::vector<bool> mask = reduced_mask(static_cast<int64_t>(shape.size()), dims);
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!mask[d])
      out.push_back(shape[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

// The input's elements grouped by output element (outputs and elements in row-major order).
std::vector<std::vector<double>> groups_of(const Tensor& x, const Dims& dims) {
  const std::vector<double> values = to_doubles(x);
  const std::vector<bool> mask = reduced_mask(x.dim(), dims);
  const Shape out_shape = result_shape(x.shape(), dims, true);
  std::vector<std::vector<double>> groups(static_cast<size_t>(numel(out_shape)));
  std::vector<int64_t> index(static_cast<size_t>(x.dim()), 0);
  for (double v : values) {
    int64_t o = 0;
    for (size_t d = 0; d < index.size(); ++d) o = o * out_shape[d] + (mask[d] ? 0 : index[d]);
    groups[static_cast<size_t>(o)].push_back(v);
    for (int64_t d = x.dim() - 1; d >= 0; --d) {
      if (++index[d] < x.shape()[d]) break;
      index[d] = 0;
    }
  }
  return groups;
}

using Reference = std::function<double(const std::vector<double>&)>;

std::vector<double> reference(const Tensor& x, const Dims& dims, const Reference& f) {
  std::vector<double> out;
  for (const std::vector<double>& g : groups_of(x, dims)) out.push_back(f(g));
  return out;
}

double ref_sum(const std::vector<double>& g) {
  double s = 0;
  for (double v : g) s += v;
  return s;
}
double ref_prod(const std::vector<double>& g) {
  double s = 1;
  for (double v : g) s *= v;
  return s;
}
double ref_mean(const std::vector<double>& g) { return ref_sum(g) / static_cast<double>(g.size()); }
double ref_var(const std::vector<double>& g, double correction) {
  const double m = ref_mean(g);
  double s = 0;
  for (double v : g) s += (v - m) * (v - m);
  return s / std::max(0.0, static_cast<double>(g.size()) - correction);
}
double ref_norm(const std::vector<double>& g, double p) {
  double s = 0;
  for (double v : g) {
    if (std::isinf(p))
      s = (std::isnan(v) || std::fabs(v) > s) ? std::fabs(v) : s;
    else if (p == 0)
      s += v != 0;
    else
      s += std::pow(std::fabs(v), p);
  }
  return (std::isinf(p) || p == 0) ? s : std::pow(s, 1 / p);
}
double ref_logsumexp(const std::vector<double>& g) {
  double m = -kInf;
  for (double v : g) m = std::max(m, v);
  if (std::isinf(m)) return m;
  double s = 0;
  for (double v : g) s += std::exp(v - m);
  return m + std::log(s);
}

// Tolerance for a reduction over n elements. Inputs are exact in their dtype, so the error is
// the accumulation's plus one final rounding: each of the n additions rounds once, and with
// random signs those errors add up like a random walk, growing as sqrt(n). all_close compares
// against max(1, |expected|), so a sum that cancels to near zero needs that growth allowed in
// absolute terms.
double sum_tolerance(DType dtype, size_t n) {
  return tolerance(dtype) * std::max(1.0, std::sqrt(static_cast<double>(n)));
}

using ReduceFn = std::function<Tensor(const Tensor&, const Dims&, bool)>;

struct Check {
  ReduceFn op;
  Reference ref;
  std::function<DType(DType)> out_dtype = [](DType d) { return d; };
  std::function<double(DType, size_t)> tol = [](DType d, size_t) { return tolerance(d); };
  double low = -2, high = 2;
};

void check_reduction(const Check& check, const std::vector<DType>& dtypes,
                     const std::vector<ReduceCase>& cases) {
  for (DType dtype : dtypes) {
    for (const ReduceCase& c : cases) {
      for (bool keepdim : {false, true}) {
        for (const auto& [layout, x] : layouts(c.shape, dtype, check.low, check.high)) {
          // keepdim only changes the returned view: one layout is enough to check it.
          if (keepdim && std::string(layout) != "contiguous") continue;
          SCOPED_TRACE(describe(x, c.dims, keepdim, layout));
          const Tensor r = check.op(x, c.dims, keepdim);
          EXPECT_EQ(r.shape(), result_shape(c.shape, c.dims, keepdim));
          EXPECT_EQ(r.dtype(), check.out_dtype(dtype));
          const size_t n = static_cast<size_t>(x.numel() / std::max<int64_t>(1, r.numel()));
          EXPECT_TRUE(
              all_close(to_doubles(r), reference(x, c.dims, check.ref), check.tol(dtype, n)));
        }
      }
    }
  }
}

// Expects `f` to throw E with a message naming `op`.
template <typename E, typename F>
void expect_error(F f, const std::string& op) {
  try {
    f();
    ADD_FAILURE() << "expected " << op << " to throw";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
  }
}

DType widened(DType d) { return is_integral(d, true) ? DType::Int64 : d; }

std::vector<DType> numeric_dtypes() {
  return {DType::UInt8,    DType::Int32,   DType::Int64,  DType::Float16,
          DType::BFloat16, DType::Float32, DType::Float64};
}

// A tensor with zeros at about a quarter of the elements, so all/any see both answers.
Tensor sparse_tensor(const Shape& shape, DType dtype) {
  std::vector<double> v = to_doubles(random_tensor(shape, DType::Float64, 0, 4));
  const bool signed_values = dtype != DType::Bool && dtype != DType::UInt8;
  for (double& x : v) x = x < 1 ? 0 : (signed_values ? x - 2.5 : 1);
  return tensor_of(v, shape, dtype);
}

TEST(ReductionTest, SumMatchesReferenceForEveryDtype) {
  Check check;
  check.op = [](const Tensor& x, const Dims& d, bool k) { return sum(x, d, k); };
  check.ref = ref_sum;
  check.out_dtype = widened;
  check.tol = sum_tolerance;
  check_reduction(check, all_dtypes(), reduce_cases());
}

TEST(ReductionTest, SumWithDtypeCastsFirst) {
  const Tensor x = random_tensor({5, 6}, DType::Int32, -100, 100);
  const Tensor r = sum(x, {1}, false, DType::Float64);
  EXPECT_EQ(r.dtype(), DType::Float64);
  EXPECT_TRUE(all_close(to_doubles(r), reference(x, {1}, ref_sum), 0));
  const Tensor h = random_tensor({4, 300}, DType::Float16);
  EXPECT_TRUE(all_close(to_doubles(sum(h, {1}, false, DType::Float32)), reference(h, {1}, ref_sum),
                        sum_tolerance(DType::Float32, 300)));
}

TEST(ReductionTest, FullSumOfManyFloat32RunsInParallelAndStaysAccurate) {
  // Accumulating in double keeps 3e6 float32 values exact to the final rounding.
  const Tensor x = random_tensor({3000000}, DType::Float32);
  EXPECT_TRUE(all_close(to_doubles(sum(x)), reference(x, {}, ref_sum), tolerance(DType::Float32)));
}

TEST(ReductionTest, IntegerSumWrapsLikeInt64) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  const Tensor x = tensor_of({static_cast<double>(big), 1.0}, {2}, DType::Int64);
  // max + 1 wraps to min, as torch.
  EXPECT_EQ(to_doubles(sum(x))[0], static_cast<double>(std::numeric_limits<int64_t>::min()));
}

TEST(ReductionTest, MeanMatchesReferenceForFloatingDtypes) {
  Check check;
  check.op = [](const Tensor& x, const Dims& d, bool k) { return mean(x, d, k); };
  check.ref = ref_mean;
  check.tol = sum_tolerance;
  check_reduction(check, floating_dtypes(), reduce_cases());
}

TEST(ReductionTest, MeanRejectsIntegers) {
  expect_error<DTypeError>([] { mean(random_tensor({3}, DType::Int64)); }, "mean");
  expect_error<DTypeError>([] { mean(random_tensor({3}, DType::Bool)); }, "mean");
}

TEST(ReductionTest, ProdMatchesReferenceForEveryDtype) {
  Check check;
  check.op = [](const Tensor& x, const Dims& d, bool k) { return prod(x, d, k); };
  check.ref = ref_prod;
  check.out_dtype = widened;
  check.tol = sum_tolerance;
  check_reduction(check, all_dtypes(), small_reduce_cases());
}

TEST(ReductionTest, EmptyReductionsGiveTheirIdentities) {
  for (DType dtype : floating_dtypes()) {
    const Tensor x = random_tensor({3, 0}, dtype);
    EXPECT_EQ(to_doubles(sum(x, {1})), std::vector<double>(3, 0.0));
    EXPECT_EQ(to_doubles(prod(x, {1})), std::vector<double>(3, 1.0));
    EXPECT_TRUE(all_close(to_doubles(mean(x, {1})), std::vector<double>(3, kNaN), 0));
    EXPECT_TRUE(all_close(to_doubles(var(x, {1})), std::vector<double>(3, kNaN), 0));
    EXPECT_EQ(to_doubles(norm(x, 2, {1})), std::vector<double>(3, 0.0));
    EXPECT_EQ(to_doubles(logsumexp(x, {1})), std::vector<double>(3, -kInf));
    EXPECT_EQ(to_doubles(all(x, {1})), std::vector<double>(3, 1.0));
    EXPECT_EQ(to_doubles(any(x, {1})), std::vector<double>(3, 0.0));
    EXPECT_EQ(to_doubles(sum(x)), std::vector<double>{0.0});
    EXPECT_EQ(sum(x, {0}).shape(), Shape{0});
  }
}

// A reduction over every dim without keepdim makes its 0-dim result directly, not as a view of
// a keepdim result, as torch (whose x.sum()._base is None): in-place ops on it are not view
// writes. Its values are checked with every other case in check_reduction.
TEST(ReductionTest, WholeTensorReductionsAreNewScalarsNotViews) {
  const Tensor x = random_tensor({3, 4, 5}, DType::Float32).transpose(0, 2);
  const std::vector<Tensor> results = {sum(x),
                                       prod(x),
                                       mean(x),
                                       max(x),
                                       min(x),
                                       norm(x),
                                       var(x),
                                       std(x),
                                       all(x),
                                       any(x),
                                       sum(x, {0, 1, 2}),
                                       sum(random_tensor({}, DType::Float64))};
  for (const Tensor& r : results) {
    EXPECT_EQ(r.dim(), 0);
    EXPECT_FALSE(r.is_view());
  }
  EXPECT_EQ(sum(x, {}, true).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(var(x, {}, 1, true).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(sum(x, {0, 2}).shape(), Shape{4});
}

TEST(ReductionTest, MaxMinOverAllElementsForEveryDtype) {
  Check check;
  const std::vector<ReduceCase> cases = {
      {{}, {}}, {{1}, {}}, {{3, 4, 5}, {}}, {{40000}, {}}, {{200, 300}, {}}};
  for (bool is_max : {true, false}) {
    check.op = [is_max](const Tensor& x, const Dims&, bool) { return is_max ? max(x) : min(x); };
    check.ref = [is_max](const std::vector<double>& g) {
      return is_max ? *std::max_element(g.begin(), g.end()) : *std::min_element(g.begin(), g.end());
    };
    for (DType dtype : all_dtypes()) {
      for (const ReduceCase& c : cases) {
        for (const auto& [layout, x] : layouts(c.shape, dtype)) {
          SCOPED_TRACE(describe(x, {}, false, layout));
          const Tensor r = check.op(x, {}, false);
          EXPECT_EQ(r.shape(), Shape{});
          EXPECT_EQ(r.dtype(), dtype);
          EXPECT_TRUE(all_close(to_doubles(r), reference(x, {}, check.ref), 0));
        }
      }
    }
  }
}

// The expected (value, index) of max or min along one dim: first index on ties, first NaN wins.
std::pair<double, double> ref_arg(const std::vector<double>& g, bool is_max) {
  size_t best = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i])) return {g[i], static_cast<double>(i)};
    if (is_max ? g[i] > g[best] : g[i] < g[best]) best = i;
  }
  return {g[best], static_cast<double>(best)};
}

TEST(ReductionTest, MaxMinAlongDimGiveValuesAndFirstIndices) {
  const std::vector<ReduceCase> cases = {{{}, {0}},         {{1}, {0}},        {{7}, {-1}},
                                         {{3, 4, 5}, {1}},  {{3, 4, 5}, {0}},  {{3, 4, 5}, {-1}},
                                         {{200, 300}, {0}}, {{2, 20000}, {1}}, {{3, 0, 4}, {0}}};
  for (bool is_max : {true, false}) {
    for (DType dtype : numeric_dtypes()) {
      for (const ReduceCase& c : cases) {
        for (bool keepdim : {false, true}) {
          // Integers in [0, 3) make many ties, which must resolve to the first index.
          const bool few_values = !is_floating(dtype);
          for (const auto& [layout, x] : layouts(c.shape, dtype, 0, few_values ? 3 : 2)) {
            SCOPED_TRACE(describe(x, c.dims, keepdim, layout));
            const auto [values, indices] =
                is_max ? max(x, c.dims[0], keepdim) : min(x, c.dims[0], keepdim);
            const Shape shape = result_shape(c.shape, c.dims, keepdim);
            EXPECT_EQ(values.shape(), shape);
            EXPECT_EQ(indices.shape(), shape);
            EXPECT_EQ(values.dtype(), dtype);
            EXPECT_EQ(indices.dtype(), DType::Int64);
            const Tensor arg =
                is_max ? argmax(x, c.dims[0], keepdim) : argmin(x, c.dims[0], keepdim);
            EXPECT_EQ(arg.shape(), shape);
            std::vector<double> want_values, want_indices;
            for (const auto& g : groups_of(x, c.dims)) {
              want_values.push_back(ref_arg(g, is_max).first);
              want_indices.push_back(ref_arg(g, is_max).second);
            }
            EXPECT_TRUE(all_close(to_doubles(values), want_values, 0));
            EXPECT_TRUE(all_close(to_doubles(indices), want_indices, 0));
            EXPECT_TRUE(all_close(to_doubles(arg), want_indices, 0));
          }
        }
      }
    }
  }
}

TEST(ReductionTest, ArgmaxWithoutDimIndexesTheFlattenedTensor) {
  for (DType dtype : numeric_dtypes()) {
    for (const auto& [layout, x] : layouts({30, 40}, dtype, 0, 5)) {
      SCOPED_TRACE(describe(x, {}, false, layout));
      const std::vector<double> flat = to_doubles(x);
      EXPECT_EQ(to_doubles(argmax(x)), std::vector<double>{ref_arg(flat, true).second});
      EXPECT_EQ(to_doubles(argmin(x)), std::vector<double>{ref_arg(flat, false).second});
      EXPECT_EQ(argmax(x).shape(), Shape{});
      EXPECT_EQ(argmax(x, std::nullopt, true).shape(), (Shape{1, 1}));
    }
  }
  // Large enough that threads split the range: the earliest maximum must still win.
  std::vector<double> v(50000, 1.0);
  v[30000] = v[45000] = 7.0;
  EXPECT_EQ(to_doubles(argmax(tensor_of(v, {50000}, DType::Float32))), std::vector<double>{30000});
}

TEST(ReductionTest, NanPropagatesThroughMaxMinAndArgmax) {
  for (DType dtype : floating_dtypes()) {
    for (int64_t n : {5, 50000}) {  // serial and parallel paths
      std::vector<double> v = to_doubles(random_tensor({n}, dtype));
      v[static_cast<size_t>(n / 2)] = kNaN;
      v[static_cast<size_t>(n - 1)] = kNaN;
      const Tensor x = tensor_of(v, {n}, dtype);
      EXPECT_TRUE(std::isnan(to_doubles(max(x))[0]));
      EXPECT_TRUE(std::isnan(to_doubles(min(x))[0]));
      EXPECT_EQ(to_doubles(argmax(x))[0], static_cast<double>(n / 2));
      EXPECT_EQ(to_doubles(argmin(x))[0], static_cast<double>(n / 2));
      const auto [values, indices] = max(x.view({1, n}), 1);
      EXPECT_TRUE(std::isnan(to_doubles(values)[0]));
      EXPECT_EQ(to_doubles(indices)[0], static_cast<double>(n / 2));
      EXPECT_TRUE(std::isnan(to_doubles(norm(x, kInf))[0]));
    }
  }
}

TEST(ReductionTest, AllAnyForEveryDtype) {
  for (bool is_all : {true, false}) {
    for (DType dtype : all_dtypes()) {
      for (const ReduceCase& c : reduce_cases()) {
        for (bool keepdim : {false, true}) {
          const Tensor x = sparse_tensor(c.shape, dtype);
          for (const Tensor& input : {x, transposed_copy(x)}) {
            SCOPED_TRACE(describe(input, c.dims, keepdim, is_all ? "all" : "any"));
            const Tensor r = is_all ? all(input, c.dims, keepdim) : any(input, c.dims, keepdim);
            EXPECT_EQ(r.dtype(), DType::Bool);
            EXPECT_EQ(r.shape(), result_shape(c.shape, c.dims, keepdim));
            EXPECT_TRUE(all_close(to_doubles(r),
                                  reference(input, c.dims,
                                            [is_all](const auto& g) {
                                              for (double v : g)
                                                if ((v != 0) != is_all) return is_all ? 0.0 : 1.0;
                                              return is_all ? 1.0 : 0.0;
                                            }),
                                  0));
          }
        }
      }
    }
  }
  // NaN is non-zero, hence true.
  const Tensor nan = tensor_of({kNaN}, {1}, DType::Float32);
  EXPECT_EQ(to_doubles(all(nan)), std::vector<double>{1.0});
}

TEST(ReductionTest, VarAndStdWithCorrectionsZeroAndOne) {
  for (double correction : {0.0, 1.0}) {
    for (bool is_std : {false, true}) {
      Check check;
      check.op = [=](const Tensor& x, const Dims& d, bool k) {
        return is_std ? rcuda::std(x, d, correction, k) : var(x, d, correction, k);
      };
      check.ref = [=](const std::vector<double>& g) {
        const double v = ref_var(g, correction);
        return is_std ? std::sqrt(v) : v;
      };
      // Computed in double and rounded once; std rounds the variance, then its square root.
      check.tol = [](DType d, size_t) { return 2 * tolerance(d); };
      check_reduction(check, floating_dtypes(), reduce_cases());
    }
  }
  // One element with Bessel's correction divides by zero: NaN, as torch.
  EXPECT_TRUE(std::isnan(to_doubles(var(random_tensor({1}, DType::Float32)))[0]));
  expect_error<DTypeError>([] { var(random_tensor({3}, DType::Int32)); }, "var");
  expect_error<DTypeError>([] { rcuda::std(random_tensor({3}, DType::Int32)); }, "std");
}

TEST(ReductionTest, NormForSeveralP) {
  for (double p : {1.0, 2.0, 3.5, kInf, 0.0}) {
    Check check;
    check.op = [p](const Tensor& x, const Dims& d, bool k) { return norm(x, p, d, k); };
    check.ref = [p](const std::vector<double>& g) { return ref_norm(g, p); };
    check.tol = sum_tolerance;
    // Without the inf norm of empty sets, which is an error.
    std::vector<ReduceCase> cases;
    for (const ReduceCase& c : reduce_cases()) {
      const bool empty = numel(c.shape) == 0;
      if (!(std::isinf(p) && empty)) cases.push_back(c);
    }
    SCOPED_TRACE("p = " + std::to_string(p));
    check_reduction(check, floating_dtypes(), cases);
  }
  expect_error<ValueError>([] { norm(random_tensor({3}, DType::Float32), -1); }, "norm");
  expect_error<ValueError>([] { norm(random_tensor({3, 0}, DType::Float32), kInf, {1}); }, "norm");
  expect_error<DTypeError>([] { norm(random_tensor({3}, DType::Int64)); }, "norm");
}

TEST(ReductionTest, LogsumexpMatchesReference) {
  Check check;
  check.op = [](const Tensor& x, const Dims& d, bool k) { return logsumexp(x, d, k); };
  check.ref = ref_logsumexp;
  // float32 and float64 run exp, sum, log and add in their own type: a few roundings.
  check.tol = [](DType d, size_t n) { return 4 * sum_tolerance(d, n); };
  check_reduction(check, floating_dtypes(), reduce_cases());
  // Values near 1000 overflow exp without the max shift.
  check.low = 990;
  check.high = 1010;
  check_reduction(check, {DType::Float32, DType::Float64}, {{{3, 4, 5}, {1}}, {{40000}, {}}});
}

TEST(ReductionTest, LogsumexpOfInfiniteRows) {
  const Tensor x =
      tensor_of({-kInf, -kInf, -kInf, 1.0, -kInf, 2.0, kInf, 0.0, 3.0}, {3, 3}, DType::Float32);
  const std::vector<double> want = {-kInf, ref_logsumexp({1.0, -kInf, 2.0}), kInf};
  EXPECT_TRUE(all_close(to_doubles(logsumexp(x, {1})), want, tolerance(DType::Float32)));
  // Integers give float32, as torch.
  const Tensor i = random_tensor({4, 5}, DType::Int64, -5, 5);
  const Tensor r = logsumexp(i, {-1}, true);
  EXPECT_EQ(r.dtype(), DType::Float32);
  EXPECT_EQ(r.shape(), (Shape{4, 1}));
  EXPECT_TRUE(all_close(to_doubles(r), reference(i, {-1}, ref_logsumexp), 4e-6));
}

TEST(ReductionTest, DimErrorsNameTheOp) {
  const Tensor x = random_tensor({3, 4}, DType::Float32);
  expect_error<ValueError>([&] { sum(x, {1, -1}); }, "sum");
  expect_error<ValueError>([&] { mean(x, {0, 0}); }, "mean");
  expect_error<IndexError>([&] { sum(x, {2}); }, "sum");
  expect_error<IndexError>([&] { prod(x, {-3}); }, "prod");
  expect_error<IndexError>([&] { all(x, {5}); }, "all");
  const Tensor empty = random_tensor({3, 0}, DType::Float32);
  expect_error<ValueError>([&] { max(empty); }, "max");
  expect_error<ValueError>([&] { min(empty); }, "min");
  expect_error<IndexError>([&] { max(empty, 1); }, "max");
  expect_error<IndexError>([&] { argmin(empty, 1); }, "argmin");
  expect_error<ValueError>([&] { argmax(empty); }, "argmax");
  // Reducing a non-empty dim of an empty tensor is fine: the result is empty too.
  EXPECT_EQ(max(empty, 0).first.shape(), Shape{0});
}

std::vector<double> ref_softmax(const std::vector<double>& values, const Shape& shape, int64_t dim,
                                bool log) {
  std::vector<double> out(values.size());
  const int64_t n = shape.empty() ? 1 : shape[dim];
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t outer = static_cast<int64_t>(values.size()) / std::max<int64_t>(1, n * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * n + k) * inner + i); };
      double m = -kInf, s = 0;
      for (int64_t k = 0; k < n; ++k) m = std::max(m, values[at(k)]);
      for (int64_t k = 0; k < n; ++k) s += std::exp(values[at(k)] - m);
      for (int64_t k = 0; k < n; ++k)
        out[at(k)] = log ? values[at(k)] - m - std::log(s) : std::exp(values[at(k)] - m) / s;
    }
  return out;
}

const std::vector<ReduceCase>& line_cases() {
  static const std::vector<ReduceCase> cases = {
      {{}, {0}},         {{1}, {0}},        {{9}, {-1}},       {{3, 4, 5}, {0}}, {{3, 4, 5}, {1}},
      {{3, 4, 5}, {-1}}, {{200, 300}, {0}}, {{200, 300}, {1}}, {{3, 0, 4}, {2}}, {{0}, {0}}};
  return cases;
}

TEST(SoftmaxTest, SoftmaxAndLogSoftmaxMatchReference) {
  for (bool log : {false, true}) {
    for (DType dtype : floating_dtypes()) {
      for (const ReduceCase& c : line_cases()) {
        for (const auto& [layout, x] : layouts(c.shape, dtype, -5, 5)) {
          SCOPED_TRACE(describe(x, c.dims, false, log ? "log_softmax" : "softmax"));
          const Tensor r = log ? log_softmax(x, c.dims[0]) : softmax(x, c.dims[0]);
          EXPECT_EQ(r.shape(), c.shape);
          EXPECT_EQ(r.dtype(), dtype);
          const int64_t dim = c.dims[0] < 0 ? c.dims[0] + x.dim() : c.dims[0];
          // exp, a sum and a division (or log) in the compute type: a few roundings.
          EXPECT_TRUE(all_close(to_doubles(r), ref_softmax(to_doubles(x), c.shape, dim, log),
                                4 * tolerance(dtype)));
          if (!log && x.numel() > 0) {
            // Rows sum to 1 (up to one rounding per element, summed).
            const size_t n = static_cast<size_t>(c.shape.empty() ? 1 : c.shape[dim]);
            const Tensor sums = sum(to(r, DType::Float64), {c.dims[0]});
            EXPECT_TRUE(all_close(to_doubles(sums), std::vector<double>(sums.numel(), 1.0),
                                  sum_tolerance(dtype, n) * 2));
          }
        }
      }
    }
  }
}

TEST(SoftmaxTest, LargeAndInfiniteInputs) {
  const Tensor big = tensor_of({1000, 1001, 1002, -1000}, {4}, DType::Float32);
  EXPECT_TRUE(
      all_close(to_doubles(softmax(big, 0)), ref_softmax(to_doubles(big), {4}, 0, false), 4e-6));
  EXPECT_TRUE(
      all_close(to_doubles(log_softmax(big, 0)), ref_softmax(to_doubles(big), {4}, 0, true), 4e-6));
  // A -inf entry gets probability 0; an all -inf row is NaN, as torch.
  const Tensor x = tensor_of({-kInf, 0, -kInf, -kInf}, {2, 2}, DType::Float32);
  const std::vector<double> got = to_doubles(softmax(x, 1));
  EXPECT_EQ(got[0], 0.0);
  EXPECT_EQ(got[1], 1.0);
  EXPECT_TRUE(std::isnan(got[2]) && std::isnan(got[3]));
}

TEST(SoftmaxTest, ErrorsNameTheOp) {
  expect_error<DTypeError>([] { softmax(random_tensor({3}, DType::Int64), 0); }, "softmax");
  expect_error<DTypeError>([] { log_softmax(random_tensor({3}, DType::Bool), 0); }, "log_softmax");
  expect_error<IndexError>([] { softmax(random_tensor({3, 4}, DType::Float32), 2); }, "softmax");
}

TEST(CumsumTest, MatchesReferenceForEveryDtype) {
  for (DType dtype : all_dtypes()) {
    for (const ReduceCase& c : line_cases()) {
      for (const auto& [layout, x] : layouts(c.shape, dtype)) {
        SCOPED_TRACE(describe(x, c.dims, false, layout));
        const int64_t dim = c.dims[0] < 0 ? c.dims[0] + x.dim() : c.dims[0];
        const Tensor r = cumsum(x, c.dims[0]);
        EXPECT_EQ(r.shape(), c.shape);
        EXPECT_EQ(r.dtype(), widened(dtype));
        const std::vector<double> v = to_doubles(x);
        std::vector<double> want(v.size());
        const int64_t n = c.shape.empty() ? 1 : c.shape[dim];
        int64_t inner = 1;
        for (size_t d = static_cast<size_t>(dim) + 1; d < c.shape.size(); ++d) inner *= c.shape[d];
        for (size_t o = 0; n > 0 && o < v.size() / static_cast<size_t>(n * inner); ++o)
          for (int64_t i = 0; i < inner; ++i) {
            double s = 0;
            for (int64_t k = 0; k < n; ++k) {
              const size_t at = (o * n + k) * inner + i;
              s += v[at];
              want[at] = s;
            }
          }
        EXPECT_TRUE(all_close(to_doubles(r), want, sum_tolerance(dtype, n)));
      }
    }
  }
  expect_error<IndexError>([] { cumsum(random_tensor({3}, DType::Float32), 1); }, "cumsum");
}

}  // namespace
}  // namespace rcuda::test
