// Philox random fills on the GPU (Note [Philox stream] in rcuda/core/philox.h). One thread computes
// one Philox block and writes the 4 (float32, float16, bfloat16) or 2 (float64, integers)
// consecutive elements it feeds with one vector store. Values follow the CPU backend
// (src/backend/cpu/random.cpp) formula for formula: uniform and integer streams are bit-identical,
// normals agree to a few ulp.
//
// Speed: normals are bound by instruction issue, not by writes. randn 1e4 x 1e4 float32 took
// 0.227 ms on an H200 (1.76 TB/s; PyTorch 0.241 ms) with CUDA's logf/sqrtf/sincosf, about 230
// instructions per Philox block: 10 Philox rounds, two logs, two square roots, two sine-cosine
// pairs. The domain-limited log, sqrt and sincos below cut that to about 185 with the same results.
//
// Note [Box-Muller on the GPU]
// The angle is the CPU's theta = float(2 pi) * u2 (double: 2 pi * u2). sincospif(2 * u2) would skip
// the rounding of theta, but that rounding is part of the stream: the two differ by up to
// 3.8e-7 * radius, which near the zeros of cos and sin is millions of ulp of the result (checked
// on the host over all 2^24 values of u2), so the exact formula stays. The sine and cosine come
// from sincos_small below instead of sincosf/sincos: those carry a Payne-Hanek path for huge
// arguments whose local array costs a 32-40 byte stack frame, useless for theta in [0, 2 pi).
// sincos_small is CUDA's own scheme (3-part Cody-Waite reduction by pi/2, minimax polynomials:
// CUDA's for float, fdlibm's for double); emulated on the host with fma it is within 1.5 ulp of
// the correctly rounded sin/cos for all 2^24 float thetas and 2e7 random double ones, so GPU and
// CPU (glibc, libmvec within 4 ulp) agree to a few ulp. Products and sums that the CPU rounds
// separately are written with __fmul_rn/__fadd_rn so that nvcc does not contract them into an FMA
// with a different rounding (that would break bit-identity of uniform_ with bounds).
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/dispatch.h"
#include "rcuda/core/philox.h"

namespace rcuda::cuda {
namespace {

namespace px = philox::detail;
using backend::convert;

// logf of a normal, finite, positive x (u1 is in [2^-24, 1]): CUDA's own logf (the same
// operations, hence the same bits) without its cases for denormals, zero and infinity, which are
// a quarter of its instructions. Note [Box-Muller on the GPU].
__device__ __forceinline__ float log_normal_positive(float x) {
  const int bits = __float_as_int(x);
  const int exponent_bits = (bits - 0x3f2aaaab) & static_cast<int>(0xff800000u);
  const float f = __int_as_float(bits - exponent_bits) - 1.0f;  // mantissa in [2/3, 4/3), minus 1
  float p = fmaf(f, __int_as_float(static_cast<int>(0xbe055027u)), 0.14084610342979431152f);
  p = fmaf(f, p, -0.12148627638816833496f);
  p = fmaf(f, p, 0.13980610668659210205f);
  p = fmaf(f, p, -0.16684235632419586182f);
  p = fmaf(f, p, 0.20012299716472625732f);
  p = fmaf(f, p, -0.24999669194221496582f);
  p = fmaf(f, p, 0.33333182334899902344f);
  p = fmaf(f, p, -0.5f);
  const float mantissa_log = fmaf(f, f * p, f);
  const float exponent = static_cast<float>(exponent_bits) * 1.1920928955078125e-07f;  // 2^-23
  return fmaf(exponent, 0.69314718246459960938f, mantissa_log);
}

// sqrtf of 0 or a normal positive t: the fast path of CUDA's correctly rounded sqrtf (one
// Newton step on rsqrt), without its branch to the slow path for denormals and infinities.
__device__ __forceinline__ float sqrt_normal_or_zero(float t) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(t));
  const float s = t * y, half_y = 0.5f * y;
  const float r = fmaf(-s, s, t);
  return t == 0.0f ? 0.0f : fmaf(r, half_y, s);
}

// sin and cos of 0 <= theta < 2 pi: Note [Box-Muller on the GPU].
__device__ __forceinline__ void sincos_small(float theta, float* sine, float* cosine) {
  // The quadrant j = rint(theta * 2 / pi), 0 to 4, by adding 1.5 * 2^23: the sum's low mantissa
  // bits are j (no conversion instructions, which run at 1/8 of the FMA rate).
  const float shifted = fmaf(theta, 0.636619772f, 12582912.0f);
  const int q = static_cast<int>(__float_as_uint(shifted));
  const float j = shifted - 12582912.0f;
  float r = fmaf(j, -1.57079601e+00f, theta);
  r = fmaf(j, -3.13916473e-07f, r);
  r = fmaf(j, -5.39030253e-15f, r);
  const float z = r * r;
  float ps = fmaf(-1.95152959e-4f, z, 8.33216087e-3f);
  ps = fmaf(ps, z, -1.66666546e-1f);
  const float s = fmaf(ps * z, r, r);
  float pc = fmaf(2.44331571e-5f, z, -1.38873163e-3f);
  pc = fmaf(pc, z, 4.16666457e-2f);
  pc = fmaf(pc, z, -0.5f);
  const float c = fmaf(pc, z, 1.0f);
  const float sv = (q & 1) ? c : s, cv = (q & 1) ? s : c;
  *sine = (q & 2) ? -sv : sv;
  *cosine = ((q + 1) & 2) ? -cv : cv;
}

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
  float mean, std;
  __device__ void operator()(const philox::Uint4& r, T (&v)[4]) const {
    const uint32_t a[2] = {r.x, r.z}, b[2] = {r.y, r.w};
#pragma unroll
    for (int pair = 0; pair < 2; ++pair) {
      const float u1 = static_cast<float>((a[pair] >> 8) + 1) * px::kTwo24Inv;  // (0, 1]
      const float radius = sqrt_normal_or_zero(-2.0f * log_normal_positive(u1));
      // theta = float(2 pi) * u2 with u2 = (b >> 8) * 2^-24 exact: one rounding either way.
      const float theta = __fmul_rn(px::kTwoPiF * px::kTwo24Inv, static_cast<float>(b[pair] >> 8));
      float sine, cosine;
      sincos_small(theta, &sine, &cosine);
      v[2 * pair] = convert<T>(__fadd_rn(mean, __fmul_rn(std, radius * cosine)));
      v[2 * pair + 1] = convert<T>(__fadd_rn(mean, __fmul_rn(std, radius * sine)));
    }
  }
};

struct NormalDouble {
  static constexpr int kPerBlock = 2;
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

// Thread t of the grid handles Philox blocks t, t + grid, ...; block b feeds elements
// [b * kPerBlock, (b + 1) * kPerBlock). `vector_store`: out is aligned for a whole Pack.
template <typename T, typename Index, typename Draw>
__global__ void __launch_bounds__(kThreadsPerBlock)
    philox_fill_kernel(T* out, Index n, uint64_t seed, uint64_t offset, bool vector_store,
                       Draw draw) {
  constexpr int kPerBlock = Draw::kPerBlock;
  const Index blocks = (n + (kPerBlock - 1)) / kPerBlock;
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index b = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks;
       b += stride) {
    Pack<T, kPerBlock> p;
    draw(px::block(seed, offset, static_cast<uint64_t>(b)), p.v);
    const Index first = b * kPerBlock;
    if (vector_store && n - first >= kPerBlock) {
      reinterpret_cast<Pack<T, kPerBlock>*>(out)[b] = p;
    } else {
#pragma unroll
      for (int k = 0; k < kPerBlock; ++k)
        if (first + k < n) out[first + k] = p.v[k];
    }
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
  const int grid = blocks_for(blocks, device);
  cudaStream_t stream = current_stream(device);
  // 32-bit element indices (fewer instructions per block) whenever they cannot overflow.
  if (n < (int64_t{1} << 31)) {
    philox_fill_kernel<T, uint32_t, Draw><<<grid, kThreadsPerBlock, 0, stream>>>(
        data, static_cast<uint32_t>(n), seed, offset, vector_store, draw);
  } else {
    philox_fill_kernel<T, int64_t, Draw>
        <<<grid, kThreadsPerBlock, 0, stream>>>(data, n, seed, offset, vector_store, draw);
  }
  RCUDA_CUDA_CHECK_LAUNCH();
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
