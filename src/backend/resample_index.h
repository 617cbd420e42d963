// Index formulas of pad and interpolate (Note [Resampling primitives] in rcuda/backend/backend.h),
// compiled for the CPU loops and the CUDA kernels alike, so that both read the same input
// elements with the same weights and run their backward passes as the same gather. One
// dimension at a time: a 2-D or 3-D rule is the product of per-dimension rules.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "rcuda/backend/backend.h"
#include "rcuda/core/macros.h"

namespace rcuda::backend {

// ---- pad ------------------------------------------------------------------------------------

// The input position that output position o reads along a dim of `size` elements padded by
// `before` in front (PadArgs' guarantees make one reflection or one wrap enough).
RCUDA_HOST_DEVICE inline int64_t pad_source(PadMode mode, int64_t o, int64_t before, int64_t size) {
  int64_t v = o - before;
  switch (mode) {
    case PadMode::Reflect:
      if (v < 0) return -v;
      return v >= size ? 2 * (size - 1) - v : v;
    case PadMode::Replicate:
      return v < 0 ? 0 : (v >= size ? size - 1 : v);
    case PadMode::Circular:
      v %= size;
      return v < 0 ? v + size : v;
  }
  return v;
}

// Output positions reading one input position along one dim: up to three runs [first, end).
struct OutputRuns {
  int64_t first[3] = {0, 0, 0}, end[3] = {0, 0, 0};
  int count = 0;
};

RCUDA_HOST_DEVICE inline void add_run(OutputRuns& r, int64_t first, int64_t end, int64_t out) {
  if (first < 0) first = 0;
  if (end > out) end = out;
  if (first >= end) return;
  r.first[r.count] = first;
  r.end[r.count] = end;
  ++r.count;
}

// The outputs whose pad_source is i: the virtual positions v = o - before that map to i, which
// are distinct runs for each mode (reflect: i, -i, 2 (size - 1) - i; replicate: i, or everything
// beyond an edge; circular: i - size, i, i + size), clipped to the output.
RCUDA_HOST_DEVICE inline OutputRuns pad_outputs_reading(PadMode mode, int64_t i, int64_t before,
                                                        int64_t size, int64_t out) {
  OutputRuns r;
  switch (mode) {
    case PadMode::Reflect:
      if (i > 0) add_run(r, before - i, before - i + 1, out);
      add_run(r, before + i, before + i + 1, out);
      if (i < size - 1)
        add_run(r, before + 2 * (size - 1) - i, before + 2 * (size - 1) - i + 1, out);
      break;
    case PadMode::Replicate: {
      const int64_t first = i == 0 ? 0 : before + i;
      const int64_t end = i == size - 1 ? out : before + i + 1;
      add_run(r, first, end, out);
      break;
    }
    case PadMode::Circular:
      for (int64_t k = -1; k <= 1; ++k)
        add_run(r, before + i + k * size, before + i + k * size + 1, out);
      break;
  }
  return r;
}

// ---- interpolate ----------------------------------------------------------------------------

// Products and sums rounded one operation at a time: nvcc would otherwise fuse (o + 0.5) * r -
// 0.5 into a fused multiply-add and pick other taps than the CPU at exact boundaries (the CPU file
// is built with -ffp-contract=off for the same reason).
template <typename A>
RCUDA_HOST_DEVICE inline A mul_rn(A a, A b) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<A, float>)
    return __fmul_rn(a, b);
  else
    return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
template <typename A>
RCUDA_HOST_DEVICE inline A add_rn(A a, A b) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<A, float>)
    return __fadd_rn(a, b);
  else
    return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// One spatial dim of an interpolation. A is the linear mode's arithmetic (float for float32 and
// the half types, double for float64, PyTorch's opmath); nearest modes compute in float32.
template <typename A>
struct ResampleAxis {
  int64_t in = 1, out = 1;
  InterpolateMode mode = InterpolateMode::Nearest;
  bool align_corners = false;
  float nearest_ratio = 1;  // PyTorch's compute_scales_value<float>
  A ratio = 1;              // PyTorch's area_pixel_compute_scale<A>
};

// scale: the caller's scale_factor for the dim, 0 for none. Host only (ops' values).
template <typename A>
inline ResampleAxis<A> resample_axis(const InterpolateArgs& args, int64_t in, int64_t out,
                                     double scale) {
  ResampleAxis<A> a;
  a.in = in;
  a.out = out;
  a.mode = args.mode;
  a.align_corners = args.align_corners;
  a.nearest_ratio = scale > 0 ? static_cast<float>(1.0 / scale)
                              : static_cast<float>(in) / static_cast<float>(out);
  if (args.align_corners)
    a.ratio = out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0);
  else
    a.ratio = scale > 0 ? static_cast<A>(1.0 / scale) : static_cast<A>(in) / static_cast<A>(out);
  return a;
}

// The two input positions output o reads and their weights (nearest: one position, weight 1).
template <typename A>
struct Taps {
  int64_t i0, i1;
  A l0, l1;
};

template <typename A>
RCUDA_HOST_DEVICE inline int64_t nearest_source(const ResampleAxis<A>& a, int64_t o) {
  int64_t i;
  if (a.mode == InterpolateMode::Nearest) {
    // PyTorch's CPU nearest_idx: exact for the identity and for doubling.
    if (a.out == a.in) return o;
    if (a.out == 2 * a.in) return o >> 1;
    i = static_cast<int64_t>(floorf(mul_rn(static_cast<float>(o), a.nearest_ratio)));
  } else {  // (o + 0.5) * scale is a double product in PyTorch's expression
    const double x = mul_rn(static_cast<double>(o) + 0.5, static_cast<double>(a.nearest_ratio));
    i = static_cast<int64_t>(floorf(static_cast<float>(x)));
  }
  return i < a.in - 1 ? i : a.in - 1;
}

template <typename A>
RCUDA_HOST_DEVICE inline Taps<A> resample_taps(const ResampleAxis<A>& a, int64_t o) {
  if (a.mode != InterpolateMode::Linear) {
    const int64_t i = nearest_source(a, o);
    return {i, i, A(1), A(0)};
  }
  if (a.out == a.in) return {o, o, A(1), A(0)};
  A x;
  if (a.align_corners) {
    x = mul_rn(a.ratio, static_cast<A>(o));
  } else {
    x = add_rn(mul_rn(a.ratio, add_rn(static_cast<A>(o), A(0.5))), A(-0.5));
    if (x < A(0)) x = A(0);
  }
  int64_t i0 = static_cast<int64_t>(floor(x));
  if (i0 > a.in - 1) i0 = a.in - 1;
  A l1 = x - static_cast<A>(i0);
  l1 = l1 < A(0) ? A(0) : (l1 > A(1) ? A(1) : l1);
  const int64_t i1 = i0 < a.in - 1 ? i0 + 1 : i0;
  return {i0, i1, A(1) - l1, l1};
}

// The weight of input position i in output o's taps.
template <typename A>
RCUDA_HOST_DEVICE inline A tap_weight(const Taps<A>& t, int64_t i) {
  return (t.i0 == i ? t.l0 : A(0)) + (t.i1 == i ? t.l1 : A(0));
}

// The first output whose first tap is at or beyond input position k (out when none), by binary
// search: the first tap never decreases along the output, as each formula above is monotone.
template <typename A>
RCUDA_HOST_DEVICE inline int64_t first_output_from(const ResampleAxis<A>& a, int64_t k) {
  int64_t lo = 0, hi = a.out;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (resample_taps(a, mid).i0 >= k)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

// The outputs [first, end) whose taps may name input position i: their first tap is i - 1
// (second tap i) or i.
struct OutputSpan {
  int64_t first, end;
};

template <typename A>
RCUDA_HOST_DEVICE inline OutputSpan outputs_reading(const ResampleAxis<A>& a, int64_t i) {
  const int64_t first = first_output_from(a, a.mode == InterpolateMode::Linear ? i - 1 : i);
  return {first, first_output_from(a, i + 1)};
}

}  // namespace rcuda::backend
