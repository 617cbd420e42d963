// batch_norm and batch_norm_backward on the GPU: cuDNN's graph API first where it takes the call
// (../batch_norm_cudnn.cpp), else these kernels, which cover every dtype and both memory orders
// (docs/pooling-normalization.md, "Batch norm on CUDA"). Statistics in float32 (float64 for
// float64). Semantics match the CPU backend (src/backend/cpu/batch_norm.cpp).
//
// Per-channel reductions run in two deterministic stages: blocks reduce one chunk of the
// N * S rows for one channel (contiguous input: a block per channel, threads along the
// spatial positions) or for 32 channels (channels-last: a lane per channel, so reads coalesce),
// writing a partial per (chunk, channel); then a thread per channel merges its partials in
// chunk order. The forward reduces Welford statistics (mean, M2, count), the backward the sums
// of dy and dy * (x - mean). The outputs are one elementwise pass.
#include <cuda_runtime.h>

#include <algorithm>

#include "backend/cuda/batch_norm_cudnn.h"
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

template <typename A>
__device__ Welford<A> merge(const Welford<A>& a, const Welford<A>& b) {
  const A count = a.count + b.count;
  if (count == A(0)) return a;
  const A delta = b.mean - a.mean, share = b.count / count;
  return {a.mean + delta * share, a.m2 + b.m2 + delta * delta * a.count * share, count};
}

template <typename A>
struct GradSums {
  A dy, dy_xmu;
};

template <typename A>
__device__ GradSums<A> merge(const GradSums<A>& a, const GradSums<A>& b) {
  return {a.dy + b.dy, a.dy_xmu + b.dy_xmu};
}

struct MergeOp {
  template <typename Acc>
  __device__ Acc operator()(const Acc& a, const Acc& b) const {
    return merge(a, b);
  }
};

// What the reduction kernels accumulate per element (offset o of channel c).
template <typename T>
struct StatisticsOf {
  using A = StatsType<T>;
  using Acc = Welford<A>;
  const T* x;
  __device__ Acc identity() const { return {A(0), A(0), A(0)}; }
  __device__ void add(Acc& s, int64_t o, int64_t) const {
    const A v = convert<A>(x[o]);
    s.count += A(1);
    const A delta = v - s.mean;
    s.mean += delta / s.count;
    s.m2 += delta * (v - s.mean);
  }
};

template <typename T>
struct GradientSumsOf {
  using A = StatsType<T>;
  using Acc = GradSums<A>;
  const T *x, *dy;
  const A* mean;
  __device__ Acc identity() const { return {A(0), A(0)}; }
  __device__ void add(Acc& s, int64_t o, int64_t c) const {
    const A g = convert<A>(dy[o]);
    s.dy += g;
    s.dy_xmu += g * (convert<A>(x[o]) - mean[c]);
  }
};

struct Sizes {
  int64_t n, c, s;
  __host__ __device__ int64_t rows() const { return n * s; }
};

constexpr int kThreads = 256;

// Contiguous [N, C, S]: block (channel, chunk), 256 threads along the chunk's rows (n, s).
template <typename R>
__global__ void __launch_bounds__(kThreads)
    partials_contiguous_kernel(R r, Sizes z, int64_t rows_per_chunk, typename R::Acc* partial) {
  using Acc = typename R::Acc;
  __shared__ Acc shared[32];
  const int64_t c = blockIdx.x, chunk = blockIdx.y;
  const int64_t first = chunk * rows_per_chunk;
  const int64_t last = first + rows_per_chunk < z.rows() ? first + rows_per_chunk : z.rows();
  Acc acc = r.identity();
  for (int64_t row = first + threadIdx.x; row < last; row += blockDim.x) {
    const int64_t n = row / z.s, s = row % z.s;
    r.add(acc, (n * z.c + c) * z.s + s, c);
  }
  acc = nn::row_reduce(acc, MergeOp{}, shared);
  if (threadIdx.x == 0) partial[chunk * z.c + c] = acc;
}

// Channels-last [N, S, C] memory: block (32 channels, chunk), lanes along channels, 8 rows of
// threads along the chunk's rows; the 8 partials of a channel merge in row order.
constexpr int kRowsPerBlock = 8;

template <typename R>
__global__ void __launch_bounds__(32 * kRowsPerBlock)
    partials_channels_last_kernel(R r, Sizes z, int64_t rows_per_chunk, typename R::Acc* partial) {
  using Acc = typename R::Acc;
  __shared__ Acc shared[kRowsPerBlock][32];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * 32 + threadIdx.x, chunk = blockIdx.y;
  const int64_t first = chunk * rows_per_chunk;
  const int64_t last = first + rows_per_chunk < z.rows() ? first + rows_per_chunk : z.rows();
  Acc acc = r.identity();
  if (c < z.c)
    for (int64_t row = first + threadIdx.y; row < last; row += kRowsPerBlock)
      r.add(acc, row * z.c + c, c);
  shared[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || c >= z.c) return;
  for (int k = 1; k < kRowsPerBlock; ++k) acc = merge(acc, shared[k][threadIdx.x]);
  partial[chunk * z.c + c] = acc;
}

// Stage 2 of the forward: the batch's mean and invstd, and the running statistics.
template <typename A>
__global__ void finish_statistics_kernel(const Welford<A>* partial, int64_t chunks,
                                         int64_t channels, A* mean, A* invstd, A* running_mean,
                                         A* running_var, double momentum, double eps) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  Welford<A> s = partial[c];
  for (int64_t k = 1; k < chunks; ++k) s = merge(s, partial[k * channels + c]);
  const A var = s.m2 / s.count;
  mean[c] = s.mean;
  invstd[c] = A(1) / sqrt(var + A(eps));
  const A m = A(momentum);
  if (running_mean) running_mean[c] = (A(1) - m) * running_mean[c] + m * s.mean;
  if (running_var)
    running_var[c] = (A(1) - m) * running_var[c] + m * var * s.count / (s.count - A(1));
}

// The cuDNN path's running update, from the saved mean and invstd.
template <typename A>
__global__ void running_stats_kernel(const A* mean, const A* invstd, A* running_mean,
                                     A* running_var, int64_t channels, double momentum, double eps,
                                     double count) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  const A m = A(momentum);
  if (running_mean) running_mean[c] = (A(1) - m) * running_mean[c] + m * mean[c];
  if (running_var) {
    const A var = A(1) / (invstd[c] * invstd[c]) - A(eps);
    running_var[c] = (A(1) - m) * running_var[c] + m * var * A(count / (count - 1));
  }
}

__device__ __forceinline__ int64_t channel_of(int64_t i, const Sizes& z, bool channels_last) {
  return channels_last ? i % z.c : (i / z.s) % z.c;
}

template <typename T>
__global__ void normalize_kernel(const T* __restrict__ x, T* __restrict__ y,
                                 const StatsType<T>* mean, const StatsType<T>* invstd,
                                 const StatsType<T>* weight, const StatsType<T>* bias, Sizes z,
                                 bool channels_last, int64_t total) {
  using A = StatsType<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t c = channel_of(i, z, channels_last);
    A v = (convert<A>(x[i]) - mean[c]) * invstd[c];
    if (weight) v *= weight[c];
    if (bias) v += bias[c];
    y[i] = convert<T>(v);
  }
}

// Stage 2 of the backward: the weight and bias gradients, and per channel the mean of dy and
// the projection coefficient of PyTorch's input gradient.
template <typename A>
__global__ void finish_gradients_kernel(const GradSums<A>* partial, int64_t chunks,
                                        int64_t channels, const A* invstd, A* grad_weight,
                                        A* grad_bias, A* coefficients, double count) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  GradSums<A> s = partial[c];
  for (int64_t k = 1; k < chunks; ++k) s = merge(s, partial[k * channels + c]);
  const A r = invstd[c];
  if (grad_weight) grad_weight[c] = s.dy_xmu * r;
  if (grad_bias) grad_bias[c] = s.dy;
  if (coefficients) {
    coefficients[c] = s.dy / A(count);
    coefficients[channels + c] = s.dy_xmu * r * r / A(count);
  }
}

// dx = (dy - mean_dy - (x - mean) * projection) * invstd * w; without coefficients (constant
// statistics) dx = dy * invstd * w.
template <typename T>
__global__ void grad_input_kernel(const T* __restrict__ x, const T* __restrict__ dy,
                                  T* __restrict__ dx, const StatsType<T>* mean,
                                  const StatsType<T>* invstd, const StatsType<T>* weight,
                                  const StatsType<T>* coefficients, Sizes z, bool channels_last,
                                  int64_t total) {
  using A = StatsType<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t c = channel_of(i, z, channels_last);
    A g = convert<A>(dy[i]);
    if (coefficients)
      g = g - coefficients[c] - (convert<A>(x[i]) - mean[c]) * coefficients[z.c + c];
    A scale = invstd[c];
    if (weight) scale *= weight[c];
    dx[i] = convert<T>(g * scale);
  }
}

template <typename A>
A* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<A>() : nullptr;
}

unsigned elementwise_blocks(int64_t total) {
  return static_cast<unsigned>(std::min<int64_t>(nn::ceil_div(total, kThreads), 1 << 22));
}

// Runs stage 1 of a reduction with reducer r; returns the partials [chunks, C] and the chunks.
template <typename R>
std::pair<Tensor, int64_t> channel_partials(const R& r, const Sizes& z, bool channels_last,
                                            const Tensor& like, cudaStream_t stream) {
  using Acc = typename R::Acc;
  const int device = like.device().index;
  const int64_t channel_blocks = channels_last ? nn::ceil_div(z.c, 32) : z.c;
  const int64_t min_rows = channels_last ? 4 * kRowsPerBlock : 4 * kThreads;
  // About 4 blocks per multiprocessor in all, each chunk at least min_rows rows.
  int64_t chunks = std::max<int64_t>(1, nn::ceil_div(4 * multiprocessors(device), channel_blocks));
  chunks = std::min<int64_t>({chunks, nn::ceil_div(z.rows(), min_rows), 65535});
  chunks = std::max<int64_t>(chunks, 1);
  const int64_t rows_per_chunk = nn::ceil_div(z.rows(), chunks);
  chunks = nn::ceil_div(z.rows(), rows_per_chunk);
  RCUDA_CHECK(channel_blocks <= 0x7fffffff, ShapeError, "batch_norm: ", z.c,
              " channels are too many");
  const int64_t bytes_per = static_cast<int64_t>(sizeof(Acc));
  const Tensor partial = Tensor::empty({chunks * z.c * bytes_per}, DType::UInt8, like.device());
  Acc* p = static_cast<Acc*>(partial.data_ptr());
  const dim3 grid(static_cast<unsigned>(channel_blocks), static_cast<unsigned>(chunks));
  if (channels_last)
    partials_channels_last_kernel<R>
        <<<grid, dim3(32, kRowsPerBlock), 0, stream>>>(r, z, rows_per_chunk, p);
  else
    partials_contiguous_kernel<R><<<grid, kThreads, 0, stream>>>(r, z, rows_per_chunk, p);
  RCUDA_CUDA_CHECK_LAUNCH();
  return {partial, chunks};
}

template <typename T>
void batch_norm_typed(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& in,
                      const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                      const Tensor& running_var, bool training, double momentum, double eps) {
  using A = StatsType<T>;
  const int device = in.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  const Sizes z{in.shape()[0], in.shape()[1], in.shape()[2]};
  const bool channels_last = !in.is_contiguous();
  if (training) {
    const auto [partial, chunks] =
        channel_partials(StatisticsOf<T>{in.data<T>()}, z, channels_last, in, stream);
    finish_statistics_kernel<A>
        <<<static_cast<unsigned>(nn::ceil_div(z.c, kThreads)), kThreads, 0, stream>>>(
            static_cast<const Welford<A>*>(partial.data_ptr()), chunks, z.c, mean.data<A>(),
            invstd.data<A>(), data_or_null<A>(running_mean), data_or_null<A>(running_var), momentum,
            eps);
    RCUDA_CUDA_CHECK_LAUNCH();
  }
  const int64_t total = in.numel();
  normalize_kernel<T><<<elementwise_blocks(total), kThreads, 0, stream>>>(
      in.data<T>(), out.data<T>(), mean.data<A>(), invstd.data<A>(), data_or_null<A>(weight),
      data_or_null<A>(bias), z, channels_last, total);
  RCUDA_CUDA_CHECK_LAUNCH();
}

template <typename T>
void batch_norm_backward_typed(const Tensor& grad_in, const Tensor& grad_weight,
                               const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                               const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                               bool batch_stats) {
  using A = StatsType<T>;
  const int device = in.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  const Sizes z{in.shape()[0], in.shape()[1], in.shape()[2]};
  const bool channels_last = !in.is_contiguous();
  Tensor coefficients;
  const bool reduce =
      grad_weight.defined() || grad_bias.defined() || (batch_stats && grad_in.defined());
  if (reduce) {
    const auto [partial, chunks] =
        channel_partials(GradientSumsOf<T>{in.data<T>(), grad_out.data<T>(), mean.data<A>()}, z,
                         channels_last, in, stream);
    if (batch_stats && grad_in.defined())
      coefficients = Tensor::empty({2, z.c}, mean.dtype(), in.device());
    finish_gradients_kernel<A>
        <<<static_cast<unsigned>(nn::ceil_div(z.c, kThreads)), kThreads, 0, stream>>>(
            static_cast<const GradSums<A>*>(partial.data_ptr()), chunks, z.c, invstd.data<A>(),
            data_or_null<A>(grad_weight), data_or_null<A>(grad_bias), data_or_null<A>(coefficients),
            static_cast<double>(z.rows()));
    RCUDA_CUDA_CHECK_LAUNCH();
  }
  if (!grad_in.defined()) return;
  const int64_t total = in.numel();
  grad_input_kernel<T><<<elementwise_blocks(total), kThreads, 0, stream>>>(
      in.data<T>(), grad_out.data<T>(), grad_in.data<T>(), mean.data<A>(), invstd.data<A>(),
      data_or_null<A>(weight), data_or_null<A>(coefficients), z, channels_last, total);
  RCUDA_CUDA_CHECK_LAUNCH();
}

}  // namespace

void batch_norm_update_running_stats(const Tensor& mean, const Tensor& invstd,
                                     const Tensor& running_mean, const Tensor& running_var,
                                     double momentum, double eps, int64_t count) {
  if (!running_mean.defined() && !running_var.defined()) return;
  const int device = mean.device().index;
  DeviceGuard guard(device);
  const int64_t channels = mean.numel();
  const unsigned blocks = static_cast<unsigned>(nn::ceil_div(channels, kThreads));
  // The statistics dtype: float64 for float64 input, float32 for the rest.
  if (mean.dtype() == DType::Float64)
    running_stats_kernel<double><<<blocks, kThreads, 0, current_stream(device)>>>(
        mean.data<double>(), invstd.data<double>(), data_or_null<double>(running_mean),
        data_or_null<double>(running_var), channels, momentum, eps, static_cast<double>(count));
  else
    running_stats_kernel<float><<<blocks, kThreads, 0, current_stream(device)>>>(
        mean.data<float>(), invstd.data<float>(), data_or_null<float>(running_mean),
        data_or_null<float>(running_var), channels, momentum, eps, static_cast<double>(count));
  RCUDA_CUDA_CHECK_LAUNCH();
}

void CudaBackend::batch_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd,
                             const Tensor& in, const Tensor& weight, const Tensor& bias,
                             const Tensor& running_mean, const Tensor& running_var, bool training,
                             double momentum, double eps) {
  if (cudnn_batch_norm_enabled() &&
      cudnn_batch_norm_forward(out, mean, invstd, in, weight, bias, training, eps)) {
    if (training)
      batch_norm_update_running_stats(mean, invstd, running_mean, running_var, momentum, eps,
                                      in.shape()[0] * in.shape()[2]);
    return;
  }
  backend::dispatch_floating(in.dtype(), "batch_norm", [&](auto tag) {
    batch_norm_typed<decltype(tag)>(out, mean, invstd, in, weight, bias, running_mean, running_var,
                                    training, momentum, eps);
  });
}

void CudaBackend::batch_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                                      const Tensor& grad_bias, const Tensor& grad_out,
                                      const Tensor& in, const Tensor& mean, const Tensor& invstd,
                                      const Tensor& weight, bool batch_stats) {
  if (batch_stats && cudnn_batch_norm_enabled() &&
      cudnn_batch_norm_backward(grad_in, grad_weight, grad_bias, grad_out, in, mean, invstd,
                                weight))
    return;
  backend::dispatch_floating(in.dtype(), "batch_norm_backward", [&](auto tag) {
    batch_norm_backward_typed<decltype(tag)>(grad_in, grad_weight, grad_bias, grad_out, in, mean,
                                             invstd, weight, batch_stats);
  });
}

}  // namespace rcuda::cuda
