// Elementwise primitives: copy (with dtype conversion), fill, ranges, unary and binary math,
// where. All run on loops.h's strided engine.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "backend/convert_any.h"
#include "backend/indexing.h"
#include "backend/scalar_math.h"
#include "backend/unary_math.h"
#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {
namespace {

using backend::float_remainder;
using backend::integer_pow;
using backend::scalar_as;

template <typename T>
T integer_remainder(T a, T b) {
  if (b == 0) throw ValueError("remainder: integer division by zero");
  return backend::integer_remainder_nonzero(a, b);
}

// The formulas live in backend/unary_math.h (Note [Unary formulas]). Each (op, floating dtype)
// pair gets its own loop, with the op a compile-time constant, so that the formula's switch
// folds away and the contiguous loop vectorises; a table indexed by the op picks the loop. The
// integer dtypes, for which most ops are refused anyway, share one loop per dtype that switches
// on the op: a loop per op for them was 400 loops of which only a few could ever run, and the
// larger part of this file's build time.
template <UnaryOp Op, typename T>
void unary_fixed(const Tensor& out, const Tensor& in, const UnaryArgs& args) {
  using C = ComputeType<T>;
  if constexpr (std::is_floating_point_v<C>) {
    unary_loop<T, T>(out, in, [args](T v) {
      return convert<T>(backend::unary_float<C>(Op, convert<C>(v), args));
    });
  } else {
    unary_loop<T, T>(out, in, [args](T v) { return backend::unary_integral<C>(Op, v, args); });
  }
}

template <typename T, size_t... Ops>
void unary_table(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args,
                 std::index_sequence<Ops...>) {
  using Loop = void (*)(const Tensor&, const Tensor&, const UnaryArgs&);
  static constexpr Loop kLoops[] = {&unary_fixed<static_cast<UnaryOp>(Ops), T>...};
  kLoops[static_cast<size_t>(op)](out, in, args);
}

template <typename T>
void unary_typed(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args) {
  if constexpr (!kIsFloating<T>)
    RCUDA_CHECK(backend::unary_defined_for_integers(op, std::is_same_v<T, bool>), DTypeError,
                "unary: op needs a floating dtype, got ", dtype_name(in.dtype()));
  if constexpr (kIsFloating<T>) {
    unary_table<T>(op, out, in, args, std::make_index_sequence<backend::kUnaryOpCount>{});
  } else {
    unary_loop<T, T>(
        out, in, [op, args](T v) { return backend::unary_integral<ComputeType<T>>(op, v, args); });
  }
}

template <typename T>
void binary_typed(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  using C = ComputeType<T>;
  auto arith = [&](auto f) {
    binary_loop<T, T>(out, a, b,
                      [f](T x, T y) { return convert<T>(f(convert<C>(x), convert<C>(y))); });
  };
  auto compare = [&](auto f) {
    binary_loop<bool, T>(out, a, b, [f](T x, T y) { return f(convert<C>(x), convert<C>(y)); });
  };
  switch (op) {
    case BinaryOp::Add:
      return arith([](C x, C y) { return backend::wrapping_add(x, y); });
    case BinaryOp::Sub:
      return arith([](C x, C y) { return backend::wrapping_sub(x, y); });
    case BinaryOp::Mul:
      return arith([](C x, C y) { return backend::wrapping_mul(x, y); });
    case BinaryOp::Div:
      if constexpr (std::is_floating_point_v<C>) return arith([](C x, C y) { return x / y; });
      break;
    case BinaryOp::Remainder:
      if constexpr (std::is_floating_point_v<C>)
        return arith(float_remainder<C>);
      else if constexpr (!std::is_same_v<C, bool>)
        return arith(integer_remainder<C>);
      break;
    case BinaryOp::Pow:
      if constexpr (std::is_floating_point_v<C>) {
        return arith([](C x, C y) { return std::pow(x, y); });
      } else if constexpr (!std::is_same_v<C, bool>) {
        return arith(integer_pow<C>);
      }
      break;
    case BinaryOp::Maximum:
      return arith([](C x, C y) { return (x != x || x > y) ? x : y; });  // NaN propagates
    case BinaryOp::Minimum:
      return arith([](C x, C y) { return (x != x || x < y) ? x : y; });
    case BinaryOp::Atan2:
      if constexpr (std::is_floating_point_v<C>)
        return arith([](C x, C y) { return std::atan2(x, y); });
      break;
    case BinaryOp::Eq:
      return compare([](C x, C y) { return x == y; });
    case BinaryOp::Ne:
      return compare([](C x, C y) { return x != y; });
    case BinaryOp::Lt:
      return compare([](C x, C y) { return x < y; });
    case BinaryOp::Le:
      return compare([](C x, C y) { return x <= y; });
    case BinaryOp::Gt:
      return compare([](C x, C y) { return x > y; });
    case BinaryOp::Ge:
      return compare([](C x, C y) { return x >= y; });
    case BinaryOp::LogicalAnd:
      return compare([](C x, C y) { return x != C(0) && y != C(0); });
    case BinaryOp::LogicalOr:
      return compare([](C x, C y) { return x != C(0) || y != C(0); });
    case BinaryOp::LogicalXor:
      return compare([](C x, C y) { return (x != C(0)) != (y != C(0)); });
  }
  throw DTypeError(std::string("binary: op not defined for dtype ") + dtype_name(a.dtype()));
}

}  // namespace

// Note [Conversions: typed pairs and one generic loop] (backend/convert_any.h).
void CpuBackend::copy(const Tensor& dst, const Tensor& src) {
  if (dst.dtype() == src.dtype() && dst.dtype() != DType::Complex64 &&
      dst.dtype() != DType::Complex128) {
    backend::dispatch_width(dst.element_size(), [&](auto unit) {
      using U = decltype(unit);
      unary_loop<U, U>(dst, src, [](U v) { return v; });
    });
    return;
  }
  const bool typed =
      backend::dispatch_hot_conversion(dst.dtype(), src.dtype(), [&](auto d, auto s) {
        using D = decltype(d);
        using S = decltype(s);
        unary_loop<D, S>(dst, src, [](S v) { return convert<D>(v); });
      });
  if (typed) return;
  backend::check_convertible(dst.dtype(), src.dtype());
  const DType to = dst.dtype(), from = src.dtype();
  for_each_row<2>({dst, src}, [to, from](const std::array<char*, 2>& p,
                                         const std::array<int64_t, 2>& s, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      backend::store_any(p[0] + i * s[0], to, backend::load_any(p[1] + i * s[1], from));
  });
}

void CpuBackend::fill(const Tensor& out, const Scalar& value) {
  dispatch_with_float8(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = scalar_as<T>(value);
    for_each_row<1>({out},
                    [v](const std::array<char*, 1>& p, const std::array<int64_t, 1>& s, int64_t n) {
                      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
                    });
  });
}

void CpuBackend::arange(const Tensor& out, const Scalar& start, const Scalar& step) {
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    const int64_t n = out.numel();
    if constexpr (std::is_integral_v<T>) {
      const int64_t s0 = start.to_int(), ds = step.to_int();
      parallel_range(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = static_cast<T>(s0 + i * ds);
      });
    } else {
      const double s0 = start.to_double(), ds = step.to_double();
      parallel_range(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = convert<T>(s0 + static_cast<double>(i) * ds);
      });
    }
  });
}

void CpuBackend::linspace(const Tensor& out, double start, double end) {
  const int64_t n = out.numel();
  const double step = n > 1 ? (end - start) / static_cast<double>(n - 1) : 0.0;
  // torch fills the first half from start and the second from end, so both ends are exact;
  // a single point is the start.
  const int64_t half = n == 1 ? 1 : n / 2;
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const double v = i < half ? start + step * static_cast<double>(i)
                                : end - step * static_cast<double>(n - 1 - i);
      o[i] = convert<T>(v);
    }
  });
}

void CpuBackend::unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args) {
  if (op == UnaryOp::LogicalNot) {
    dispatch_all(in.dtype(), [&](auto tag) {
      using T = decltype(tag);
      unary_loop<bool, T>(out, in, [](T v) { return convert<float>(v) == 0.0f; });
    });
    return;
  }
  dispatch_all(in.dtype(), [&](auto tag) { unary_typed<decltype(tag)>(op, out, in, args); });
}

void CpuBackend::binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_all(a.dtype(), [&](auto tag) { binary_typed<decltype(tag)>(op, out, a, b); });
}

// The loops read a broadcast operand (stride 0) as cheaply as a number, so the number becomes
// one: a tensor of a's shape and zero strides over the number's bytes on this frame, which the
// loops read before this returns. No allocation of its own, no fill.
void CpuBackend::binary_number(BinaryOp op, const Tensor& out, const Tensor& a,
                               const Scalar& number, bool number_first) {
  alignas(16) unsigned char bytes[16];
  dispatch_all(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    static_assert(sizeof(T) <= sizeof(bytes));
    const T v = scalar_as<T>(number);
    std::memcpy(bytes, &v, sizeof(T));
  });
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(bytes, a.element_size(), a.device(), nullptr);
  impl->shape = a.shape();
  impl->strides.assign(a.shape().size(), 0);
  impl->dtype = a.dtype();
  const Tensor value(std::move(impl));
  if (number_first)
    binary(op, out, value, a);
  else
    binary(op, out, a, value);
}

void CpuBackend::where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for_each_row<4>({out, cond, a, b},
                    [](const std::array<char*, 4>& p, const std::array<int64_t, 4>& s, int64_t n) {
                      for (int64_t i = 0; i < n; ++i) {
                        const bool c = *reinterpret_cast<const bool*>(p[1] + i * s[1]);
                        *reinterpret_cast<T*>(p[0] + i * s[0]) =
                            *reinterpret_cast<const T*>(p[c ? 2 : 3] + i * s[c ? 2 : 3]);
                      }
                    });
  });
}

}  // namespace rcuda::cpu
