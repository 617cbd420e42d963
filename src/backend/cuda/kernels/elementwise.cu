// Elementwise primitives on the GPU: unary and binary math, where, fill, ranges. Semantics match
// the CPU backend's (src/backend/cpu/elementwise.cpp) op for op, including NaN handling,
// Python-style remainder and half-to-even rounding; the unary formulas are the ones both
// backends share (backend/unary_math.h, Note [Unary formulas]).
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/dispatch.h"
#include "backend/indexing.h"
#include "backend/scalar_math.h"
#include "backend/unary_math.h"

namespace rcuda::cuda {
namespace {

using backend::float_remainder;
using backend::integer_pow;
using backend::scalar_as;

using backend::ComputeType;
using backend::convert;
using backend::dispatch_all;

template <typename C>
__device__ C integer_remainder(C a, C b) {
  // Division by zero is undefined on the GPU; the result is 0 rather than a trap. (The CPU
  // backend throws, since it can see the data; checking here would cost a device sync.)
  return b == 0 ? C(0) : backend::integer_remainder_nonzero(a, b);
}

template <typename C>
__device__ C binary_arith(BinaryOp op, C x, C y) {
  switch (op) {
    case BinaryOp::Add:
      return backend::wrapping_add(x, y);
    case BinaryOp::Sub:
      return backend::wrapping_sub(x, y);
    case BinaryOp::Mul:
      return backend::wrapping_mul(x, y);
    case BinaryOp::Maximum:
      return (x != x || x > y) ? x : y;
    case BinaryOp::Minimum:
      return (x != x || x < y) ? x : y;
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<C>) {
    switch (op) {
      case BinaryOp::Div:
        return x / y;
      case BinaryOp::Remainder:
        return float_remainder(x, y);
      case BinaryOp::Pow:
        return pow(x, y);
      case BinaryOp::Atan2:
        return atan2(x, y);
      default:
        return x;
    }
  } else if constexpr (!std::is_same_v<C, bool>) {
    switch (op) {
      case BinaryOp::Remainder:
        return integer_remainder(x, y);
      case BinaryOp::Pow:
        return integer_pow(x, y);
      default:
        return x;
    }
  } else {
    return x;
  }
}

template <typename C>
__device__ bool binary_compare(BinaryOp op, C x, C y) {
  switch (op) {
    case BinaryOp::Eq:
      return x == y;
    case BinaryOp::Ne:
      return x != y;
    case BinaryOp::Lt:
      return x < y;
    case BinaryOp::Le:
      return x <= y;
    case BinaryOp::Gt:
      return x > y;
    case BinaryOp::Ge:
      return x >= y;
    case BinaryOp::LogicalAnd:
      return x != C(0) && y != C(0);
    case BinaryOp::LogicalOr:
      return x != C(0) || y != C(0);
    default:
      return (x != C(0)) != (y != C(0));  // LogicalXor
  }
}

template <typename T, typename F>
__global__ void index_map_kernel(T* out, int64_t n, F f) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = f(i);
}

template <typename T, typename F>
void launch_index_map(const Tensor& out, F f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const int device = out.device().index;
  DeviceGuard guard(device);
  static const KernelLauncher launcher(&index_map_kernel<T, F>);
  launcher.launch(device, blocks_for(n, device), kThreadsPerBlock, 0, current_stream(device),
                  out.data<T>(), n, f);
}

// Each primitive's kernels are defined in a function template per dtype: nvcc does not allow
// a __device__ lambda inside a generic (auto) lambda such as the dispatch's.
template <typename T>
void logical_not_typed(const Tensor& out, const Tensor& in) {
  launch_strided<2>({out, in}, [] __device__(char** p) {
    *reinterpret_cast<bool*>(p[0]) = convert<float>(*reinterpret_cast<const T*>(p[1])) == 0.0f;
  });
}

template <typename T>
void unary_typed(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args) {
  using C = ComputeType<T>;
  launch_map<T, T, 1>(out, {in}, [op, args] __device__(T x) {
    if constexpr (std::is_floating_point_v<C>) {
      return convert<T>(backend::unary_float<C>(op, convert<C>(x), args));
    } else {
      return backend::unary_integral<C>(op, x, args);
    }
  });
}

template <typename T>
void binary_typed(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  using C = ComputeType<T>;
  if (is_comparison_or_logical(op)) {
    launch_map<bool, T, 2>(out, {a, b}, [op] __device__(T x, T y) {
      return binary_compare<C>(op, convert<C>(x), convert<C>(y));
    });
  } else {
    launch_map<T, T, 2>(out, {a, b}, [op] __device__(T x, T y) {
      return convert<T>(binary_arith<C>(op, convert<C>(x), convert<C>(y)));
    });
  }
}

// binary_typed with the other operand a number of the same dtype, passed by value.
template <typename T>
void binary_number_typed(BinaryOp op, const Tensor& out, const Tensor& a, T number,
                         bool number_first) {
  using C = ComputeType<T>;
  if (is_comparison_or_logical(op)) {
    launch_map<bool, T, 1>(out, {a}, [op, number, number_first] __device__(T x) {
      const C u = convert<C>(x), v = convert<C>(number);
      return number_first ? binary_compare<C>(op, v, u) : binary_compare<C>(op, u, v);
    });
  } else {
    launch_map<T, T, 1>(out, {a}, [op, number, number_first] __device__(T x) {
      const C u = convert<C>(x), v = convert<C>(number);
      return convert<T>(number_first ? binary_arith<C>(op, v, u) : binary_arith<C>(op, u, v));
    });
  }
}

template <typename T>
void where_typed(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  launch_strided<4>({out, cond, a, b}, [] __device__(char** p) {
    const bool c = *reinterpret_cast<const bool*>(p[1]);
    *reinterpret_cast<T*>(p[0]) = *reinterpret_cast<const T*>(p[c ? 2 : 3]);
  });
}

template <typename T>
void fill_bits(const Tensor& out, T v) {
  if (out.is_contiguous()) {
    launch_index_map<T>(out, [v] __device__(int64_t) { return v; });
  } else {
    launch_strided<1>({out}, [v] __device__(char** p) { *reinterpret_cast<T*>(p[0]) = v; });
  }
}

template <typename T>
void arange_typed(const Tensor& out, const Scalar& start, const Scalar& step) {
  if constexpr (std::is_integral_v<T>) {
    const int64_t s0 = start.to_int(), ds = step.to_int();
    launch_index_map<T>(out, [=] __device__(int64_t i) { return static_cast<T>(s0 + i * ds); });
  } else {
    const double s0 = start.to_double(), ds = step.to_double();
    launch_index_map<T>(
        out, [=] __device__(int64_t i) { return convert<T>(s0 + static_cast<double>(i) * ds); });
  }
}

template <typename T>
void linspace_typed(const Tensor& out, double start, double end) {
  const int64_t n = out.numel();
  const double step = n > 1 ? (end - start) / static_cast<double>(n - 1) : 0.0;
  const int64_t half = n == 1 ? 1 : n / 2;
  // Like torch: the first half steps from start, the second from end, so both ends are exact.
  launch_index_map<T>(out, [=] __device__(int64_t i) {
    const double v = i < half ? start + step * static_cast<double>(i)
                              : end - step * static_cast<double>(n - 1 - i);
    return convert<T>(v);
  });
}

}  // namespace

void CudaBackend::unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args) {
  if (op == UnaryOp::LogicalNot) {
    dispatch_all(in.dtype(), [&](auto tag) { logical_not_typed<decltype(tag)>(out, in); });
  } else {
    dispatch_all(in.dtype(), [&](auto tag) { unary_typed<decltype(tag)>(op, out, in, args); });
  }
}

void CudaBackend::binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_all(a.dtype(), [&](auto tag) { binary_typed<decltype(tag)>(op, out, a, b); });
}

void CudaBackend::binary_number(BinaryOp op, const Tensor& out, const Tensor& a,
                                const Scalar& number, bool number_first) {
  dispatch_all(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    binary_number_typed<T>(op, out, a, scalar_as<T>(number), number_first);
  });
}

// where and fill move bits, so they run one kernel per element width, not per dtype (build time).
void CudaBackend::where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  dispatch_all(out.dtype(), [](auto) {});  // refuses complex, as the ops above
  backend::dispatch_width(out.element_size(),
                          [&](auto unit) { where_typed<decltype(unit)>(out, cond, a, b); });
}

void CudaBackend::fill(const Tensor& out, const Scalar& value) {
  backend::dispatch_with_float8(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = scalar_as<T>(value);
    backend::dispatch_width(sizeof(T), [&](auto unit) {
      using U = decltype(unit);
      U bits;
      std::memcpy(&bits, &v, sizeof(U));
      fill_bits<U>(out, bits);
    });
  });
}

void CudaBackend::arange(const Tensor& out, const Scalar& start, const Scalar& step) {
  dispatch_all(out.dtype(), [&](auto tag) { arange_typed<decltype(tag)>(out, start, step); });
}

void CudaBackend::linspace(const Tensor& out, double start, double end) {
  dispatch_all(out.dtype(), [&](auto tag) { linspace_typed<decltype(tag)>(out, start, end); });
}

}  // namespace rcuda::cuda
