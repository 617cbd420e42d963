// How `rcuda stress` decides that a product is wrong (docs/stress.md, "What is checked"):
//  - every product is compared element by element with the first product of the same operands
//    (as gpu-burn does): cuBLASLt runs the same plan on the same inputs, so any difference is a
//    fault of the GPU (a flipped bit, a bad memory cell, a failing unit) and counts;
//  - the first product of a few operand sets is checked, on a sample of rows, against a
//    double-precision product computed on the host, within a tolerance for the product's dtype.
#pragma once

#include <cstdint>

#include "rcuda/tensor/tensor.h"
#include "stress_plan.h"

namespace rcuda::stress {

// The number of elements where `product` differs from `first` (NaN differs from everything,
// itself included), as a one-element int64 tensor on their device: no synchronisation. Same
// shape and dtype required.
Tensor count_mismatches(const Tensor& product, const Tensor& first);

// The error a correct product may carry against the exact one, element by element:
//   output * |exact| + accumulation * sum_k |a_k b_k| + input * sqrt(sum_k (a_k b_k)^2)
// where `output` covers the rounding of the result to its dtype, `accumulation` the float32 (or
// fp8 tensor cores' narrower) sums, and `input` the rounding of the operands inside the product
// (TF32 keeps 10 bits of float32's 23; its errors have random signs, hence the root of squares).
struct Tolerance {
  double output = 0, accumulation = 0, input = 0;
};
Tolerance reference_tolerance(GemmKind kind);

// The rows [0, rows) of a product a @ b checked against double-precision dot products:
// a_rows [rows, k] (the rows' operands), b_t [n, k] (b transposed: column j of b is row j of
// b_t), got [rows, n], all row-major floats (every input dtype is exact in float). The products
// a_k b_k of two floats are exact in double; the sums are in double.
struct ReferenceCheck {
  int64_t elements = 0;  // compared
  int64_t wrong = 0;     // beyond the tolerance, or not finite
  // max over elements of |got - exact| / tolerance: below 1 everywhere when correct
  double worst_ratio = 0;
  // the first wrong element, for the message
  int64_t first_wrong_row = -1, first_wrong_column = -1;
  double first_wrong_got = 0, first_wrong_expected = 0;
};
ReferenceCheck check_rows(const float* a_rows, const float* b_t, const float* got, int64_t rows,
                          int64_t k, int64_t n, const Tolerance& tolerance);
// The same over several host threads (columns split between them); `threads` 0: the
// machine's cores, at most 16.
ReferenceCheck check_rows_parallel(const float* a_rows, const float* b_t, const float* got,
                                   int64_t rows, int64_t k, int64_t n, const Tolerance& tolerance,
                                   int threads = 0);
// Adds `part` (another block of columns or rows) into `total`.
void merge(ReferenceCheck& total, const ReferenceCheck& part);

}  // namespace rcuda::stress
