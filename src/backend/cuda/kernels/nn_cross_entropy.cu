// Cross-entropy fused with log-softmax on the GPU, for class-index and probability targets.
// Semantics match the CPU backend (src/backend/cpu/nn_cross_entropy.cpp, formulas in
// backend.h's contract); arithmetic in float32 for float32 and the half types, float64 for
// float64.
//
// Forward: a warp (up to 1024 classes) or a block per row, one pass over the row keeping the
// online softmax pair (max, sum of exp(z - max), Note [Online softmax] in softmax.cu) and, when
// the loss needs them, sum_c a[c] z[c] and sum_c a[c] with a = w (class indices with label
// smoothing) or w t' (probabilities); lane 0 then forms the loss. Ignored rows skip the pass.
// Backward: one kernel writes each row's gradient in one pass (probabilities: a first pass for
// sum_c w t'); sum_c w for the label-smoothed term is summed once per call beforehand.
// Nothing synchronises with the host: an out-of-range class index turns its row's loss and
// gradient into NaN and is reported, and the host raises IndexError at its next synchronisation
// (Note [Deferred device errors] in backend/cuda/device_errors.h).
#include <cuda_runtime.h>

#include <cmath>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_errors.h"
#include "backend/cuda/kernels/device_errors.cuh"
#include "backend/cuda/kernels/nn_common.cuh"

namespace rcuda::cuda {
namespace {

using backend::convert;
using nn::StatsType;

template <typename A>
struct RowSums {
  A max, sum;       // online softmax
  A weighted_z, a;  // sum_c a[c] z[c], sum_c a[c]
};

template <typename A>
__device__ __forceinline__ A rescaled(A sum, A from, A to) {
  return from == to ? sum : sum * exp(from - to);
}

template <typename A>
struct MergeRowSums {
  __device__ RowSums<A> operator()(const RowSums<A>& x, const RowSums<A>& y) const {
    const A m = fmax(x.max, y.max);
    return {m, rescaled(x.sum, x.max, m) + rescaled(y.sum, y.max, m), x.weighted_z + y.weighted_z,
            x.a + y.a};
  }
};

// The problem's pointers; target_index for class indices, target_probs for probabilities.
template <typename T>
struct Problem {
  const T* logits;
  const int64_t* target_index;
  const T* target_probs;
  const T* weight;
  int64_t rows, classes, ignore_index;
  double smoothing;
  DeviceErrorRecord* errors;
  const char* op;  // a host string: the host reads the record (kernels/device_errors.cuh)
};

// a[c] for the V classes at j (w, or w t' for probabilities).
template <typename T, int V, typename A>
__device__ __forceinline__ void coefficients(const Problem<T>& p, int64_t row, int64_t j,
                                             A (&a)[V]) {
  if (p.target_probs) {
    nn::load<T, V>(p.target_probs + row * p.classes + j, a);
    const A keep = A(1 - p.smoothing), spread = A(p.smoothing / static_cast<double>(p.classes));
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] = a[k] * keep + spread;
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] = A(1);
  }
  if (p.weight) {
    A w[V];
    nn::load<T, V>(p.weight + j, w);
#pragma unroll
    for (int k = 0; k < V; ++k) a[k] *= w[k];
  }
}

template <typename T, int V>
__global__ void __launch_bounds__(1024)
    cross_entropy_kernel(Problem<T> p, StatsType<T>* loss, StatsType<T>* row_weight,
                         StatsType<T>* logsumexp) {
  using A = StatsType<T>;
  __shared__ RowSums<A> shared[32];
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (row >= p.rows) return;
  const int64_t t = p.target_index ? p.target_index[row] : 0;
  if (p.target_index && t == p.ignore_index) {  // uniform across the row's threads
    if (threadIdx.x == 0) loss[row] = row_weight[row] = logsumexp[row] = A(0);
    return;
  }
  const bool sums = p.target_probs || p.smoothing > 0;
  const T* z = p.logits + row * p.classes;
  RowSums<A> s{A(-INFINITY), A(0), A(0), A(0)};
  for (int64_t j = static_cast<int64_t>(threadIdx.x) * V; j < p.classes;
       j += static_cast<int64_t>(blockDim.x) * V) {
    A v[V];
    nn::load<T, V>(z + j, v);
    A m = s.max;
#pragma unroll
    for (int k = 0; k < V; ++k) m = fmax(m, v[k]);
    A sum = rescaled(s.sum, s.max, m);
#pragma unroll
    for (int k = 0; k < V; ++k) sum += v[k] == A(-INFINITY) ? A(0) : exp(v[k] - m);
    s.max = m;
    s.sum = sum;
    if (sums) {
      A a[V];
      coefficients<T, V>(p, row, j, a);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        s.weighted_z += a[k] * v[k];
        s.a += a[k];
      }
    }
  }
  s = nn::row_reduce(s, MergeRowSums<A>{}, shared);
  if (threadIdx.x != 0) return;
  // As the CPU: a +inf or an all -inf row has lse = max (log(sum) would add NaN or nothing).
  const A lse = isinf(s.max) ? s.max : s.max + log(s.sum);
  logsumexp[row] = lse;
  const A smooth = s.a * lse - s.weighted_z;  // sum_c a[c] (lse - z[c])
  if (p.target_probs) {
    loss[row] = smooth;
    return;
  }
  if (t < 0 || t >= p.classes) {  // a data error: NaN, and reported (see the top)
    report_target_error(p.errors, p.op, t, row, p.classes);
    loss[row] = row_weight[row] = A(NAN);
    return;
  }
  const A wt = p.weight ? convert<A>(p.weight[t]) : A(1);
  A value = A(1 - p.smoothing) * wt * (lse - convert<A>(z[t]));
  if (p.smoothing > 0) value += A(p.smoothing / static_cast<double>(p.classes)) * smooth;
  loss[row] = value;
  row_weight[row] = wt;
}

// The per-row scale of the gradient and the sum of the class weights.
template <typename T>
struct Scale {
  const T* grad_loss;
  int64_t grad_stride;
  const StatsType<T>* divisor;       // null: 1
  const StatsType<T>* weight_total;  // sum_c w[c], null without weight
};

template <typename T, int V>
__global__ void __launch_bounds__(1024)
    cross_entropy_backward_kernel(Problem<T> p, Scale<T> scale_in, const StatsType<T>* logsumexp,
                                  T* grad) {
  using A = StatsType<T>;
  __shared__ nn::Sums<A, 1> shared[32];
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  if (row >= p.rows) return;
  T* out = grad + row * p.classes;
  const int64_t step = static_cast<int64_t>(blockDim.x) * V;
  const int64_t first = static_cast<int64_t>(threadIdx.x) * V;
  const int64_t t = p.target_index ? p.target_index[row] : 0;
  if (p.target_index && (t == p.ignore_index || t < 0 || t >= p.classes)) {
    const A fill = t == p.ignore_index ? A(0) : A(NAN);
    for (int64_t j = first; j < p.classes; j += step) {
      A v[V];
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = fill;
      nn::store<T, V>(out + j, v);
    }
    return;
  }
  A scale = convert<A>(scale_in.grad_loss[row * scale_in.grad_stride]);
  if (scale_in.divisor) scale = scale / *scale_in.divisor;
  const T* z = p.logits + row * p.classes;
  const A lse = logsumexp[row];
  const A spread = A(p.smoothing / static_cast<double>(p.classes));
  // grad[c] = scale * (softmax[c] * softmax_part - a[c] * a_part - (c == t) * target_part).
  A softmax_part, a_part, target_part = 0;
  if (p.target_probs) {
    nn::Sums<A, 1> mass{{A(0)}};  // sum_c w[c] t'[c]
    for (int64_t j = first; j < p.classes; j += step) {
      A a[V];
      coefficients<T, V>(p, row, j, a);
#pragma unroll
      for (int k = 0; k < V; ++k) mass.v[0] += a[k];
    }
    softmax_part = nn::row_reduce(mass, nn::AddSums<A, 1>{}, shared).v[0];
    a_part = A(1);
  } else {
    target_part = A(1 - p.smoothing) * (p.weight ? convert<A>(p.weight[t]) : A(1));
    const A weight_total =
        scale_in.weight_total ? *scale_in.weight_total : A(static_cast<double>(p.classes));
    softmax_part = target_part + spread * weight_total;
    a_part = spread;
  }
  const bool reads_a = p.target_probs || (p.smoothing > 0 && p.weight);
  for (int64_t j = first; j < p.classes; j += step) {
    A v[V], a[V];
    nn::load<T, V>(z + j, v);
    if (reads_a) {
      coefficients<T, V>(p, row, j, a);
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) a[k] = A(1);
    }
#pragma unroll
    for (int k = 0; k < V; ++k) {
      A g = exp(v[k] - lse) * softmax_part - a[k] * a_part;
      if (j + k == t && !p.target_probs) g -= target_part;
      v[k] = scale * g;
    }
    nn::store<T, V>(out + j, v);
  }
}

// One block adds the class weights (a fixed order, so every call gives the same bits).
template <typename T>
__global__ void __launch_bounds__(256)
    sum_weights_kernel(const T* weight, int64_t classes, StatsType<T>* total) {
  using A = StatsType<T>;
  __shared__ nn::Sums<A, 1> shared[32];
  nn::Sums<A, 1> s{{A(0)}};
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) s.v[0] += convert<A>(weight[c]);
  s = nn::row_reduce(s, nn::AddSums<A, 1>{}, shared);
  if (threadIdx.x == 0) *total = s.v[0];
}

template <typename T>
Problem<T> problem(const Tensor& logits, const Tensor& target, const Tensor& weight,
                   int64_t ignore_index, double smoothing) {
  const bool indices = target.dtype() == DType::Int64;
  return Problem<T>{logits.data<T>(),
                    indices ? target.data<int64_t>() : nullptr,
                    indices ? nullptr : target.data<T>(),
                    weight.defined() ? weight.data<T>() : nullptr,
                    logits.shape()[0],
                    logits.shape()[1],
                    ignore_index,
                    smoothing,
                    device_error_record(logits.device().index),
                    "cross_entropy"};
}

template <typename T>
bool vectorisable(const Problem<T>& p, const void* grad) {
  if (p.classes % nn::kVector<T> != 0) return false;
  for (const void* ptr : {static_cast<const void*>(p.logits), static_cast<const void*>(p.weight),
                          static_cast<const void*>(p.target_probs), grad})
    if (!nn::aligned_to(ptr, 16)) return false;
  return true;
}

template <typename T>
void cross_entropy_typed(const Tensor& loss, const Tensor& row_weight, const Tensor& logsumexp,
                         const Tensor& logits, const Tensor& target, const Tensor& weight,
                         int64_t ignore_index, double smoothing) {
  using S = StatsType<T>;
  const int device = logits.device().index;
  DeviceGuard guard(device);
  check_device_errors(device);
  const Problem<T> p = problem<T>(logits, target, weight, ignore_index, smoothing);
  cudaStream_t stream = current_stream(device);
  const bool vector = vectorisable(p, nullptr);
  const nn::RowLaunch l = nn::row_launch(p.rows, p.classes, vector ? nn::kVector<T> : 1);
  S* rw = row_weight.defined() ? row_weight.data<S>() : nullptr;
  if (vector) {
    cross_entropy_kernel<T, nn::kVector<T>>
        <<<l.grid, l.block, 0, stream>>>(p, loss.data<S>(), rw, logsumexp.data<S>());
  } else {
    cross_entropy_kernel<T, 1>
        <<<l.grid, l.block, 0, stream>>>(p, loss.data<S>(), rw, logsumexp.data<S>());
  }
  RCUDA_CUDA_CHECK_LAUNCH();
  check_device_errors_after_launch(device);
}

template <typename T>
void cross_entropy_backward_typed(const Tensor& grad_logits, const Tensor& grad_loss,
                                  const Tensor& divisor, const Tensor& logits, const Tensor& target,
                                  const Tensor& weight, const Tensor& logsumexp,
                                  int64_t ignore_index, double smoothing) {
  using S = StatsType<T>;
  const Problem<T> p = problem<T>(logits, target, weight, ignore_index, smoothing);
  const int device = logits.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  Tensor weight_total;
  if (p.weight && p.target_index && smoothing > 0) {
    weight_total = Tensor::empty({1}, logsumexp.dtype(), logits.device());
    sum_weights_kernel<T><<<1, 256, 0, stream>>>(p.weight, p.classes, weight_total.data<S>());
    RCUDA_CUDA_CHECK_LAUNCH();
  }
  const Scale<T> scale{grad_loss.data<T>(), grad_loss.strides()[0],
                       divisor.defined() ? divisor.data<S>() : nullptr,
                       weight_total.defined() ? weight_total.data<S>() : nullptr};
  T* grad = grad_logits.data<T>();
  const bool vector = vectorisable(p, grad);
  const nn::RowLaunch l = nn::row_launch(p.rows, p.classes, vector ? nn::kVector<T> : 1);
  if (vector) {
    cross_entropy_backward_kernel<T, nn::kVector<T>>
        <<<l.grid, l.block, 0, stream>>>(p, scale, logsumexp.data<S>(), grad);
  } else {
    cross_entropy_backward_kernel<T, 1>
        <<<l.grid, l.block, 0, stream>>>(p, scale, logsumexp.data<S>(), grad);
  }
  RCUDA_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaBackend::cross_entropy(const Tensor& loss, const Tensor& row_weight,
                                const Tensor& logsumexp, const Tensor& logits, const Tensor& target,
                                const Tensor& weight, int64_t ignore_index,
                                double label_smoothing) {
  backend::dispatch_floating(logits.dtype(), "cross_entropy", [&](auto tag) {
    cross_entropy_typed<decltype(tag)>(loss, row_weight, logsumexp, logits, target, weight,
                                       ignore_index, label_smoothing);
  });
}

void CudaBackend::cross_entropy_backward(const Tensor& grad_logits, const Tensor& grad_loss,
                                         const Tensor& divisor, const Tensor& logits,
                                         const Tensor& target, const Tensor& weight,
                                         const Tensor& logsumexp, int64_t ignore_index,
                                         double label_smoothing) {
  backend::dispatch_floating(logits.dtype(), "cross_entropy_backward", [&](auto tag) {
    cross_entropy_backward_typed<decltype(tag)>(grad_logits, grad_loss, divisor, logits, target,
                                                weight, logsumexp, ignore_index, label_smoothing);
  });
}

}  // namespace rcuda::cuda
