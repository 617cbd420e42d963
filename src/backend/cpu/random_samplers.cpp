// Poisson and Gamma draws and the Gamma draw's gradient on the CPU: each element runs the
// shared sampler of src/backend/random_samplers.h on its own Philox stream, so the result does
// not depend on how OpenMP splits the elements (Note [A Philox stream per element]).
#include "backend/random_samplers.h"

#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {
namespace {

// A draw costs tens of uniforms where a fill costs one: a small grain per element.
constexpr int64_t kSampleCost = 64;

template <typename Sample>
void sample_each(const Tensor& out, const Tensor& param, uint64_t seed, uint64_t offset,
                 const char* op, Sample sample) {
  const int64_t n = out.numel();
  const philox::RoundKeys keys = philox::detail::seed_keys(seed);
  dispatch_floating(out.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    const T* p = param.data<T>();
    parallel_units(n, kSampleCost, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        backend::ElementStream stream(keys, offset, static_cast<uint64_t>(i));
        o[i] = convert<T>(sample(stream, convert<double>(p[i]), backend::smallest_normal<T>()));
      }
    });
  });
}

}  // namespace

void CpuBackend::random_poisson(const Tensor& out, const Tensor& rates, uint64_t seed,
                                uint64_t offset) {
  sample_each(out, rates, seed, offset, "poisson",
              [](backend::ElementStream& stream, double rate, double) {
                return backend::sample_poisson(stream, rate);
              });
}

void CpuBackend::random_gamma(const Tensor& out, const Tensor& alpha, uint64_t seed,
                              uint64_t offset) {
  sample_each(out, alpha, seed, offset, "standard_gamma",
              [](backend::ElementStream& stream, double a, double tiny) {
                return std::max(backend::sample_gamma(stream, a), tiny);
              });
}

void CpuBackend::gamma_sample_grad(const Tensor& out, const Tensor& alpha, const Tensor& x) {
  dispatch_floating(out.dtype(), "standard_gamma_grad", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    const T* a = alpha.data<T>();
    const T* s = x.data<T>();
    parallel_units(out.numel(), kSampleCost, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        o[i] = convert<T>(backend::gamma_sample_grad(convert<double>(a[i]), convert<double>(s[i])));
    });
  });
}

}  // namespace rcuda::cpu
