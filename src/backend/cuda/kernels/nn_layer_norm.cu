// layer_norm forward and backward on the GPU. Semantics match the CPU backend
// (src/backend/cpu/nn_layer_norm.cpp); statistics and arithmetic in float32 for float32 and
// the half types, float64 for float64.
//
// Forward: one warp (rows up to 1024 elements) or one block per row. A first pass over the row
// keeps Welford statistics per thread, a 16-byte pack at a time (the pack's own mean and sum of
// squared deviations, merged by Chan's formula: one division per pack, and no cancellation
// for rows whose mean is large against their spread); the threads' statistics merge (Note
// [Row reductions]); a second pass, which re-reads the row mostly from L1/L2, writes
// (x - mean) * rstd * w + b.
// Backward: the input gradient is another warp/block per row (two sums, then the write); the
// weight and bias gradients are the standard two-stage reduction over rows: blocks of
// 32 columns x a chunk of rows write partial sums, a second kernel adds each column's partials
// in chunk order (deterministic, no atomics).
#include <cuda_runtime.h>

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
struct MergeWelford {
  __device__ Welford<A> operator()(const Welford<A>& a, const Welford<A>& b) const {
    const A count = a.count + b.count;
    if (count == A(0)) return a;
    const A delta = b.mean - a.mean, share = b.count / count;
    return {a.mean + delta * share, a.m2 + b.m2 + delta * delta * a.count * share, count};
  }
};

// The statistics of one thread's elements of a row: packs of V, strided by the row's threads.
template <typename T, int V, typename A>
__device__ Welford<A> thread_statistics(const T* row, int64_t cols) {
  Welford<A> s{A(0), A(0), A(0)};
  const MergeWelford<A> merge;
  for (int64_t j = static_cast<int64_t>(threadIdx.x) * V; j < cols;
       j += static_cast<int64_t>(blockDim.x) * V) {
    A v[V];
    nn::load<T, V>(row + j, v);
    A sum = 0;
#pragma unroll
    for (int k = 0; k < V; ++k) sum += v[k];
    const A mean = sum / A(V);
    A m2 = 0;
#pragma unroll
    for (int k = 0; k < V; ++k) m2 += (v[k] - mean) * (v[k] - mean);
    s = merge(s, Welford<A>{mean, m2, A(V)});
  }
  return s;
}

// V elements per load: 16 bytes when every row and operand is aligned for it, else 1.
template <typename T, int V>
__global__ void __launch_bounds__(1024)
    layer_norm_kernel(const T* x, const T* weight, const T* bias, T* y, StatsType<T>* mean_out,
                      StatsType<T>* rstd_out, int64_t rows, int64_t cols, double eps) {
  using A = StatsType<T>;
  __shared__ Welford<A> shared[32];
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (row >= rows) return;  // a whole warp (warp rows) or never (block rows)
  const T* xr = x + row * cols;
  const Welford<A> s =
      nn::row_reduce(thread_statistics<T, V, A>(xr, cols), MergeWelford<A>{}, shared);
  const A mean = s.mean;
  const A rstd = A(1) / sqrt(s.m2 / A(cols) + A(eps));
  if (threadIdx.x == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
  T* yr = y + row * cols;
  for (int64_t j = static_cast<int64_t>(threadIdx.x) * V; j < cols;
       j += static_cast<int64_t>(blockDim.x) * V) {
    A v[V];
    nn::load<T, V>(xr + j, v);
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = (v[k] - mean) * rstd;
    if (weight) {
      A w[V];
      nn::load<T, V>(weight + j, w);
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] *= w[k];
    }
    if (bias) {
      A b[V];
      nn::load<T, V>(bias + j, b);
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] += b[k];
    }
    nn::store<T, V>(yr + j, v);
  }
}

// dx = rstd * (dy w - mean(dy w) - xhat * mean(dy w xhat)), a warp or block per row.
template <typename T, int V>
__global__ void __launch_bounds__(1024)
    layer_norm_grad_input_kernel(const T* dy, const T* x, const StatsType<T>* mean_in,
                                 const StatsType<T>* rstd_in, const T* weight, T* dx, int64_t rows,
                                 int64_t cols) {
  using A = StatsType<T>;
  using S2 = nn::Sums<A, 2>;
  __shared__ S2 shared[32];
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (row >= rows) return;
  const A mean = mean_in[row], rstd = rstd_in[row];
  const T* xr = x + row * cols;
  const T* gr = dy + row * cols;
  // g = dy * w and xhat for the V elements at j.
  auto load_terms = [&](int64_t j, A(&g)[V], A(&xhat)[V]) {
    nn::load<T, V>(gr + j, g);
    nn::load<T, V>(xr + j, xhat);
    if (weight) {
      A w[V];
      nn::load<T, V>(weight + j, w);
#pragma unroll
      for (int k = 0; k < V; ++k) g[k] *= w[k];
    }
#pragma unroll
    for (int k = 0; k < V; ++k) xhat[k] = (xhat[k] - mean) * rstd;
  };
  S2 sums{{A(0), A(0)}};
  const int64_t step = static_cast<int64_t>(blockDim.x) * V;
  for (int64_t j = static_cast<int64_t>(threadIdx.x) * V; j < cols; j += step) {
    A g[V], xhat[V];
    load_terms(j, g, xhat);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      sums.v[0] += g[k];
      sums.v[1] += g[k] * xhat[k];
    }
  }
  sums = nn::row_reduce(sums, nn::AddSums<A, 2>{}, shared);
  const A mean_g = sums.v[0] / A(cols), mean_gx = sums.v[1] / A(cols);
  T* out = dx + row * cols;
  for (int64_t j = static_cast<int64_t>(threadIdx.x) * V; j < cols; j += step) {
    A g[V], xhat[V];
    load_terms(j, g, xhat);
#pragma unroll
    for (int k = 0; k < V; ++k) g[k] = rstd * (g[k] - mean_g - xhat[k] * mean_gx);
    nn::store<T, V>(out + j, g);
  }
}

constexpr int kColumnTile = 32;  // columns per block (one per lane)
constexpr int kRowThreads = 16;  // threads along the rows of a chunk

// Stage 1: partial[chunk][col] = sum over the chunk's rows of dy * xhat (weight) and dy (bias).
template <typename T>
__global__ void __launch_bounds__(kColumnTile* kRowThreads)
    layer_norm_grad_params_partial_kernel(const T* dy, const T* x, const StatsType<T>* mean_in,
                                          const StatsType<T>* rstd_in, StatsType<T>* partial_w,
                                          StatsType<T>* partial_b, int64_t rows, int64_t cols,
                                          int64_t rows_per_chunk) {
  using A = StatsType<T>;
  __shared__ A shared_w[kRowThreads][kColumnTile + 1];
  __shared__ A shared_b[kRowThreads][kColumnTile + 1];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t last = first + rows_per_chunk < rows ? first + rows_per_chunk : rows;
  A sum_w = 0, sum_b = 0;
  if (col < cols) {
    for (int64_t r = first + threadIdx.y; r < last; r += kRowThreads) {
      const A g = convert<A>(dy[r * cols + col]);
      const A xhat = (convert<A>(x[r * cols + col]) - mean_in[r]) * rstd_in[r];
      sum_w += g * xhat;
      sum_b += g;
    }
  }
  shared_w[threadIdx.y][threadIdx.x] = sum_w;
  shared_b[threadIdx.y][threadIdx.x] = sum_b;
  __syncthreads();
  if (threadIdx.y != 0 || col >= cols) return;
  for (int k = 1; k < kRowThreads; ++k) {
    sum_w += shared_w[k][threadIdx.x];
    sum_b += shared_b[k][threadIdx.x];
  }
  partial_w[blockIdx.y * cols + col] = sum_w;
  partial_b[blockIdx.y * cols + col] = sum_b;
}

// Stage 2: a thread per column adds its chunks' partials in order.
template <typename T>
__global__ void layer_norm_grad_params_kernel(const StatsType<T>* partial_w,
                                              const StatsType<T>* partial_b, T* grad_weight,
                                              T* grad_bias, int64_t cols, int64_t chunks) {
  using A = StatsType<T>;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  A sum_w = 0, sum_b = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    sum_w += partial_w[c * cols + col];
    sum_b += partial_b[c * cols + col];
  }
  if (grad_weight) grad_weight[col] = convert<T>(sum_w);
  if (grad_bias) grad_bias[col] = convert<T>(sum_b);
}

template <typename T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// Whether every operand (and so every row, cols being a multiple of V) allows 16-byte access.
template <typename T>
bool vectorisable(int64_t cols, std::initializer_list<const void*> pointers) {
  if (cols % nn::kVector<T> != 0) return false;
  for (const void* p : pointers)
    if (!nn::aligned_to(p, 16)) return false;
  return true;
}

template <typename T>
void layer_norm_typed(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& in,
                      const Tensor& weight, const Tensor& bias, double eps) {
  using S = StatsType<T>;
  const int64_t rows = in.shape()[0], cols = in.shape()[1];
  const int device = in.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  const T *x = in.data<T>(), *w = data_or_null<T>(weight), *b = data_or_null<T>(bias);
  T* y = out.data<T>();
  const bool vector = vectorisable<T>(cols, {x, w, b, y});
  const nn::RowLaunch l = nn::row_launch(rows, cols, vector ? nn::kVector<T> : 1);
  if (vector) {
    layer_norm_kernel<T, nn::kVector<T>><<<l.grid, l.block, 0, stream>>>(
        x, w, b, y, mean.data<S>(), rstd.data<S>(), rows, cols, eps);
  } else {
    layer_norm_kernel<T, 1><<<l.grid, l.block, 0, stream>>>(x, w, b, y, mean.data<S>(),
                                                            rstd.data<S>(), rows, cols, eps);
  }
  RCUDA_CUDA_CHECK_LAUNCH();
}

template <typename T>
void layer_norm_backward_typed(const Tensor& grad_in, const Tensor& grad_weight,
                               const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                               const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  using S = StatsType<T>;
  const int64_t rows = in.shape()[0], cols = in.shape()[1];
  const int device = in.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  const T *x = in.data<T>(), *dy = grad_out.data<T>(), *w = data_or_null<T>(weight);
  const S *m = mean.data<S>(), *r = rstd.data<S>();
  if (grad_in.defined()) {
    T* dx = grad_in.data<T>();
    const bool vector = vectorisable<T>(cols, {x, dy, w, dx});
    const nn::RowLaunch l = nn::row_launch(rows, cols, vector ? nn::kVector<T> : 1);
    if (vector) {
      layer_norm_grad_input_kernel<T, nn::kVector<T>>
          <<<l.grid, l.block, 0, stream>>>(dy, x, m, r, w, dx, rows, cols);
    } else {
      layer_norm_grad_input_kernel<T, 1>
          <<<l.grid, l.block, 0, stream>>>(dy, x, m, r, w, dx, rows, cols);
    }
    RCUDA_CUDA_CHECK_LAUNCH();
  }
  if (!grad_weight.defined() && !grad_bias.defined()) return;
  // Enough chunks of rows for about 4 blocks per SM, each chunk at least kRowThreads rows.
  const int64_t tiles = nn::ceil_div(cols, kColumnTile);
  const int64_t chunks = std::max<int64_t>(
      1,
      std::min(nn::ceil_div(4 * multiprocessors(device), tiles), nn::ceil_div(rows, kRowThreads)));
  const int64_t rows_per_chunk = nn::ceil_div(rows, chunks);
  RCUDA_CHECK(tiles <= 0x7fffffff && chunks <= 65535, ShapeError, "layer_norm_backward: ", cols,
              " columns are too many");
  const Tensor partial = Tensor::empty({2, chunks, cols}, mean.dtype(), in.device());
  S* partial_w = partial.data<S>();
  S* partial_b = partial_w + chunks * cols;
  layer_norm_grad_params_partial_kernel<T>
      <<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks)),
         dim3(kColumnTile, kRowThreads), 0, stream>>>(dy, x, m, r, partial_w, partial_b, rows, cols,
                                                      rows_per_chunk);
  RCUDA_CUDA_CHECK_LAUNCH();
  layer_norm_grad_params_kernel<T>
      <<<static_cast<unsigned>(nn::ceil_div(cols, 256)), 256, 0, stream>>>(
          partial_w, partial_b, grad_weight.defined() ? grad_weight.data<T>() : nullptr,
          grad_bias.defined() ? grad_bias.data<T>() : nullptr, cols, chunks);
  RCUDA_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaBackend::layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                             const Tensor& in, const Tensor& weight, const Tensor& bias,
                             double eps) {
  backend::dispatch_floating(in.dtype(), "layer_norm", [&](auto tag) {
    layer_norm_typed<decltype(tag)>(out, mean, rstd, in, weight, bias, eps);
  });
}

void CudaBackend::layer_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                                      const Tensor& grad_bias, const Tensor& grad_out,
                                      const Tensor& in, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& weight) {
  backend::dispatch_floating(in.dtype(), "layer_norm_backward", [&](auto tag) {
    layer_norm_backward_typed<decltype(tag)>(grad_in, grad_weight, grad_bias, grad_out, in, mean,
                                             rstd, weight);
  });
}

}  // namespace rcuda::cuda
