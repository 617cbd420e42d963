// Primitives that run along lines of one dim: softmax / log_softmax and cumsum. Each line (every
// index of the other dims) is independent, so threads split the lines.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {
namespace {

// Lines are walked in blocks of up to kLanes neighbouring lines: when the dim is strided and
// the lines sit next to each other in memory (softmax over dim 0 of a row-major matrix), the
// kernels step along the dim once for the whole block and read memory in order.
constexpr int64_t kLanes = 64;

struct LineBlock {
  int64_t length, in_stride, out_stride;  // along the dim
  int64_t lanes, in_lane_stride, out_lane_stride;
};

// Calls block(out_start, in_start, LineBlock) for every block of lines of out and in (same
// shape) along dim.
template <typename T, typename Block>
void for_each_line_block(const Tensor& out, const Tensor& in, int64_t dim, Block block) {
  if (in.numel() == 0) return;
  const bool scalar = in.dim() == 0;
  LineBlock shape{scalar ? 1 : in.shape()[dim],
                  scalar ? 1 : in.strides()[dim],
                  scalar ? 1 : out.strides()[dim],
                  1,
                  0,
                  0};
  std::vector<int64_t> sizes, in_strides, out_strides;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (d == dim || in.shape()[d] == 1) continue;
    sizes.push_back(in.shape()[d]);
    in_strides.push_back(in.strides()[d]);
    out_strides.push_back(out.strides()[d]);
  }
  int64_t lane_dim_size = 1;
  if (!sizes.empty() && in_strides.back() == 1 && shape.in_stride != 1) {
    lane_dim_size = sizes.back();
    shape.in_lane_stride = 1;
    shape.out_lane_stride = out_strides.back();
    sizes.pop_back();
  }
  const int64_t blocks_per_row = (lane_dim_size + kLanes - 1) / kLanes;
  const int64_t units = numel(sizes) * blocks_per_row;
  T* out_data = out.data<T>();
  const T* in_data = in.data<T>();
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t first_lane = (u % blocks_per_row) * kLanes;
      LineBlock b = shape;
      b.lanes = std::min(kLanes, lane_dim_size - first_lane);
      int64_t rem = u / blocks_per_row, in_offset = first_lane * shape.in_lane_stride,
              out_offset = first_lane * shape.out_lane_stride;
      for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
        const int64_t i = rem % sizes[d];
        rem /= sizes[d];
        in_offset += i * in_strides[d];
        out_offset += i * out_strides[d];
      }
      block(out_data + out_offset, in_data + in_offset, b);
    }
  };
  if (in.numel() < kParallelGrain || units == 1 || omp_get_max_threads() == 1 ||
      omp_in_parallel()) {
    run(0, units);
    return;
  }
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t chunk = (units + threads - 1) / threads;
    const int64_t begin = std::min(units, t * chunk), end = std::min(units, begin + chunk);
    run(begin, end);
  }
}

// Softmax of a block of lines, max-subtracted so exp never overflows. Values are computed in
// ComputeType (float for the half types) and the normaliser summed in AccumulateType.
template <typename T>
void softmax_block(T* out, const T* in, const LineBlock& b, bool log) {
  using C = ComputeType<T>;
  using Acc = AccumulateType<T>;
  // Strides copied into locals: stores through `out` could otherwise alias them.
  const int64_t is = b.in_stride, ils = b.in_lane_stride, os = b.out_stride,
                ols = b.out_lane_stride;
  auto x = [=](int64_t k, int64_t j) { return convert<C>(in[k * is + j * ils]); };
  auto y = [=](int64_t k, int64_t j) -> T& { return out[k * os + j * ols]; };
  C max[kLanes];
  Acc sum[kLanes];
  for (int64_t j = 0; j < b.lanes; ++j) {
    max[j] = -std::numeric_limits<C>::infinity();
    sum[j] = 0;
  }
  // A NaN skipped by the max still turns the sum, hence the whole line, to NaN.
  for (int64_t k = 0; k < b.length; ++k)
    for (int64_t j = 0; j < b.lanes; ++j) max[j] = x(k, j) > max[j] ? x(k, j) : max[j];
  // Keep exp(x - max) in `out` when it loses nothing there; half outputs recompute it below.
  constexpr bool kStoreExp = std::is_same_v<T, C>;
  for (int64_t k = 0; k < b.length; ++k)
    for (int64_t j = 0; j < b.lanes; ++j) {
      const C e = std::exp(x(k, j) - max[j]);
      sum[j] += static_cast<Acc>(e);
      if (kStoreExp && !log) y(k, j) = convert<T>(e);
    }
  if (log) {
    C log_sum[kLanes];
    for (int64_t j = 0; j < b.lanes; ++j) log_sum[j] = static_cast<C>(std::log(sum[j]));
    for (int64_t k = 0; k < b.length; ++k)
      for (int64_t j = 0; j < b.lanes; ++j) y(k, j) = convert<T>((x(k, j) - max[j]) - log_sum[j]);
    return;
  }
  C scale[kLanes];
  for (int64_t j = 0; j < b.lanes; ++j) scale[j] = static_cast<C>(Acc(1) / sum[j]);
  for (int64_t k = 0; k < b.length; ++k)
    for (int64_t j = 0; j < b.lanes; ++j) {
      const C e = kStoreExp ? convert<C>(y(k, j)) : std::exp(x(k, j) - max[j]);
      y(k, j) = convert<T>(e * scale[j]);
    }
}

// Integer running sums wrap in uint64 as torch's int64 arithmetic does; floating ones
// accumulate in AccumulateType (Note [Compute types]).
template <typename T>
void cumsum_block(T* out, const T* in, const LineBlock& b) {
  using Acc =
      std::conditional_t<std::is_integral_v<AccumulateType<T>>, uint64_t, AccumulateType<T>>;
  const int64_t is = b.in_stride, ils = b.in_lane_stride, os = b.out_stride,
                ols = b.out_lane_stride;
  auto store = [](T& y, Acc sum) {
    if constexpr (std::is_same_v<Acc, uint64_t>)
      y = convert<T>(static_cast<int64_t>(sum));
    else
      y = convert<T>(sum);
  };
  if (b.lanes == 1) {  // one line: keep the running sum in a register
    Acc sum = 0;
    for (int64_t k = 0; k < b.length; ++k) {
      sum += convert<Acc>(in[k * is]);
      store(out[k * os], sum);
    }
    return;
  }
  Acc sum[kLanes] = {};
  for (int64_t k = 0; k < b.length; ++k)
    for (int64_t j = 0; j < b.lanes; ++j) {
      sum[j] += convert<Acc>(in[k * is + j * ils]);
      store(out[k * os + j * ols], sum[j]);
    }
}

}  // namespace

void CpuBackend::softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  dispatch_floating(in.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = decltype(tag);
    for_each_line_block<T>(out, in, dim, [&](T* o, const T* x, const LineBlock& b) {
      softmax_block<T>(o, x, b, log);
    });
  });
}

void CpuBackend::cumsum(const Tensor& out, const Tensor& in, int64_t dim) {
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for_each_line_block<T>(out, in, dim,
                           [&](T* o, const T* x, const LineBlock& b) { cumsum_block<T>(o, x, b); });
  });
}

}  // namespace rcuda::cpu
