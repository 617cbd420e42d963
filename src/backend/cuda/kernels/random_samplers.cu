// Poisson and Gamma draws and the Gamma draw's gradient on the GPU: one thread per element runs
// the sampler that the CPU runs (src/backend/random_samplers.h) on the element's own Philox
// stream, so a seed gives the CPU's draws (Note [A Philox stream per element]). Trial loops
// diverge within a warp; a Gamma draw takes 1.05 trials on average, a Poisson draw from rate 10
// about 1.15, so the slowest lane of a warp rarely waits long. In double, as the CPU: the
// H100's and H200's FP64 units make that cheap next to the Philox blocks.
#include <cuda_runtime.h>

#include <cstdint>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/launch_updatable.cuh"
#include "backend/dispatch.h"
#include "backend/random_samplers.h"
#include "rcuda/core/philox.h"

namespace rcuda::cuda {
namespace {

using backend::convert;

enum class Sampler { Poisson, Gamma };

template <typename T, Sampler S>
__global__ void sample_kernel(T* out, const T* param, int64_t n, philox::RoundKeys keys,
                              uint64_t offset) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    backend::ElementStream stream(keys, offset, static_cast<uint64_t>(i));
    const double p = convert<double>(param[i]);
    double x;
    if constexpr (S == Sampler::Poisson) {
      x = backend::sample_poisson(stream, p);
    } else {
      x = fmax(backend::sample_gamma(stream, p), backend::smallest_normal<T>());
    }
    out[i] = convert<T>(x);
  }
}

template <Sampler S>
void sample(const Tensor& out, const Tensor& param, uint64_t seed, uint64_t offset,
            const char* op) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int device = out.device().index;
  DeviceGuard guard(device);
  const philox::RoundKeys keys = philox::detail::seed_keys(seed);
  backend::dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    // Updatable: a graph replay gives the kernel its next offset (Note [Updatable launches]).
    launch_updatable(sample_kernel<T, S>, blocks_for(n, device), kThreadsPerBlock, 0,
                     current_stream(device), out.data<T>(), param.data<T>(), n, keys, offset);
  });
}

template <typename T>
__global__ void gamma_grad_kernel(T* out, const T* alpha, const T* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] =
        convert<T>(backend::gamma_sample_grad(convert<double>(alpha[i]), convert<double>(x[i])));
  }
}

}  // namespace

void CudaBackend::random_poisson(const Tensor& out, const Tensor& rates, uint64_t seed,
                                 uint64_t offset) {
  sample<Sampler::Poisson>(out, rates, seed, offset, "poisson");
}

void CudaBackend::random_gamma(const Tensor& out, const Tensor& alpha, uint64_t seed,
                               uint64_t offset) {
  sample<Sampler::Gamma>(out, alpha, seed, offset, "standard_gamma");
}

void CudaBackend::gamma_sample_grad(const Tensor& out, const Tensor& alpha, const Tensor& x) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int device = out.device().index;
  DeviceGuard guard(device);
  backend::dispatch_floating(out.dtype(), "standard_gamma_grad", [&](auto tag) {
    using T = decltype(tag);
    gamma_grad_kernel<T><<<blocks_for(n, device), kThreadsPerBlock, 0, current_stream(device)>>>(
        out.data<T>(), alpha.data<T>(), x.data<T>(), n);
    RCUDA_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace rcuda::cuda
