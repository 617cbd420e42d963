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
double read_element(const char* p, DType dtype);

void write_element(char* p, DType dtype, double v);

// Row-major values of any (strided, CPU) tensor, walking its strides by hand.
std::vector<double> to_doubles(const Tensor& t);

// A contiguous CPU tensor holding `values` (row-major) in dtype, written by hand.
Tensor tensor_of(const std::vector<double>& values, const Shape& shape, DType dtype);

// Fresh random values: uniform in [low, high) for floating dtypes (rounded to the dtype),
// integers in [low, high) for integral ones, coin flips for bool.
Tensor random_tensor(const Shape& shape, DType dtype, double low = -2, double high = 2);

// The same values as t but with transposed memory layout: a non-contiguous view of shape t.shape.
Tensor transposed_copy(const Tensor& t);

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
::testing::AssertionResult all_close(const std::vector<double>& actual,
                                     const std::vector<double>& expected, double tol);

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
