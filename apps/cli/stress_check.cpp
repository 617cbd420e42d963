// Comparisons of products (stress_check.h).
#include "stress_check.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "rcuda/autograd/api.h"
#include "rcuda/core/error.h"

namespace rcuda::stress {

Tensor count_mismatches(const Tensor& product, const Tensor& first) {
  RCUDA_CHECK(product.shape() == first.shape() && product.dtype() == first.dtype(), ValueError,
              "stress: cannot compare a product ", shape_str(product.shape()), " ",
              dtype_name(product.dtype()), " with its first ", shape_str(first.shape()), " ",
              dtype_name(first.dtype()));
  return sum(ne(product, first));  // a bool sum is int64
}

// Note [Reference tolerances]
// Unit roundoffs (relative half-ulps): float32 2^-24, bfloat16 2^-8, TF32 2^-11 per operand
// (2^-10 if the conversion truncates). Each bound is several times what a correct product shows, so
// that a correct GPU never fails, yet a missing or doubled term of the sum, a wrong operand or a
// corrupted exponent lands far above it. The fp8 tensor cores of Hopper accumulate with about
// 14 bits before promoting to float32 (DeepSeek-V3's report, section 3.3.2), hence 2^-10.
Tolerance reference_tolerance(GemmKind kind) {
  switch (kind) {
    case GemmKind::Float32:
      return {std::ldexp(1.0, -22), std::ldexp(1.0, -20), 0.0};
    // A GPU may truncate float32 to TF32 (CUTLASS's "fast" conversion, what the tensor cores
    // do with raw float32): every product then shrinks by up to 2^-10 in magnitude, a bias of
    // up to 2^-10 of the exact sum, which the output term covers twice over.
    case GemmKind::TF32:
      return {std::ldexp(1.0, -9), std::ldexp(1.0, -20), std::ldexp(1.0, -7)};
    case GemmKind::BFloat16:
      return {std::ldexp(1.0, -7), std::ldexp(1.0, -20), 0.0};
    case GemmKind::Float8:
      return {std::ldexp(1.0, -7), std::ldexp(1.0, -10), 0.0};
  }
  return {};
}

void merge(ReferenceCheck& total, const ReferenceCheck& part) {
  if (total.first_wrong_row < 0 && part.first_wrong_row >= 0) {
    total.first_wrong_row = part.first_wrong_row;
    total.first_wrong_column = part.first_wrong_column;
    total.first_wrong_got = part.first_wrong_got;
    total.first_wrong_expected = part.first_wrong_expected;
  }
  total.elements += part.elements;
  total.wrong += part.wrong;
  total.worst_ratio = std::max(total.worst_ratio, part.worst_ratio);
}

namespace {

// Columns [begin, end) of check_rows.
ReferenceCheck check_columns(const float* a_rows, const float* b_t, const float* got, int64_t rows,
                             int64_t k, int64_t n, int64_t begin, int64_t end, const Tolerance& t) {
  ReferenceCheck c;
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = a_rows + r * k;
    for (int64_t j = begin; j < end; ++j) {
      const float* b = b_t + j * k;
      double exact = 0, absolute = 0, squares = 0;
      for (int64_t i = 0; i < k; ++i) {
        const double p = static_cast<double>(a[i]) * static_cast<double>(b[i]);
        exact += p;
        absolute += std::fabs(p);
        squares += p * p;
      }
      const double value = got[r * n + j];
      const double allowed = t.output * std::fabs(exact) + t.accumulation * absolute +
                             t.input * std::sqrt(squares) + 1e-300;
      const double ratio = std::fabs(value - exact) / allowed;
      ++c.elements;
      // !(ratio <= 1) also catches NaN and infinities
      if (!(ratio <= 1)) {
        if (c.wrong++ == 0) {
          c.first_wrong_row = r;
          c.first_wrong_column = j;
          c.first_wrong_got = value;
          c.first_wrong_expected = exact;
        }
      }
      if (std::isfinite(ratio)) c.worst_ratio = std::max(c.worst_ratio, ratio);
    }
  }
  return c;
}

}  // namespace

ReferenceCheck check_rows(const float* a_rows, const float* b_t, const float* got, int64_t rows,
                          int64_t k, int64_t n, const Tolerance& tolerance) {
  return check_columns(a_rows, b_t, got, rows, k, n, 0, n, tolerance);
}

ReferenceCheck check_rows_parallel(const float* a_rows, const float* b_t, const float* got,
                                   int64_t rows, int64_t k, int64_t n, const Tolerance& tolerance,
                                   int threads) {
  if (threads <= 0) threads = static_cast<int>(std::min(16u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::clamp<int64_t>(threads, 1, std::max<int64_t>(n, 1)));
  std::vector<ReferenceCheck> parts(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    const int64_t begin = n * w / threads, end = n * (w + 1) / threads;
    workers.emplace_back([&, w, begin, end] {
      parts[static_cast<size_t>(w)] =
          check_columns(a_rows, b_t, got, rows, k, n, begin, end, tolerance);
    });
  }
  for (std::thread& t : workers) t.join();
  // Rows are the outer loop of each part: the first wrong element of the lowest part is the
  // first in column order of its row only; good enough for a message.
  ReferenceCheck total;
  for (const ReferenceCheck& p : parts) merge(total, p);
  return total;
}

}  // namespace rcuda::stress
