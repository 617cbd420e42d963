// group_norm and group_norm_backward on the GPU: PyTorch's algorithm (docs/pooling-
// normalization.md, "Group norm"), both memory orders, statistics in float32 (float64 for
// float64). Semantics match the CPU backend (src/backend/cpu/group_norm.cpp).
//
// Forward: a block per (sample, group) reduces Welford statistics over the group's C/G * S
// elements (Note [Row reductions] in nn_common.cuh), then one elementwise pass. Backward: a
// block per (sample, channel) reduces sum(dy) and sum(dy * (x - mean)); a thread per (sample,
// group) combines its channels' sums into the two coefficients of the input gradient; an
// elementwise pass writes it; a thread per channel sums the weight and bias gradients over the
// samples in order. No atomics: the results do not change from run to run.
#include <cuda_runtime.h>

#include <algorithm>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/nn_common.cuh"

namespace rcuda::cuda {
namespace {

using backend::convert;
using nn::StatsType;

template <typename A>
struct Welford {
  A mean, m2, count;
};

struct MergeWelford {
  template <typename A>
  __device__ Welford<A> operator()(const Welford<A>& a, const Welford<A>& b) const {
    const A count = a.count + b.count;
    if (count == A(0)) return a;
    const A delta = b.mean - a.mean, share = b.count / count;
    return {a.mean + delta * share, a.m2 + b.m2 + delta * delta * a.count * share, count};
  }
};

struct Sizes {
  int64_t n, c, s, groups;
  bool channels_last;
  __host__ __device__ int64_t per_group() const { return c / groups; }
};

__device__ __forceinline__ int64_t offset_of(const Sizes& z, int64_t n, int64_t c, int64_t s) {
  return z.channels_last ? (n * z.s + s) * z.c + c : (n * z.c + c) * z.s + s;
}

constexpr int kThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kThreads)
    group_statistics_kernel(const T* __restrict__ x, StatsType<T>* mean, StatsType<T>* rstd,
                            Sizes z, double eps) {
  using A = StatsType<T>;
  __shared__ Welford<A> shared[32];
  const int64_t unit = blockIdx.x, n = unit / z.groups, c0 = (unit % z.groups) * z.per_group();
  const int64_t count = z.per_group() * z.s;
  Welford<A> w{A(0), A(0), A(0)};
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    // Contiguous: the group is one run of memory; channels-last: spatial-major runs of C/G.
    const int64_t c = z.channels_last ? c0 + j % z.per_group() : c0 + j / z.s;
    const int64_t s = z.channels_last ? j / z.per_group() : j % z.s;
    const A v = convert<A>(x[offset_of(z, n, c, s)]);
    w.count += A(1);
    const A delta = v - w.mean;
    w.mean += delta / w.count;
    w.m2 += delta * (v - w.mean);
  }
  w = nn::row_reduce(w, MergeWelford{}, shared);
  if (threadIdx.x == 0) {
    mean[unit] = w.mean;
    rstd[unit] = A(1) / sqrt(w.m2 / w.count + A(eps));
  }
}

// (n, c) of element i in memory order.
__device__ __forceinline__ void sample_channel(const Sizes& z, int64_t i, int64_t& n, int64_t& c) {
  n = i / (z.c * z.s);
  c = z.channels_last ? i % z.c : (i / z.s) % z.c;
}

template <typename T>
__global__ void group_normalize_kernel(const T* __restrict__ x, T* __restrict__ y,
                                       const StatsType<T>* mean, const StatsType<T>* rstd,
                                       const StatsType<T>* weight, const StatsType<T>* bias,
                                       Sizes z, int64_t total) {
  using A = StatsType<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t n, c;
    sample_channel(z, i, n, c);
    const int64_t unit = n * z.groups + c / z.per_group();
    A v = (convert<A>(x[i]) - mean[unit]) * rstd[unit];
    if (weight) v *= weight[c];
    if (bias) v += bias[c];
    y[i] = convert<T>(v);
  }
}

// sums[0][n * C + c] = sum(dy), sums[1][n * C + c] = sum(dy * (x - mean)) over the spatial dims.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    channel_sums_kernel(const T* __restrict__ x, const T* __restrict__ dy, const StatsType<T>* mean,
                        StatsType<T>* sums, Sizes z) {
  using A = StatsType<T>;
  using S2 = nn::Sums<A, 2>;
  __shared__ S2 shared[32];
  const int64_t nc = blockIdx.x, n = nc / z.c, c = nc % z.c;
  const A m = mean[n * z.groups + c / z.per_group()];
  S2 acc{{A(0), A(0)}};
  for (int64_t s = threadIdx.x; s < z.s; s += blockDim.x) {
    const int64_t o = offset_of(z, n, c, s);
    const A g = convert<A>(dy[o]);
    acc.v[0] += g;
    acc.v[1] += g * (convert<A>(x[o]) - m);
  }
  acc = nn::row_reduce(acc, nn::AddSums<A, 2>{}, shared);
  if (threadIdx.x == 0) {
    sums[nc] = acc.v[0];
    sums[z.n * z.c + nc] = acc.v[1];
  }
}

// Per (n, g): mean(dy * w) and mean(dy * w * xhat) over the group.
template <typename A>
__global__ void group_coefficients_kernel(const A* sums, const A* rstd, const A* weight,
                                          A* coefficients, Sizes z) {
  const int64_t unit = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (unit >= z.n * z.groups) return;
  const int64_t n = unit / z.groups, c0 = (unit % z.groups) * z.per_group();
  A a = 0, b = 0;
  for (int64_t c = c0; c < c0 + z.per_group(); ++c) {
    const A w = weight ? weight[c] : A(1);
    a += sums[n * z.c + c] * w;
    b += sums[z.n * z.c + n * z.c + c] * w;
  }
  const A count = A(z.per_group() * z.s);
  coefficients[unit] = a / count;
  coefficients[z.n * z.groups + unit] = b * rstd[unit] / count;
}

// dx = rstd * (dy * w - mean(dy w) - xhat * mean(dy w xhat)).
template <typename T>
__global__ void group_grad_input_kernel(const T* __restrict__ x, const T* __restrict__ dy,
                                        T* __restrict__ dx, const StatsType<T>* mean,
                                        const StatsType<T>* rstd, const StatsType<T>* weight,
                                        const StatsType<T>* coefficients, Sizes z, int64_t total) {
  using A = StatsType<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t n, c;
    sample_channel(z, i, n, c);
    const int64_t unit = n * z.groups + c / z.per_group();
    const A r = rstd[unit];
    const A xhat = (convert<A>(x[i]) - mean[unit]) * r;
    A g = convert<A>(dy[i]);
    if (weight) g *= weight[c];
    dx[i] = convert<T>(r * (g - coefficients[unit] - xhat * coefficients[z.n * z.groups + unit]));
  }
}

template <typename A>
__global__ void group_grad_params_kernel(const A* sums, const A* rstd, A* grad_weight, A* grad_bias,
                                         Sizes z) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= z.c) return;
  A sum_w = 0, sum_b = 0;
  for (int64_t n = 0; n < z.n; ++n) {
    sum_b += sums[n * z.c + c];
    sum_w += sums[z.n * z.c + n * z.c + c] * rstd[n * z.groups + c / z.per_group()];
  }
  if (grad_weight) grad_weight[c] = sum_w;
  if (grad_bias) grad_bias[c] = sum_b;
}

template <typename A>
A* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<A>() : nullptr;
}

unsigned blocks_for(int64_t total) {
  return static_cast<unsigned>(std::min<int64_t>(nn::ceil_div(total, kThreads), 1 << 22));
}

unsigned grid_of(int64_t units, const char* op) {
  RCUDA_CHECK(units <= 0x7fffffff, ShapeError, op, ": ", units, " blocks are too many");
  return static_cast<unsigned>(units);
}

Sizes sizes_of(const Tensor& in, int64_t groups) {
  return {in.shape()[0], in.shape()[1], in.shape()[2], groups, !in.is_contiguous()};
}

template <typename T>
void group_norm_typed(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& in,
                      const Tensor& weight, const Tensor& bias, int64_t groups, double eps) {
  using A = StatsType<T>;
  const int device = in.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  const Sizes z = sizes_of(in, groups);
  group_statistics_kernel<T><<<grid_of(z.n * groups, "group_norm"), kThreads, 0, stream>>>(
      in.data<T>(), mean.data<A>(), rstd.data<A>(), z, eps);
  RCUDA_CUDA_CHECK_LAUNCH();
  const int64_t total = in.numel();
  group_normalize_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
      in.data<T>(), out.data<T>(), mean.data<A>(), rstd.data<A>(), data_or_null<A>(weight),
      data_or_null<A>(bias), z, total);
  RCUDA_CUDA_CHECK_LAUNCH();
}

template <typename T>
void group_norm_backward_typed(const Tensor& grad_in, const Tensor& grad_weight,
                               const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                               const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                               int64_t groups) {
  using A = StatsType<T>;
  const int device = in.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  const Sizes z = sizes_of(in, groups);
  const Tensor sums = Tensor::empty({2, z.n * z.c}, mean.dtype(), in.device());
  channel_sums_kernel<T><<<grid_of(z.n * z.c, "group_norm_backward"), kThreads, 0, stream>>>(
      in.data<T>(), grad_out.data<T>(), mean.data<A>(), sums.data<A>(), z);
  RCUDA_CUDA_CHECK_LAUNCH();
  if (grad_in.defined()) {
    const Tensor coefficients = Tensor::empty({2, z.n * groups}, mean.dtype(), in.device());
    group_coefficients_kernel<A><<<blocks_for(z.n * groups), kThreads, 0, stream>>>(
        sums.data<A>(), rstd.data<A>(), data_or_null<A>(weight), coefficients.data<A>(), z);
    RCUDA_CUDA_CHECK_LAUNCH();
    const int64_t total = in.numel();
    group_grad_input_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        in.data<T>(), grad_out.data<T>(), grad_in.data<T>(), mean.data<A>(), rstd.data<A>(),
        data_or_null<A>(weight), coefficients.data<A>(), z, total);
    RCUDA_CUDA_CHECK_LAUNCH();
  }
  if (grad_weight.defined() || grad_bias.defined()) {
    group_grad_params_kernel<A><<<blocks_for(z.c), kThreads, 0, stream>>>(
        sums.data<A>(), rstd.data<A>(), data_or_null<A>(grad_weight), data_or_null<A>(grad_bias),
        z);
    RCUDA_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

void CudaBackend::group_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                             const Tensor& in, const Tensor& weight, const Tensor& bias,
                             int64_t groups, double eps) {
  backend::dispatch_floating(in.dtype(), "group_norm", [&](auto tag) {
    group_norm_typed<decltype(tag)>(out, mean, rstd, in, weight, bias, groups, eps);
  });
}

void CudaBackend::group_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                                      const Tensor& grad_bias, const Tensor& grad_out,
                                      const Tensor& in, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& weight, int64_t groups) {
  backend::dispatch_floating(in.dtype(), "group_norm_backward", [&](auto tag) {
    group_norm_backward_typed<decltype(tag)>(grad_in, grad_weight, grad_bias, grad_out, in, mean,
                                             rstd, weight, groups);
  });
}

}  // namespace rcuda::cuda
