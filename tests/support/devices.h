// Test support for the CUDA backend: every CUDA test runs an op on the GPU and on the CPU
// backend (the reference) over the same fresh random inputs, and compares.
#pragma once

#include <gtest/gtest.h>

#include "rcuda/backend/cuda.h"
#include "support/reference.h"

namespace rcuda::test {

inline const Device kCuda(DeviceType::CUDA, 0);
inline const Device kCpu(DeviceType::CPU);

// Skips (reported as skipped, not passed) where there is no usable GPU, saying why.
#define RCUDA_REQUIRE_CUDA()                                                     \
  do {                                                                           \
    if (::rcuda::cuda::device_count() == 0)                                      \
      GTEST_SKIP() << "no CUDA device: " << ::rcuda::cuda::unavailable_reason(); \
  } while (0)

inline Tensor on_cuda(const Tensor& t) { return to(t, kCuda); }
// Values of a tensor on any device, read back through the host.
inline std::vector<double> values(const Tensor& t) {
  return to_doubles(t.device().is_cpu() ? t : to(t, kCpu));
}

// Relative tolerance for the same op computed by two backends (different summation orders and
// libm implementations): a few units in the last place of the dtype.
inline double backend_tolerance(DType dtype) {
  // float32 gets 1e-5 rather than tolerance()'s 2e-6: summation orders differ between backends.
  return dtype == DType::Float32 ? 1e-5 : tolerance(dtype);
}

// float32 normals of the two backends: the GPU takes the Box-Muller angle's sine and cosine and
// most of the log from the special-function unit, within 5e-6 of the CPU's exact ones (Note
// [Box-Muller on the GPU] in src/backend/cuda/kernels/random.cu), times std up to 3 in the tests.
// Relative to max(1, |x|) like every all_close tolerance.
inline constexpr double kNormalFloatTolerance = 2e-5;

// Tolerance for normals of `dtype` drawn by the two backends.
inline double normal_tolerance(DType dtype) {
  return dtype == DType::Float32   ? kNormalFloatTolerance
         : dtype == DType::Float64 ? 1e-13
                                   : backend_tolerance(dtype);
}

}  // namespace rcuda::test
