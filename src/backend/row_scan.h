// The sequential formulas of the cumulative primitives (Backend::cumulative and
// cumulative_backward, Note [Row primitives] in rcuda/backend/backend.h), written once for the
// CPU loops and the CUDA kernel (one thread per row), so that the two cannot drift apart. Each
// walks one row of n elements: in and out at stride 1, compute type C (ComputeType, int64 for
// integers).
#pragma once

#include <cstdint>

#include "backend/dispatch.h"
#include "backend/unary_math.h"
#include "rcuda/backend/backend.h"
#include "rcuda/core/macros.h"

namespace rcuda::backend {

template <typename T>
using ScanCompute = std::conditional_t<std::is_floating_point_v<ComputeType<T>>, ComputeType<T>,
                                       std::conditional_t<std::is_same_v<T, bool>, bool, int64_t>>;

template <typename C>
RCUDA_HOST_DEVICE inline bool is_nan_value(C x) {
  if constexpr (std::is_floating_point_v<C>)
    return x != x;
  else
    return false;
}

// out[j] = op(in[0..j]); indices (Max, Min; may be null otherwise) the position of the running
// extreme: the latest on ties, and each NaN becomes the extreme (torch's cummax and cummin).
template <typename T>
RCUDA_HOST_DEVICE inline void scan_row(Backend::CumulativeOp op, T* out, int64_t* indices,
                                       const T* in, int64_t n) {
  using C = ScanCompute<T>;
  using Op = Backend::CumulativeOp;
  if (op == Op::Max || op == Op::Min) {
    C best = convert<C>(in[0]);
    int64_t where = 0;
    for (int64_t j = 0; j < n; ++j) {
      const C x = convert<C>(in[j]);
      const bool better = op == Op::Max ? x >= best : x <= best;
      if (is_nan_value(x) || (!is_nan_value(best) && better)) {
        best = x;
        where = j;
      }
      out[j] = convert<T>(best);
      indices[j] = where;
    }
    return;
  }
  if constexpr (std::is_floating_point_v<C>) {
    if (op == Op::LogSumExp) {
      // Running log(sum(exp)) kept as (max m, sum s of exp(x - m)), rescaled when m grows.
      C m = -C(INFINITY), s = C(0);
      for (int64_t j = 0; j < n; ++j) {
        const C x = convert<C>(in[j]);
        if (x != x || m != m) {
          m = x != x ? x : m;
          s = C(1);
        } else if (x > m) {
          s = (m == -C(INFINITY) ? C(0) : s * math::exp(m - x)) + C(1);
          m = x;
        } else if (x > -C(INFINITY)) {
          s += math::exp(x - m);
        }
        out[j] = convert<T>(m == C(INFINITY) || m != m ? m : m + math::log(s));
      }
      return;
    }
  }
  if constexpr (!std::is_same_v<C, bool>) {
    if (op == Op::Prod) {
      C p = C(1);
      for (int64_t j = 0; j < n; ++j) {
        p = wrapping_mul(p, convert<C>(in[j]));
        out[j] = convert<T>(p);
      }
    }
  }
}

// grad_in of sum(out * grad_out) for Prod and LogSumExp (floating T).
template <typename T>
RCUDA_HOST_DEVICE inline void scan_row_backward(Backend::CumulativeOp op, T* grad_in,
                                                const T* grad_out, const T* in, const T* out,
                                                int64_t n) {
  using C = ComputeType<T>;
  using Acc = AccumulateType<T>;
  if (op == Backend::CumulativeOp::Prod) {
    // d out[k] / d in[j] = prod_{m <= k, m != j} in[m]. Before the first zero z this is
    // out[k] / in[j]; at z it is out[z - 1] times the product of in[z+1..k]; after z, 0.
    int64_t z = n;
    for (int64_t j = 0; j < n; ++j)
      if (convert<C>(in[j]) == C(0)) {
        z = j;
        break;
      }
    Acc tail = Acc(0);  // sum over z > k >= j of grad_out[k] * out[k]
    for (int64_t j = n - 1; j >= 0; --j) {
      if (j > z) {
        grad_in[j] = convert<T>(C(0));
      } else if (j < z) {
        tail += convert<Acc>(grad_out[j]) * convert<Acc>(out[j]);
        grad_in[j] = convert<T>(static_cast<C>(tail / convert<Acc>(in[j])));
      }
    }
    if (z < n) {
      Acc before = z > 0 ? convert<Acc>(out[z - 1]) : Acc(1), run = before, sum = Acc(0);
      for (int64_t k = z; k < n; ++k) {
        if (k > z) run *= convert<Acc>(in[k]);
        sum += convert<Acc>(grad_out[k]) * run;
      }
      grad_in[z] = convert<T>(static_cast<C>(sum));
    }
    return;
  }
  // LogSumExp: acc[j] = sum_{k >= j} grad_out[k] exp(out[j] - out[k]) runs backwards with
  // factors exp(out[j] - out[j + 1]) <= 1 (out never decreases), then times exp(in[j] - out[j]).
  Acc acc = Acc(0);
  for (int64_t j = n - 1; j >= 0; --j) {
    const Acc oj = convert<Acc>(out[j]);
    if (j + 1 < n) {
      const Acc next = convert<Acc>(out[j + 1]);
      acc *= oj == next ? Acc(1) : math::exp(oj - next);
    }
    acc += convert<Acc>(grad_out[j]);
    const Acc xj = convert<Acc>(in[j]);
    grad_in[j] = convert<T>(static_cast<C>(xj == oj ? acc : acc * math::exp(xj - oj)));
  }
}

}  // namespace rcuda::backend
