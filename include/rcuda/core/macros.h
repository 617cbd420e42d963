// Macros shared by host-only and CUDA translation units.
#pragma once

// RCUDA_HOST_DEVICE marks small inline functions (half conversion, Philox) that the CPU
// backend and the CUDA kernels share, so both compute bit-identical results.
#if defined(__CUDACC__)
#define RCUDA_HOST_DEVICE __host__ __device__
#else
#define RCUDA_HOST_DEVICE
#endif

// RCUDA_ALWAYS_INLINE: a host function whose callers pass compile-time constants that fold its
// body away (the elementwise formulas' switch over the op): GCC otherwise keeps a large switch
// out of line and calls it per element. CUDA code keeps nvcc's own choice.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define RCUDA_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define RCUDA_ALWAYS_INLINE inline
#endif

#if defined(__GNUC__)
#define RCUDA_LIKELY(x) __builtin_expect(!!(x), 1)
#define RCUDA_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RCUDA_NOINLINE __attribute__((noinline))
#else
#define RCUDA_LIKELY(x) (x)
#define RCUDA_UNLIKELY(x) (x)
#define RCUDA_NOINLINE
#endif
