// Pooling windows, shared by the CPU loops and the CUDA kernels so that the two compute the same
// windows, divisors and gradient routes (docs/pooling-normalization.md). One dimension at a
// time: a 2-D window is the product of a row rule and a column rule.
#pragma once

#include <cstdint>

#include "rcuda/backend/backend.h"
#include "rcuda/core/macros.h"

namespace rcuda::backend {

// One spatial dimension of a PoolArgs: input and output sizes and the window rule.
struct PoolDim {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, pad = 0, dilation = 1;
};

inline PoolDim pool_rows(const PoolArgs& a, int64_t in, int64_t out) {
  return {in, out, a.kernel_h, a.stride_h, a.pad_h, a.dilation_h};
}
inline PoolDim pool_cols(const PoolArgs& a, int64_t in, int64_t out) {
  return {in, out, a.kernel_w, a.stride_w, a.pad_w, a.dilation_w};
}

// Input positions first, first + step, ... below end, all inside [0, in). For average pooling
// `padded` is the window's length clipped to the padded input (count_include_pad's count).
struct WindowSpan {
  int64_t first, end, step, padded;
};

RCUDA_HOST_DEVICE inline int64_t adaptive_start(int64_t o, int64_t in, int64_t out) {
  return (o * in) / out;
}
RCUDA_HOST_DEVICE inline int64_t adaptive_end(int64_t o, int64_t in, int64_t out) {
  return ((o + 1) * in + out - 1) / out;
}

// The input positions of output o's window along one dimension.
RCUDA_HOST_DEVICE inline WindowSpan window_span(int64_t o, const PoolDim& d, bool adaptive,
                                                bool max) {
  if (adaptive) {
    const int64_t s = adaptive_start(o, d.in, d.out), e = adaptive_end(o, d.in, d.out);
    return {s, e, 1, e - s};
  }
  const int64_t start = o * d.stride - d.pad;
  if (max) {  // dilated taps start + k * dilation, k < kernel, that fall inside the input
    int64_t first = start;
    if (first < 0) first += ((-first + d.dilation - 1) / d.dilation) * d.dilation;
    int64_t end = start + (d.kernel - 1) * d.dilation + 1;
    if (end > d.in) end = d.in;
    return {first, end, d.dilation, 0};
  }
  // Average pooling has no dilation; the count that includes padding stops at the padded edge
  // (so ceil_mode's overhang past the padding is not counted), as PyTorch's.
  int64_t end = start + d.kernel;
  if (end > d.in + d.pad) end = d.in + d.pad;
  const int64_t padded = end - start;
  const int64_t first = start < 0 ? 0 : start;
  if (end > d.in) end = d.in;
  return {first, end, 1, padded};
}

// Average pooling's divisor for a window whose row and column spans are given.
RCUDA_HOST_DEVICE inline int64_t avg_divisor(const PoolArgs& a, const WindowSpan& r,
                                             const WindowSpan& c) {
  if (a.adaptive) return (r.end - r.first) * (c.end - c.first);
  if (a.divisor_override != 0) return a.divisor_override;
  if (a.count_include_pad) return r.padded * c.padded;
  return (r.end - r.first) * (c.end - c.first);
}

// The outputs [first, end) along one dimension whose windows may hold input position i: a
// superset for adaptive windows and for dilated ones (the caller checks), exact otherwise.
struct OutputRange {
  int64_t first, end;
};

RCUDA_HOST_DEVICE inline OutputRange outputs_containing(int64_t i, const PoolDim& d,
                                                        bool adaptive) {
  if (adaptive) {
    int64_t end = ((i + 1) * d.out + d.in - 1) / d.in;
    if (end > d.out) end = d.out;
    return {(i * d.out) / d.in, end};
  }
  const int64_t extent = (d.kernel - 1) * d.dilation + 1;
  const int64_t first = i + d.pad < extent ? 0 : (i + d.pad - extent) / d.stride + 1;
  int64_t end = (i + d.pad) / d.stride + 1;
  if (end > d.out) end = d.out;
  return {first, end};
}

// Whether output o's window along one dimension holds input position i.
RCUDA_HOST_DEVICE inline bool window_holds(int64_t o, int64_t i, const PoolDim& d, bool adaptive,
                                           bool max) {
  const WindowSpan s = window_span(o, d, adaptive, max);
  return i >= s.first && i < s.end && (i - s.first) % s.step == 0;
}

}  // namespace rcuda::backend
