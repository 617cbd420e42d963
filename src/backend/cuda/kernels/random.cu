// Philox random fills on the GPU (Note [Philox stream] in rcuda/core/philox.h). One thread computes
// one Philox block and writes the 4 (float32, float16, bfloat16) or 2 (float64, integers)
// consecutive elements it feeds with one vector store. Values follow the CPU backend
// (src/backend/cpu/random.cpp) formula for formula: uniform and integer streams are bit-identical;
// float64 normals agree to a few ulp, float normals to 5e-6 * std (Note [Box-Muller on the GPU]).
//
// Speed: float normals are bound by instruction issue as much as by writes. randn 1e4 x 1e4
// float32 on an H200: 0.227 ms (PyTorch 0.241 ms) with CUDA's logf/sqrtf/sincosf, about 230
// instructions per Philox block; 0.128 ms with the sine and cosine of the special-function unit
// and an exactly rounded log (115 per block); 0.104 ms now (about 85 per block: the log below,
// and Philox's round keys computed once on the host and read from the kernel's parameters).
// Writing the 400 MB alone takes 0.091-0.096 ms.
//
// Note [Box-Muller on the GPU]
// float32, float16 and bfloat16 normals: radius = sqrt(-2 log u1), the angle's sine and cosine
// from the special-function unit (sin.approx/cos.approx, what curand's Box-Muller and so
// PyTorch's randn use; absolute error below 2^-20.5, PTX ISA). The log must be accurate relative
// to its value, because u1 near 1 gives the small radii, where an absolute error of 1e-7 would be
// a 100% error. So -2 log u1 takes the special-function unit's log2 (absolute error 2^-22.6,
// PTX ISA) where |log u1| is large enough for that to be small relative to it (u1 <= 0.93), and
// the series -2 log(1 - w) = 2w + w^2 + 2/3 w^3 + 1/2 w^4 + 2/5 w^5 in w = 1 - u1 (exact there)
// below, whose truncation is below 3e-7 relative. Checked on an H200 for every one of the 2^24
// values u1 can take: the radius (after sqrt.approx) is within 5.5e-7 relative and 6.3e-7
// absolute of the double-precision sqrt(-2 log u1) (CUDA's exactly rounded logf gave 1.4e-7 and
// 4.8e-7). A normal thus differs from the exact Box-Muller of the same uniforms by at most
// 2^-20.5 * radius (radius <= 5.8: 4e-6) plus 7e-7, times std. The CPU backend computes exact
// Box-Muller, so float normals agree between backends to 5e-6 * std absolute (tests use 2e-5
// relative to max(1, |x|)), while uniform and integer streams stay bit-identical.
// float64 normals keep full precision on both backends (sincos_small below, fdlibm's scheme
// without the Payne-Hanek path for huge arguments, within 1.5 ulp of the correctly rounded
// result for theta in [0, 2 pi)). Products and sums that the CPU rounds separately are written
// with __fmul_rn/__fadd_rn where bit-identity matters (uniform_ with bounds), so that nvcc does
// not contract them into an FMA with a different rounding.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/cuda/kernels/launch_updatable.cuh"
#include "backend/dispatch.h"
#include "rcuda/core/philox.h"

namespace rcuda::cuda {
namespace {

namespace px = philox::detail;
using backend::convert;

// -2 log(u1) for u1 = k 2^-24, k in [1, 2^24]: Note [Box-Muller on the GPU].
__device__ __forceinline__ float minus_two_log(float u1) {
  float log2_u1;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(log2_u1) : "f"(u1));
  const float w = 1.0f - u1;  // exact wherever the series is used
  float p = fmaf(w, 0.4f, 0.5f);
  p = fmaf(w, p, 0.666666686534881591796875f);
  p = fmaf(w, p, 1.0f);
  p = fmaf(w, p, 2.0f);
  return w < 0.07f ? w * p : log2_u1 * -1.38629436111989061883f;  // -2 ln 2
}

// sin and cos of 0 <= theta < 2 pi in double: Note [Box-Muller on the GPU].
__device__ __forceinline__ void sincos_small(double theta, double* sine, double* cosine) {
  const double j = rint(theta * 0.63661977236758134308);
  const int q = static_cast<int>(j);
  double r = fma(j, -1.57079632673412561417e+00, theta);
  r = fma(j, -6.07710050630396597660e-11, r);
  r = fma(j, -2.02226624879595063154e-21, r);
  const double z = r * r;
  double ps = fma(1.58969099521155010221e-10, z, -2.50507602534068634195e-08);
  ps = fma(ps, z, 2.75573137070700676789e-06);
  ps = fma(ps, z, -1.98412698298579493134e-04);
  ps = fma(ps, z, 8.33333333332248946124e-03);
  ps = fma(ps, z, -1.66666666666666324348e-01);
  const double s = fma(ps * z, r, r);
  double pc = fma(-1.13596475577881948265e-11, z, 2.08757232129817482790e-09);
  pc = fma(pc, z, -2.75573143513906633035e-07);
  pc = fma(pc, z, 2.48015872894767294178e-05);
  pc = fma(pc, z, -1.38888888888741095749e-03);
  pc = fma(pc, z, 4.16666666666666019037e-02);
  pc = fma(pc, z, -0.5);
  const double c = fma(pc, z, 1.0);
  const double sv = (q & 1) ? c : s, cv = (q & 1) ? s : c;
  *sine = (q & 2) ? -sv : sv;
  *cosine = ((q + 1) & 2) ? -cv : cv;
}

// Draws fill values[0 .. PerBlock) from one Philox block. Each is a small value type passed to
// the kernel by value.

template <typename T>
struct UniformFloat {  // float32 and the half types: computed in float, as the CPU
  static constexpr int kPerBlock = 4;
  static constexpr bool kTwoPerIteration = false;
  float low, span;
  __device__ void operator()(const philox::Uint4& r, T (&v)[4]) const {
    const uint32_t lanes[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float u = static_cast<float>(lanes[k] >> 8) * px::kTwo24Inv;
      v[k] = convert<T>(__fadd_rn(low, __fmul_rn(span, u)));
    }
  }
};

struct UniformDouble {
  static constexpr int kPerBlock = 2;
  static constexpr bool kTwoPerIteration = false;
  double low, span;
  __device__ void operator()(const philox::Uint4& r, double (&v)[2]) const {
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const double u = static_cast<double>(px::pair64(r, k != 0) >> 11) * px::kTwo53Inv;
      v[k] = __dadd_rn(low, __dmul_rn(span, u));
    }
  }
};

template <typename T>
struct NormalFloat {  // Note [Box-Muller on the GPU]
  static constexpr int kPerBlock = 4;
  static constexpr bool kTwoPerIteration = std::is_same_v<T, float>;  // float16 would spill
  float mean, std;
  __device__ void operator()(const philox::Uint4& r, T (&v)[4]) const {
    const uint32_t a[2] = {r.x, r.z}, b[2] = {r.y, r.w};
#pragma unroll
    for (int pair = 0; pair < 2; ++pair) {
      const float u1 = static_cast<float>((a[pair] >> 8) + 1) * px::kTwo24Inv;  // (0, 1]
      float radius;  // sqrt.approx is within 1 ulp here and gives 0 for 0 (u1 = 1)
      asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(radius) : "f"(minus_two_log(u1)));
      const float theta = (px::kTwoPiF * px::kTwo24Inv) * static_cast<float>(b[pair] >> 8);
      float sine, cosine;
      __sincosf(theta, &sine, &cosine);
      const float scaled = std * radius;
      v[2 * pair] = convert<T>(fmaf(scaled, cosine, mean));
      v[2 * pair + 1] = convert<T>(fmaf(scaled, sine, mean));
    }
  }
};

struct NormalDouble {
  static constexpr int kPerBlock = 2;
  static constexpr bool kTwoPerIteration = false;
  double mean, std;
  __device__ void operator()(const philox::Uint4& r, double (&v)[2]) const {
    const double u1 = static_cast<double>((px::pair64(r, false) >> 11) + 1) * px::kTwo53Inv;
    const double u2 = static_cast<double>(px::pair64(r, true) >> 11) * px::kTwo53Inv;
    const double radius = sqrt(-2.0 * log(u1));
    double sine, cosine;
    sincos_small(__dmul_rn(px::kTwoPi, u2), &sine, &cosine);
    v[0] = __dadd_rn(mean, __dmul_rn(std, radius * cosine));
    v[1] = __dadd_rn(mean, __dmul_rn(std, radius * sine));
  }
};

template <typename T>
struct RandomInt {  // low + bits % range, as the CPU (philox.h explains the modulo)
  static constexpr int kPerBlock = 2;
  static constexpr bool kTwoPerIteration = false;
  int64_t low;
  uint64_t range;
  __device__ void operator()(const philox::Uint4& r, T (&v)[2]) const {
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int64_t x =
          static_cast<int64_t>(static_cast<uint64_t>(low) + px::pair64(r, k != 0) % range);
      if constexpr (std::is_integral_v<T>)
        v[k] = static_cast<T>(x);
      else
        v[k] = convert<T>(static_cast<double>(x));
    }
  }
};

// A whole Pack with a streaming (evict-first) store: a random fill writes each byte once and
// never reads it back, so it need not displace other data from L2.
template <typename T, int V>
__device__ __forceinline__ void store_streaming(Pack<T, V>* dst, const Pack<T, V>& p) {
  constexpr size_t kBytes = sizeof(Pack<T, V>);
  if constexpr (kBytes == 16) {
    __stcs(reinterpret_cast<uint4*>(dst), *reinterpret_cast<const uint4*>(&p));
  } else if constexpr (kBytes == 8) {
    __stcs(reinterpret_cast<uint2*>(dst), *reinterpret_cast<const uint2*>(&p));
  } else if constexpr (kBytes == 4) {
    __stcs(reinterpret_cast<unsigned*>(dst), *reinterpret_cast<const unsigned*>(&p));
  } else {
    *dst = p;
  }
}

// Thread t of the grid handles Philox blocks t, t + grid, ...; block b feeds elements
// [b * kPerBlock, (b + 1) * kPerBlock). `vector_store`: out is aligned for a whole Pack, so every
// complete block is one vector store; the incomplete last block (and every block of a misaligned
// output) is stored element by element. For float32 normals the vector loop draws two blocks per
// iteration, two independent chains for the scheduler (randn 1e4 x 1e4 on an H200: 1% faster,
// and 1% more from the streaming stores); the other draws would spill registers doing so.
template <typename T, typename Index, typename Draw>
__global__ void __launch_bounds__(kThreadsPerBlock, 8)  // <= 32 registers: full occupancy
    philox_fill_kernel(T* out, Index n, philox::RoundKeys keys, uint64_t offset, bool vector_store,
                       Draw draw) {
  constexpr int kPerBlock = Draw::kPerBlock;
  using P = Pack<T, kPerBlock>;
  const Index blocks = (n + (kPerBlock - 1)) / kPerBlock;
  const Index vector_blocks = vector_store ? n / kPerBlock : 0;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  Index b = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  P* packs = reinterpret_cast<P*>(out);
  // b + stride < vector_blocks, written so that it cannot wrap around Index.
  for (; Draw::kTwoPerIteration && b < vector_blocks && vector_blocks - b > stride;
       b += 2 * stride) {
    P p0, p1;
    draw(px::block(keys, offset, static_cast<uint64_t>(b)), p0.v);
    draw(px::block(keys, offset, static_cast<uint64_t>(b + stride)), p1.v);
    store_streaming(packs + b, p0);
    store_streaming(packs + b + stride, p1);
  }
  for (; b < vector_blocks; b += stride) {
    P p;
    draw(px::block(keys, offset, static_cast<uint64_t>(b)), p.v);
    store_streaming(packs + b, p);
  }
  for (; b < blocks; b += stride) {
    P p;
    draw(px::block(keys, offset, static_cast<uint64_t>(b)), p.v);
    const Index first = b * kPerBlock;
#pragma unroll
    for (int k = 0; k < kPerBlock; ++k)
      if (first + k < n) out[first + k] = p.v[k];
  }
}

template <typename T, typename Draw>
void philox_fill(const Tensor& out, uint64_t seed, uint64_t offset, Draw draw) {
  const int64_t n = out.numel();
  if (n == 0) return;
  RCUDA_CHECK(out.is_contiguous(), ValueError, "cuda random: the output must be contiguous");
  const int device = out.device().index;
  DeviceGuard guard(device);
  constexpr int kPerBlock = Draw::kPerBlock;
  T* data = out.data<T>();
  const bool vector_store = reinterpret_cast<uintptr_t>(data) % sizeof(Pack<T, kPerBlock>) == 0;
  const int64_t blocks = (n + kPerBlock - 1) / kPerBlock;
  // 16 blocks per SM: float normals are issue-bound, and the extra blocks even out the last
  // wave (randn 1e4 x 1e4 on an H200: 0.130 ms against 0.131 ms with 8).
  const int grid = blocks_for(blocks, device, kThreadsPerBlock, 16);
  cudaStream_t stream = current_stream(device);
  const philox::RoundKeys keys = px::seed_keys(seed);
  // 32-bit element indices (fewer instructions per block) whenever they cannot overflow.
  // Updatable: a graph replay gives the kernel its next offset (Note [Updatable launches]).
  if (n < (int64_t{1} << 31)) {
    launch_updatable(philox_fill_kernel<T, uint32_t, Draw>, grid, kThreadsPerBlock, 0, stream, data,
                     static_cast<uint32_t>(n), keys, offset, vector_store, draw);
  } else {
    launch_updatable(philox_fill_kernel<T, int64_t, Draw>, grid, kThreadsPerBlock, 0, stream, data,
                     n, keys, offset, vector_store, draw);
  }
}

template <typename T>
void uniform_typed(const Tensor& out, uint64_t seed, uint64_t offset, double low, double high) {
  if constexpr (std::is_same_v<T, double>) {
    philox_fill<double>(out, seed, offset, UniformDouble{low, high - low});
  } else {
    philox_fill<T>(out, seed, offset,
                   UniformFloat<T>{static_cast<float>(low), static_cast<float>(high - low)});
  }
}

template <typename T>
void normal_typed(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double std) {
  if constexpr (std::is_same_v<T, double>) {
    philox_fill<double>(out, seed, offset, NormalDouble{mean, std});
  } else {
    philox_fill<T>(out, seed, offset,
                   NormalFloat<T>{static_cast<float>(mean), static_cast<float>(std)});
  }
}

}  // namespace

void CudaBackend::random_uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low,
                                 double high) {
  backend::dispatch_floating(out.dtype(), "rand", [&](auto tag) {
    uniform_typed<decltype(tag)>(out, seed, offset, low, high);
  });
}

void CudaBackend::random_normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean,
                                double std) {
  backend::dispatch_floating(out.dtype(), "randn", [&](auto tag) {
    normal_typed<decltype(tag)>(out, seed, offset, mean, std);
  });
}

void CudaBackend::random_int(const Tensor& out, uint64_t seed, uint64_t offset, int64_t low,
                             int64_t high) {
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  backend::dispatch_all(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    philox_fill<T>(out, seed, offset, RandomInt<T>{low, range});
  });
}

}  // namespace rcuda::cuda
