// Optimizer primitives on the GPU (Note [Optimizer primitives] in rcuda/backend/backend.h):
// multi-tensor kernels over the element updates of backend/optim_math.h, which the CPU loops
// share, and the fused gradient norm of clip_grad_norm_.
//
// Note [Multi-tensor launches]
// As PyTorch's multi_tensor_apply: one launch updates many tensors. The host packs, for up to
// kCapacity tensors, each list's data pointer, the element count, two per-tensor scalars (Adam's
// step size and bias correction, Adagrad's decayed lr) and a prefix sum of chunk counts into
// one kernel-argument struct (TensorBatch, under the 4 KiB parameter limit every supported
// toolkit and GPU accepts). Tensors are cut into chunks of kChunkElements; a block takes
// chunks in a grid-stride loop and finds a chunk's tensor by binary search in the prefix sums
// (uniform across the block, read from the constant bank). So the grid fits the GPU whatever
// the tensor sizes, and an Adam step over the six tensors of a 784-512-512-10 MLP is a single
// launch. Where every pointer of a tensor's lists is 16-byte aligned, its elements move 16
// bytes at a time (chunks start at multiples of kChunkElements, so alignment holds inside the
// tensor); a tail shorter than a vector, and a misaligned tensor (a view at an odd offset), run
// element by element. Empty tensors are left out of the batches.
#include <cuda_runtime.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_updatable.cuh"
#include "backend/cuda/runtime.h"
#include "backend/dispatch.h"
#include "backend/optim_math.h"

namespace rcuda::cuda {
namespace {

namespace om = backend::optim_math;
using backend::ComputeType;
using backend::convert;
using TensorList = Backend::TensorList;

constexpr int64_t kChunkElements = 4096;  // 16 elements per thread of a 256-thread block
constexpr size_t kParameterBytes = 4096;  // the kernel-parameter limit we stay under

template <int Depth>
struct TensorBatch {
  // Per tensor: Depth pointers, a count, two scalars, a prefix entry, an alignment flag; the
  // rest of the 4 KiB is left to the op's constants.
  static constexpr int kCapacity = 3600 / (8 * Depth + 8 + 16 + 4 + 1);
  void* data[Depth][kCapacity];
  int64_t numel[kCapacity];
  double scalars[2][kCapacity];
  int32_t first_chunk[kCapacity + 1];  // first_chunk[count] = this batch's chunk count
  int count;
  int64_t chunk_base;          // index of the batch's first chunk among all batches of the call
  unsigned present;            // bit k: list k is used (others are skipped, their values are 0)
  uint8_t aligned[kCapacity];  // every used pointer of the tensor is 16-byte aligned
};

template <typename C>
struct ChunkScalars {
  C a, b;
};

// The tensor holding `chunk`: the last t with first_chunk[t] <= chunk.
template <int Depth>
__device__ __forceinline__ int tensor_of_chunk(const TensorBatch<Depth>& batch, int chunk) {
  int low = 0, high = batch.count - 1;
  while (low < high) {
    const int mid = (low + high + 1) / 2;
    if (batch.first_chunk[mid] <= chunk)
      low = mid;
    else
      high = mid - 1;
  }
  return low;
}

// Applies op(values[Depth], scalars) to every element of every tensor of the batch, in
// ComputeType<T>; stores back the lists in Op::kWritten.
template <typename T, int Depth, typename Op>
__global__ void __launch_bounds__(kThreadsPerBlock)
    multi_tensor_kernel(const TensorBatch<Depth> batch, const Op op) {
  using C = ComputeType<T>;
  constexpr int V = 16 / sizeof(T);
  const int chunks = batch.first_chunk[batch.count];
  for (int chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const int t = tensor_of_chunk(batch, chunk);
    const int64_t begin = static_cast<int64_t>(chunk - batch.first_chunk[t]) * kChunkElements;
    const int n = static_cast<int>(min(kChunkElements, batch.numel[t] - begin));
    T* ptr[Depth];
#pragma unroll
    for (int k = 0; k < Depth; ++k) ptr[k] = static_cast<T*>(batch.data[k][t]) + begin;
    const ChunkScalars<C> scalars = op.chunk_scalars(batch.scalars[0][t], batch.scalars[1][t]);
    int done = 0;
    if (batch.aligned[t]) {
      const int vectors = n / V;
      for (int v = threadIdx.x; v < vectors; v += blockDim.x) {
        Pack<T, V> packs[Depth];
#pragma unroll
        for (int k = 0; k < Depth; ++k)
          if (batch.present & (1u << k)) packs[k] = reinterpret_cast<const Pack<T, V>*>(ptr[k])[v];
#pragma unroll
        for (int j = 0; j < V; ++j) {
          C e[Depth];
#pragma unroll
          for (int k = 0; k < Depth; ++k)
            e[k] = (batch.present & (1u << k)) ? convert<C>(packs[k].v[j]) : C(0);
          op(e, scalars);
#pragma unroll
          for (int k = 0; k < Depth; ++k) packs[k].v[j] = convert<T>(e[k]);
        }
#pragma unroll
        for (int k = 0; k < Depth; ++k)
          if ((Op::kWritten & (1u << k)) && (batch.present & (1u << k)))
            reinterpret_cast<Pack<T, V>*>(ptr[k])[v] = packs[k];
      }
      done = vectors * V;
    }
    for (int i = done + threadIdx.x; i < n; i += blockDim.x) {
      C e[Depth];
#pragma unroll
      for (int k = 0; k < Depth; ++k)
        e[k] = (batch.present & (1u << k)) ? convert<C>(ptr[k][i]) : C(0);
      op(e, scalars);
#pragma unroll
      for (int k = 0; k < Depth; ++k)
        if ((Op::kWritten & (1u << k)) && (batch.present & (1u << k))) ptr[k][i] = convert<T>(e[k]);
    }
  }
}

// Packs the non-empty tensors of `lists` (one list per slot; an empty list is an absent slot)
// into batches and calls launch(batch) for each. s0/s1: per-tensor scalars, may be null.
template <int Depth, typename Launch>
void for_each_batch(const std::array<const TensorList*, Depth>& lists, const double* s0,
                    const double* s1, Launch launch) {
  using Batch = TensorBatch<Depth>;
  Batch batch{};
  for (int k = 0; k < Depth; ++k)
    if (!lists[k]->empty()) batch.present |= 1u << k;
  int64_t chunk_base = 0;
  auto flush = [&] {
    if (batch.count == 0) return;
    batch.chunk_base = chunk_base;
    launch(batch);
    chunk_base += batch.first_chunk[batch.count];
    batch.count = 0;
  };
  const TensorList& params = *lists[0];
  for (size_t i = 0; i < params.size(); ++i) {
    const int64_t numel = params[i].numel();
    if (numel == 0) continue;
    const int64_t chunks = (numel + kChunkElements - 1) / kChunkElements;
    RCUDA_CHECK(chunks < std::numeric_limits<int32_t>::max() / 2, ValueError,
                "cuda multi-tensor kernel: a tensor of ", numel, " elements is too large");
    if (batch.count == Batch::kCapacity ||
        batch.first_chunk[batch.count] + chunks > std::numeric_limits<int32_t>::max())
      flush();
    const int c = batch.count;
    batch.aligned[c] = 1;
    for (int k = 0; k < Depth; ++k) {
      void* p = (batch.present & (1u << k)) ? (*lists[k])[i].data_ptr() : nullptr;
      batch.data[k][c] = p;
      if (p != nullptr && !aligned16(p)) batch.aligned[c] = 0;
    }
    batch.numel[c] = numel;
    batch.scalars[0][c] = s0 ? s0[i] : 0.0;
    batch.scalars[1][c] = s1 ? s1[i] : 0.0;
    batch.first_chunk[c + 1] = batch.first_chunk[c] + static_cast<int32_t>(chunks);
    batch.count = c + 1;
  }
  flush();
}

template <typename T, int Depth, typename Op>
void run_multi_tensor(const std::array<const TensorList*, Depth>& lists, const double* s0,
                      const double* s1, const Op& op) {
  static_assert(sizeof(TensorBatch<Depth>) + sizeof(Op) <= kParameterBytes,
                "multi-tensor kernel arguments exceed the 4 KiB parameter limit");
  const TensorList& params = *lists[0];
  if (params.empty()) return;
  const int device = params[0].device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  for_each_batch<Depth>(lists, s0, s1, [&](const TensorBatch<Depth>& batch) {
    const int chunks = batch.first_chunk[batch.count];
    const int blocks = blocks_for(static_cast<int64_t>(chunks) * kThreadsPerBlock, device);
    // Updatable: a graph replay gives an optimizer step its step sizes and lr of the moment
    // (Note [Optimizer steps in CUDA graphs] in rcuda/optim/optimizer.h).
    launch_updatable(multi_tensor_kernel<T, Depth, Op>, blocks, kThreadsPerBlock, 0, stream, batch,
                     op);
  });
}

// ---- the optimizers' element ops: slots in the order of the primitive's lists ----

template <typename C>
struct NoChunkScalars {
  __device__ ChunkScalars<C> chunk_scalars(double a, double b) const { return {C(a), C(b)}; }
};

template <typename C>
struct SgdOp : NoChunkScalars<C> {
  static constexpr unsigned kWritten = 0b101;  // param, grad, momentum_buffer
  om::SgdConstants<C> k;
  __device__ void operator()(C (&e)[3], ChunkScalars<C>) const {
    om::sgd_update(e[0], e[1], e[2], k);
  }
};

template <typename C>
struct AdamOp : NoChunkScalars<C> {
  static constexpr unsigned kWritten = 0b11101;  // param, grad, exp_avg, exp_avg_sq, max
  om::AdamConstants<C> k;
  __device__ void operator()(C (&e)[5], ChunkScalars<C> s) const {
    om::adam_update(e[0], e[1], e[2], e[3], e[4], k, s.a, s.b);  // step size, bias corr.
  }
};

template <typename C>
struct RmspropOp : NoChunkScalars<C> {
  static constexpr unsigned kWritten = 0b11101;  // param, grad, square_avg, buffer, grad_avg
  om::RmspropConstants<C> k;
  __device__ void operator()(C (&e)[5], ChunkScalars<C>) const {
    om::rmsprop_update(e[0], e[1], e[2], e[3], e[4], k);
  }
};

template <typename C>
struct AdagradOp : NoChunkScalars<C> {
  static constexpr unsigned kWritten = 0b101;  // param, grad, state_sum
  om::AdagradConstants<C> k;
  __device__ void operator()(C (&e)[3], ChunkScalars<C> s) const {
    om::adagrad_update(e[0], e[1], e[2], k, s.a);  // the decayed lr
  }
};

const TensorList kAbsent;

// ---- clip_grad_norm_: partial sums per chunk, one combining block, the scaling ----

enum class NormKind : int { One, Two, Inf, General };

NormKind norm_kind(double p) {
  if (std::isinf(p)) return NormKind::Inf;
  if (p == 1) return NormKind::One;
  if (p == 2) return NormKind::Two;
  return NormKind::General;
}

// Terms and partials are double whatever the dtype (a float32 sum of squares of 1e8 elements
// keeps few digits); the kernels stay memory-bound.
__device__ __forceinline__ double norm_term(double v, NormKind kind, double p) {
  switch (kind) {
    case NormKind::Two:
      return v * v;
    case NormKind::General:
      return pow(fabs(v), p);
    default:
      return fabs(v);
  }
}

__device__ __forceinline__ double norm_combine(double a, double b, NormKind kind) {
  return kind == NormKind::Inf ? om::maximum(a, b) : a + b;  // |x| >= 0: 0 is both identities
}

// Combines one value per thread of a kThreadsPerBlock block in a fixed tree (the same bits on
// every run); the result is valid in thread 0. Every thread of the block must call it.
__device__ double block_combine(double v, NormKind kind) {
  __shared__ double warp_values[kThreadsPerBlock / 32];
  for (int offset = 16; offset > 0; offset /= 2)
    v = norm_combine(v, __shfl_down_sync(0xffffffffu, v, offset), kind);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_values[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreadsPerBlock / 32 ? warp_values[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2)
      v = norm_combine(v, __shfl_down_sync(0xffffffffu, v, offset), kind);
  }
  __syncthreads();  // warp_values is reused by the block's next call
  return v;
}

// partials[batch.chunk_base + c] = the combined terms of chunk c.
template <typename T>
__global__ void __launch_bounds__(kThreadsPerBlock)
    norm_partials_kernel(const TensorBatch<1> batch, NormKind kind, double p, double* partials) {
  constexpr int V = 16 / sizeof(T);
  const int chunks = batch.first_chunk[batch.count];
  for (int chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const int t = tensor_of_chunk(batch, chunk);
    const int64_t begin = static_cast<int64_t>(chunk - batch.first_chunk[t]) * kChunkElements;
    const int n = static_cast<int>(min(kChunkElements, batch.numel[t] - begin));
    const T* x = static_cast<const T*>(batch.data[0][t]) + begin;
    double acc = 0;
    int done = 0;
    if (batch.aligned[t]) {
      const int vectors = n / V;
      for (int v = threadIdx.x; v < vectors; v += blockDim.x) {
        const Pack<T, V> pack = reinterpret_cast<const Pack<T, V>*>(x)[v];
#pragma unroll
        for (int j = 0; j < V; ++j)
          acc = norm_combine(acc, norm_term(convert<double>(pack.v[j]), kind, p), kind);
      }
      done = vectors * V;
    }
    for (int i = done + threadIdx.x; i < n; i += blockDim.x)
      acc = norm_combine(acc, norm_term(convert<double>(x[i]), kind, p), kind);
    acc = block_combine(acc, kind);
    if (threadIdx.x == 0) partials[batch.chunk_base + chunk] = acc;
  }
}

__device__ void store_floating(void* out, DType dtype, double v) {
  switch (dtype) {
    case DType::Float16:
      *static_cast<Half*>(out) = convert<Half>(v);
      break;
    case DType::BFloat16:
      *static_cast<BFloat16*>(out) = convert<BFloat16>(v);
      break;
    case DType::Float32:
      *static_cast<float*>(out) = static_cast<float>(v);
      break;
    default:
      *static_cast<double*>(out) = v;
  }
}

__device__ double load_floating(const void* in, DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return convert<double>(*static_cast<const Half*>(in));
    case DType::BFloat16:
      return convert<double>(*static_cast<const BFloat16*>(in));
    case DType::Float32:
      return *static_cast<const float*>(in);
    default:
      return *static_cast<const double*>(in);
  }
}

// One block: combines `count` partials in a fixed order and writes the norm in its dtype.
__global__ void __launch_bounds__(kThreadsPerBlock)
    norm_finalize_kernel(const double* partials, int64_t count, NormKind kind, double p,
                         void* total_norm, DType dtype) {
  double acc = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    acc = norm_combine(acc, partials[i], kind);
  acc = block_combine(acc, kind);
  if (threadIdx.x != 0) return;
  if (kind == NormKind::Two)
    acc = sqrt(acc);
  else if (kind == NormKind::General)
    acc = pow(acc, 1.0 / p);
  store_floating(total_norm, dtype, acc);
}

// x *= the clip coefficient, computed once per chunk from the norm in device memory.
template <typename C>
struct ClipOp {
  static constexpr unsigned kWritten = 0b1;
  const void* total_norm;
  DType dtype;
  double max_norm;
  __device__ ChunkScalars<C> chunk_scalars(double, double) const {
    return {C(om::clip_coefficient(load_floating(total_norm, dtype), max_norm)), C(0)};
  }
  __device__ void operator()(C (&e)[1], ChunkScalars<C> s) const { e[0] = e[0] * s.a; }
};

// x *= inv_scale, and *found_inf = 1 where x was inf or NaN (a benign race: every writer stores
// the same value).
template <typename C>
struct UnscaleOp {
  static constexpr unsigned kWritten = 0b1;
  const float* inv_scale;
  float* found_inf;
  __device__ ChunkScalars<C> chunk_scalars(double, double) const { return {C(*inv_scale), C(0)}; }
  __device__ void operator()(C (&e)[1], ChunkScalars<C> s) const {
    if (!isfinite(e[0])) *found_inf = 1.0f;
    e[0] = e[0] * s.a;
  }
};

// The tensors of `tensors` with dtype `dtype`, in order.
TensorList with_dtype(const TensorList& tensors, DType dtype) {
  TensorList out;
  for (const Tensor& t : tensors)
    if (t.dtype() == dtype) out.push_back(t);
  return out;
}

constexpr DType kFloatingDTypes[] = {DType::Float16, DType::BFloat16, DType::Float32,
                                     DType::Float64};

int64_t chunk_count(const TensorList& tensors) {
  int64_t chunks = 0;
  for (const Tensor& t : tensors) chunks += (t.numel() + kChunkElements - 1) / kChunkElements;
  return chunks;
}

}  // namespace

void CudaBackend::sgd_step(const TensorList& params, const TensorList& grads,
                           const TensorList& momentum_buffers, const SgdStep& args) {
  if (params.empty()) return;
  const TensorList& buffers = args.momentum != 0 ? momentum_buffers : kAbsent;
  backend::dispatch_floating(params[0].dtype(), "sgd_step", [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    run_multi_tensor<T, 3>({&params, &grads, &buffers}, nullptr, nullptr,
                           SgdOp<C>{{}, om::SgdConstants<C>(args)});
  });
}

void CudaBackend::adam_step(const TensorList& params, const TensorList& grads,
                            const TensorList& exp_avgs, const TensorList& exp_avg_sqs,
                            const TensorList& max_exp_avg_sqs, const std::vector<int64_t>& steps,
                            const AdamStep& args) {
  if (params.empty()) return;
  std::vector<double> step_size(params.size()), bias_correction2_sqrt(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    step_size[i] = om::adam_step_size(args.lr, args.beta1, steps[i]);
    bias_correction2_sqrt[i] = om::adam_bias_correction2_sqrt(args.beta2, steps[i]);
  }
  const TensorList& maxima = args.amsgrad ? max_exp_avg_sqs : kAbsent;
  backend::dispatch_floating(params[0].dtype(), "adam_step", [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    run_multi_tensor<T, 5>({&params, &grads, &exp_avgs, &exp_avg_sqs, &maxima}, step_size.data(),
                           bias_correction2_sqrt.data(), AdamOp<C>{{}, om::AdamConstants<C>(args)});
  });
}

void CudaBackend::rmsprop_step(const TensorList& params, const TensorList& grads,
                               const TensorList& square_avgs, const TensorList& momentum_buffers,
                               const TensorList& grad_avgs, const RmspropStep& args) {
  if (params.empty()) return;
  const TensorList& buffers = args.momentum > 0 ? momentum_buffers : kAbsent;
  const TensorList& averages = args.centered ? grad_avgs : kAbsent;
  backend::dispatch_floating(params[0].dtype(), "rmsprop_step", [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    run_multi_tensor<T, 5>({&params, &grads, &square_avgs, &buffers, &averages}, nullptr, nullptr,
                           RmspropOp<C>{{}, om::RmspropConstants<C>(args)});
  });
}

void CudaBackend::adagrad_step(const TensorList& params, const TensorList& grads,
                               const TensorList& state_sums, const std::vector<int64_t>& steps,
                               const AdagradStep& args) {
  if (params.empty()) return;
  std::vector<double> learning_rate(params.size());
  for (size_t i = 0; i < params.size(); ++i)
    learning_rate[i] = om::adagrad_learning_rate(args.lr, args.lr_decay, steps[i]);
  backend::dispatch_floating(params[0].dtype(), "adagrad_step", [&](auto tag) {
    using T = decltype(tag);
    using C = ComputeType<T>;
    run_multi_tensor<T, 3>({&params, &grads, &state_sums}, learning_rate.data(), nullptr,
                           AdagradOp<C>{{}, om::AdagradConstants<C>(args)});
  });
}

void CudaBackend::multi_tensor_norm(const TensorList& tensors, double p, const Tensor& total_norm) {
  const int device = total_norm.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  const NormKind kind = norm_kind(p);
  const int64_t chunks = chunk_count(tensors);
  // Partials live in the stream-ordered pool: freeing the workspace here is ordered after the
  // kernels that read it.
  const Tensor workspace =
      Tensor::empty({std::max<int64_t>(chunks, 1)}, DType::Float64, total_norm.device());
  double* partials = workspace.data<double>();
  for (DType dtype : kFloatingDTypes) {
    const TensorList group = with_dtype(tensors, dtype);
    if (group.empty()) continue;
    backend::dispatch_floating(dtype, "multi_tensor_norm", [&](auto tag) {
      using T = decltype(tag);
      for_each_batch<1>({&group}, nullptr, nullptr, [&](const TensorBatch<1>& batch) {
        const int batch_chunks = batch.first_chunk[batch.count];
        const int blocks =
            blocks_for(static_cast<int64_t>(batch_chunks) * kThreadsPerBlock, device);
        norm_partials_kernel<T><<<blocks, kThreadsPerBlock, 0, stream>>>(batch, kind, p, partials);
        RCUDA_CUDA_CHECK_LAUNCH();
      });
    });
    partials += chunk_count(group);
  }
  norm_finalize_kernel<<<1, kThreadsPerBlock, 0, stream>>>(
      workspace.data<double>(), chunks, kind, p, total_norm.data_ptr(), total_norm.dtype());
  RCUDA_CUDA_CHECK_LAUNCH();
}

void CudaBackend::clip_by_total_norm(const TensorList& tensors, const Tensor& total_norm,
                                     double max_norm) {
  for (DType dtype : kFloatingDTypes) {
    const TensorList group = with_dtype(tensors, dtype);
    if (group.empty()) continue;
    backend::dispatch_floating(dtype, "clip_by_total_norm", [&](auto tag) {
      using T = decltype(tag);
      using C = ComputeType<T>;
      run_multi_tensor<T, 1>({&group}, nullptr, nullptr,
                             ClipOp<C>{total_norm.data_ptr(), total_norm.dtype(), max_norm});
    });
  }
}

void CudaBackend::unscale_and_check_finite(const TensorList& tensors, const Tensor& inv_scale,
                                           const Tensor& found_inf) {
  for (DType dtype : kFloatingDTypes) {
    const TensorList group = with_dtype(tensors, dtype);
    if (group.empty()) continue;
    backend::dispatch_floating(dtype, "unscale_and_check_finite", [&](auto tag) {
      using T = decltype(tag);
      using C = ComputeType<T>;
      run_multi_tensor<T, 1>({&group}, nullptr, nullptr,
                             UnscaleOp<C>{inv_scale.data<float>(), found_inf.data<float>()});
    });
  }
}

}  // namespace rcuda::cuda
