// Random tensors from counter-based Philox4x32-10 (Note [Philox stream] in rcuda/core/philox.h):
// a seed gives the same stream on every backend. Each call takes one step of the generator's
// offset, so results do not depend on tensor sizes drawn before.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>

#include "rcuda/ops/creation.h"

namespace rcuda {

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL) : seed_(seed) {}
  void manual_seed(uint64_t seed);
  uint64_t seed() const;
  uint64_t offset() const;
  void set_offset(uint64_t offset);
  // Returns the (seed, offset) for one call and advances the offset.
  std::pair<uint64_t, uint64_t> next();
  // What next() would return, without advancing.
  std::pair<uint64_t, uint64_t> peek() const;

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The process-wide generator (shared by all devices, so a seed reproduces across them).
Generator& default_generator();

// launch(seed, offset) with the default generator's next step. While this thread captures a
// CUDA graph on `device`, the launch is recorded without taking a step, and every replay takes
// the next one (Note [Updatable launches] in rcuda/backend/cuda_graph.h): a replayed step draws
// the numbers an eager step in its place would. `launch` may only call the backend's random
// primitive.
void with_next_philox(Device device, const std::function<void(uint64_t, uint64_t)>& launch);

}  // namespace rcuda

namespace rcuda::ops {

void manual_seed(uint64_t seed);

Tensor rand(const Shape& shape, TensorOptions options = {});   // U[0, 1)
Tensor randn(const Shape& shape, TensorOptions options = {});  // N(0, 1)
// Integers in [low, high); default dtype int64.
Tensor randint(int64_t low, int64_t high, const Shape& shape,
               TensorOptions options = TensorOptions(DType::Int64));
Tensor normal(double mean, double std, const Shape& shape, TensorOptions options = {});
// In place on any (also non-contiguous) tensor.
const Tensor& uniform_(const Tensor& t, double low = 0, double high = 1);
const Tensor& normal_(const Tensor& t, double mean = 0, double std = 1);

// Draws of the distribution whose parameter each element of the argument holds, in its dtype
// (floating), shape and device; each element from its own Philox stream (Note [A Philox stream
// per element] in src/backend/random_samplers.h), so a seed repeats them on every backend.
// Poisson(rates): rates finite and >= 0 (0 gives 0).
Tensor poisson(const Tensor& rates);
// Gamma(alpha, 1): alpha finite and > 0; draws below the dtype's smallest normal number are
// raised to it, as PyTorch does, so that densities stay finite.
Tensor standard_gamma(const Tensor& alpha);
// d sample / d alpha for Gamma(alpha, 1) draws `sample` at a fixed quantile (the implicit
// reparameterisation gradient that makes standard_gamma differentiable); alpha and sample of
// one shape and floating dtype, on one device.
Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& sample);

}  // namespace rcuda::ops
