// Support for the process-group tests, which run under mpirun (tests/dist/README.md): values
// that every rank can generate for every rank, so that each computes the reference of a
// collective on its own, in double precision, from all ranks' inputs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "rcuda/core/half.h"
#include "rcuda/dist/process_group.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::test::dist {

// The run's seed, the same on every rank (rank 0's, broadcast by dist_main.cpp).
uint64_t run_seed();
// The group of the run (the default group), made again after a test that fails it.
std::shared_ptr<rcuda::dist::ProcessGroup> group();
// Drops the default group and starts a new one (after a test whose DistError failed it).
void restart_group();

// `n` values that rank `rank` holds in the test's call number `call`, exactly representable in
// `dtype` and small enough that sums over a few ranks stay exact in it (float32 and float64 get
// uniform values in [-1, 1)).
inline std::vector<double> rank_values(int rank, int call, int64_t n, DType dtype) {
  std::seed_seq seq{static_cast<uint32_t>(run_seed()), static_cast<uint32_t>(run_seed() >> 32),
                    static_cast<uint32_t>(rank), static_cast<uint32_t>(call),
                    static_cast<uint32_t>(dtype)};
  std::mt19937_64 gen(seq);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) {
    switch (dtype) {
      case DType::Bool:
        x = static_cast<double>(gen() % 2);
        break;
      case DType::UInt8:
        x = static_cast<double>(gen() % 40);
        break;
      case DType::Int8:
      case DType::Int16:
      case DType::Int32:
      case DType::Int64:
        x = static_cast<double>(static_cast<int>(gen() % 41) - 20);
        break;
      case DType::Float16:
      case DType::BFloat16:
        x = (static_cast<double>(gen() % 65) - 32) / 8;  // multiples of 1/8 in [-4, 4]
        break;
      default:
        x = std::uniform_real_distribution<double>(-1, 1)(gen);
    }
  }
  return v;
}

// A contiguous CPU tensor holding `v` (converted to `dtype`), and back.
Tensor make_tensor(const std::vector<double>& v, const Shape& shape, DType dtype);
std::vector<double> read_tensor(const Tensor& t);
// Random bytes of rank `rank` in a tensor of any dtype (for the collectives that only move data).
Tensor random_bytes(int rank, int call, const Shape& shape, DType dtype);
std::vector<uint8_t> bytes_of(const Tensor& t);

// Element i of every rank's values (rank_values of `call`, as a tensor of `dtype` holds them)
// reduced by `op` over `size` ranks, in double precision. A bool sum is a logical or.
std::vector<double> reference(int call, int64_t n, DType dtype, rcuda::dist::ReduceOp op, int size);
// ASSERTs that every element is within tol * max(1, |expected|).
void expect_close(const std::vector<double>& actual, const std::vector<double>& expected,
                  double tol, const std::string& what);

// Every dtype the MPI backend reduces.
inline std::vector<DType> reducible_dtypes() {
  return {DType::Bool,  DType::UInt8,   DType::Int8,     DType::Int16,   DType::Int32,
          DType::Int64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
}
// Every dtype rcuda has (broadcast and all_gather move any).
std::vector<DType> all_dtypes();

// Relative tolerance of a reduced value in `dtype` (exact for integers and the half types, whose
// test values sum exactly; the order of a float32 sum is MPI's choice).
inline double tolerance(DType dtype) {
  return dtype == DType::Float32 ? 1e-6 : dtype == DType::Float64 ? 1e-14 : 0;
}

// The message of a DistError thrown by `body`, or "" when none is (another exception fails).
template <typename F>
std::string dist_error_of(F&& body) {
  try {
    body();
  } catch (const rcuda::dist::DistError& e) {
    return e.what();
  }
  return "";
}

}  // namespace rcuda::test::dist
