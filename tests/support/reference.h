// Test support: independent references for op tests.
//
// How to test an op (every test under tests/ops/ follows this):
//  1. Make fresh random inputs with `random_tensor` or `rng()` (Note [Test seeds]: each test
//     draws from its own generator, so a failure printed with its seed repeats on its own).
//  2. Read inputs back with `to_doubles`, which walks shape/strides by hand (it does not use
//     rcuda's copy kernels), and compute the expected values in plain double-precision loops.
//  3. Compare with `expect_close(actual, expected, tol)`, tolerances by dtype (`tolerance`).
//  4. Repeat for non-contiguous views (`transposed_copy`, slices with step), broadcasting,
//     zero-size tensors and every dtype the op accepts; check error paths with EXPECT_THROW.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "rcuda/core/float8.h"
#include "rcuda/core/half.h"
#include "rcuda/rcuda.h"

namespace rcuda::test {

// Note [Test seeds]
// Every test draws its random inputs from its own generator, seeded from the run seed
// (RCUDA_TEST_SEED, or the clock when unset) and the test's full name, and reset when the test
// starts (tests/support/test_seed.cpp). A test's inputs thus depend only on the run seed and its
// name, never on which tests ran before it: a failure prints the command line that repeats
// exactly that test with exactly those inputs, under a filter, a debugger or compute-sanitizer.
// A test that seeds rcuda's own generator uses test_seed(), not a constant or a counter.

// The run's seed: RCUDA_TEST_SEED or the clock; printed once so the whole run can be repeated.
inline uint64_t run_seed() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("RCUDA_TEST_SEED");
    const uint64_t s =
        env ? std::strtoull(env, nullptr, 10)
            : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    std::printf("[ rcuda ] RCUDA_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    std::fflush(stdout);
    return s;
  }();
  return seed;
}

// "Suite.Name" of the running test, as --gtest_filter spells it; empty outside a test.
inline std::string current_test_name() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info ? std::string(info->test_suite_name()) + "." + info->name() : std::string();
}

// The seed of the test `name` in a run seeded by `run`: FNV-1a of the name, then splitmix64's
// finaliser, so that neighbouring run seeds and similar names give unrelated streams.
inline uint64_t seed_for_test(uint64_t run, const std::string& name) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  uint64_t z = run + 0x9E3779B97F4A7C15ull * (h | 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The running test's seed (the run seed outside a test).
inline uint64_t test_seed() {
  const std::string name = current_test_name();
  return name.empty() ? run_seed() : seed_for_test(run_seed(), name);
}

struct TestGenerator {
  const ::testing::TestInfo* test = nullptr;  // the test it was last seeded for
  bool seeded = false;
  std::mt19937_64 engine;
};

inline TestGenerator& test_generator() {
  static TestGenerator g;
  return g;
}

// Restarts rng() from the running test's seed; called as each test starts.
inline void reset_rng() {
  TestGenerator& g = test_generator();
  g.test = ::testing::UnitTest::GetInstance()->current_test_info();
  g.engine.seed(test_seed());
  g.seeded = true;
}

// The running test's generator. Also reseeds by itself when the test changed, so the inputs do
// not depend on the start-of-test hook having run.
inline std::mt19937_64& rng() {
  TestGenerator& g = test_generator();
  if (!g.seeded || g.test != ::testing::UnitTest::GetInstance()->current_test_info()) reset_rng();
  return g.engine;
}

// Reads one element at byte address p of dtype as double (independent of rcuda's kernels).
inline double read_element(const char* p, DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return *reinterpret_cast<const bool*>(p) ? 1.0 : 0.0;
    case DType::UInt8:
      return *reinterpret_cast<const uint8_t*>(p);
    case DType::Int8:
      return *reinterpret_cast<const int8_t*>(p);
    case DType::Int16:
      return *reinterpret_cast<const int16_t*>(p);
    case DType::Int32:
      return *reinterpret_cast<const int32_t*>(p);
    case DType::Int64:
      return static_cast<double>(*reinterpret_cast<const int64_t*>(p));
    case DType::Float16:
      return half_bits_to_float(*reinterpret_cast<const uint16_t*>(p));
    case DType::BFloat16:
      return bfloat16_bits_to_float(*reinterpret_cast<const uint16_t*>(p));
    case DType::Float32:
      return *reinterpret_cast<const float*>(p);
    case DType::Float64:
      return *reinterpret_cast<const double*>(p);
    case DType::Float8E4M3FN:
      return float8_e4m3fn_bits_to_float(*reinterpret_cast<const uint8_t*>(p));
    case DType::Float8E5M2:
      return float8_e5m2_bits_to_float(*reinterpret_cast<const uint8_t*>(p));
    case DType::Complex64:
    case DType::Complex128:
      // A complex element is no double: tests read view_as_real() of complex tensors.
      ADD_FAILURE() << "read_element: complex elements are read through view_as_real()";
      return std::nan("");
  }
  return 0;
}

inline void write_element(char* p, DType dtype, double v) {
  switch (dtype) {
    case DType::Bool:
      *reinterpret_cast<bool*>(p) = v != 0;
      break;
    case DType::UInt8:
      *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(v);
      break;
    case DType::Int8:  // through int64, so that out-of-range values wrap instead of being UB
      *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(static_cast<int64_t>(v));
      break;
    case DType::Int16:
      *reinterpret_cast<int16_t*>(p) = static_cast<int16_t>(static_cast<int64_t>(v));
      break;
    case DType::Int32:
      *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v);
      break;
    case DType::Int64:
      *reinterpret_cast<int64_t*>(p) = static_cast<int64_t>(v);
      break;
    case DType::Float16:
      *reinterpret_cast<uint16_t*>(p) = float_to_half_bits(static_cast<float>(v));
      break;
    case DType::BFloat16:
      *reinterpret_cast<uint16_t*>(p) = float_to_bfloat16_bits(static_cast<float>(v));
      break;
    case DType::Float32:
      *reinterpret_cast<float*>(p) = static_cast<float>(v);
      break;
    case DType::Float64:
      *reinterpret_cast<double*>(p) = v;
      break;
    case DType::Float8E4M3FN:
      *reinterpret_cast<uint8_t*>(p) = float_to_float8_e4m3fn_bits(static_cast<float>(v));
      break;
    case DType::Float8E5M2:
      *reinterpret_cast<uint8_t*>(p) = float_to_float8_e5m2_bits(static_cast<float>(v));
      break;
    case DType::Complex64:
    case DType::Complex128:
      ADD_FAILURE() << "write_element: complex elements are written through view_as_real()";
      break;
  }
}

// Row-major values of any (strided, CPU) tensor, walking its strides by hand.
inline std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> out;
  const int64_t n = t.numel();
  out.reserve(static_cast<size_t>(n));
  const int64_t nd = t.dim();
  std::vector<int64_t> index(static_cast<size_t>(nd), 0);
  const char* base = static_cast<const char*>(t.storage()->data());
  const int64_t es = static_cast<int64_t>(t.element_size());
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = t.offset();
    for (int64_t d = 0; d < nd; ++d) off += index[d] * t.strides()[d];
    out.push_back(read_element(base + off * es, t.dtype()));
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++index[d] < t.shape()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// A contiguous CPU tensor holding `values` (row-major) in dtype, written by hand.
inline Tensor tensor_of(const std::vector<double>& values, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  char* p = static_cast<char*>(t.data_ptr());
  for (size_t i = 0; i < values.size(); ++i)
    write_element(p + i * t.element_size(), dtype, values[i]);
  return t;
}

// Fresh random values: uniform in [low, high) for floating dtypes (rounded to the dtype),
// integers in [low, high) for integral ones, coin flips for bool.
inline Tensor random_tensor(const Shape& shape, DType dtype, double low = -2, double high = 2) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  std::uniform_real_distribution<double> real(low, high);
  for (double& x : v) {
    if (dtype == DType::Bool)
      x = (rng()() & 1) ? 1 : 0;
    else if (is_floating(dtype))
      x = real(rng());
    else
      x = std::floor(real(rng()));
  }
  return tensor_of(v, shape, dtype);
}

// The same values as t but with transposed memory layout: a non-contiguous view of shape t.shape.
inline Tensor transposed_copy(const Tensor& t) {
  if (t.dim() < 2) return t;
  Shape s = t.shape();
  std::swap(s[0], s[1]);
  Tensor u = Tensor::empty(s, t.dtype());
  Tensor view = u.transpose(0, 1);
  // Fill by hand through the view's strides.
  const std::vector<double> values = to_doubles(t);
  std::vector<int64_t> index(static_cast<size_t>(t.dim()), 0);
  char* base = static_cast<char*>(u.storage()->data());
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t off = view.offset();
    for (int64_t d = 0; d < view.dim(); ++d) off += index[d] * view.strides()[d];
    write_element(base + off * static_cast<int64_t>(u.element_size()), u.dtype(), values[i]);
    for (int64_t d = view.dim() - 1; d >= 0; --d) {
      if (++index[d] < view.shape()[d]) break;
      index[d] = 0;
    }
  }
  return view;
}

// Relative tolerance by dtype for results computed in one rounding step or a few.
inline double tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return 2e-3;
    case DType::BFloat16:
      return 1.6e-2;
    case DType::Float32:
      return 2e-6;
    case DType::Float64:
      return 1e-12;
    default:
      return 0;
  }
}

// |a - e| <= tol * max(1, |e|) elementwise; NaNs must match NaNs; infinities must match.
inline ::testing::AssertionResult all_close(const std::vector<double>& actual,
                                            const std::vector<double>& expected, double tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != expected " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    if (std::isnan(e) || std::isnan(a)) {
      if (std::isnan(e) && std::isnan(a)) continue;
      return ::testing::AssertionFailure() << "element " << i << ": " << a << " vs " << e;
    }
    if (std::isinf(e) || std::isinf(a)) {
      if (a == e) continue;
      return ::testing::AssertionFailure() << "element " << i << ": " << a << " vs " << e;
    }
    if (std::fabs(a - e) > tol * std::max(1.0, std::fabs(e)))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a << " vs expected " << e << " (tol " << tol << ")";
  }
  return ::testing::AssertionSuccess();
}

// The message of the rcuda::Error f() throws, "(no error)" when it throws none.
template <typename F>
std::string error_message(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

inline const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> d = {
      DType::Bool,  DType::UInt8,   DType::Int8,     DType::Int16,   DType::Int32,
      DType::Int64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
  return d;
}
inline const std::vector<DType>& floating_dtypes() {
  static const std::vector<DType> d = {DType::Float16, DType::BFloat16, DType::Float32,
                                       DType::Float64};
  return d;
}

}  // namespace rcuda::test
