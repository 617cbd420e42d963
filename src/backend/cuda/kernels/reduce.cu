// Reductions on the GPU: reduce (sum, prod, max, min, all, any, norm) and var, through the
// engine in reduce.cuh (Note [CUDA reduction strategy]). Semantics match the CPU backend
// (src/backend/cpu/reduce.cpp): NaN wins max/min and the inf-norm, integer sums and products
// wrap as int64, an empty sum is 0, an empty product 1 and an empty max -inf.
#include <cuda_runtime.h>

#include <cmath>
#include <limits>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/reduce.cuh"

namespace rcuda::cuda {
namespace {

using backend::ComputeType;
using backend::convert;
using reduction::GpuAccumulateType;
using reduction::is_nan;
using reduction::Layout;
using reduction::run_reduction;

template <typename T, bool kIsProduct>
struct SumProdOp {
  using Acc = GpuAccumulateType<T>;
  T* out;
  __device__ Acc identity() const { return Acc(kIsProduct ? 1 : 0); }
  __device__ Acc reduce(Acc acc, T x, int64_t) const { return combine(acc, convert<Acc>(x)); }
  __device__ Acc combine(Acc a, Acc b) const { return kIsProduct ? a * b : a + b; }
  __device__ void store(Acc acc, int64_t offset, int64_t) const {
    if constexpr (std::is_same_v<Acc, uint64_t>)
      out[offset] = convert<T>(static_cast<int64_t>(acc));  // wraps as int64, as the CPU
    else
      out[offset] = convert<T>(acc);
  }
};

template <typename T, bool kIsMax>
struct ExtremeOp {
  using Acc = ComputeType<T>;
  T* out;
  __device__ Acc identity() const {
    if constexpr (std::is_floating_point_v<Acc>)
      return kIsMax ? -INFINITY : INFINITY;
    else
      return kIsMax ? std::numeric_limits<Acc>::lowest() : std::numeric_limits<Acc>::max();
  }
  __device__ Acc reduce(Acc acc, T x, int64_t) const { return combine(acc, convert<Acc>(x)); }
  // NaN propagates from either side.
  __device__ Acc combine(Acc a, Acc b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return (kIsMax ? b > a : b < a) ? b : a;
  }
  __device__ void store(Acc acc, int64_t offset, int64_t) const { out[offset] = convert<T>(acc); }
};

// all / any: an int flag (the half types compare through float, so -0 and +0 are zero).
template <typename T, bool kIsAll>
struct TruthOp {
  using Acc = int;
  bool* out;
  __device__ Acc identity() const { return kIsAll ? 1 : 0; }
  __device__ Acc reduce(Acc acc, T x, int64_t) const {
    const bool nonzero = convert<ComputeType<T>>(x) != ComputeType<T>(0);
    return combine(acc, nonzero ? 1 : 0);
  }
  __device__ Acc combine(Acc a, Acc b) const { return kIsAll ? (a & b) : (a | b); }
  __device__ void store(Acc acc, int64_t offset, int64_t) const { out[offset] = acc != 0; }
};

enum class NormKind { Inf, Zero, One, Two, General };

template <typename T, NormKind kKind>
struct NormOp {
  using Acc = GpuAccumulateType<T>;
  T* out;
  Acc p;
  __device__ Acc identity() const { return Acc(0); }
  __device__ Acc reduce(Acc acc, T x, int64_t) const {
    const Acc v = convert<Acc>(x);
    switch (kKind) {
      case NormKind::Inf:
        return combine(acc, fabs(v));
      case NormKind::Zero:
        return acc + (v != Acc(0) ? Acc(1) : Acc(0));
      case NormKind::One:
        return acc + fabs(v);
      case NormKind::Two:
        return acc + v * v;
      default:
        return acc + pow(fabs(v), p);
    }
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if constexpr (kKind == NormKind::Inf) {
      if (is_nan(a)) return a;  // NaN wins, then the larger
      if (is_nan(b)) return b;
      return b > a ? b : a;
    } else {
      return a + b;
    }
  }
  __device__ void store(Acc acc, int64_t offset, int64_t) const {
    if constexpr (kKind == NormKind::Two)
      acc = sqrt(acc);
    else if constexpr (kKind == NormKind::General)
      acc = pow(acc, Acc(1) / p);
    out[offset] = convert<T>(acc);
  }
};

// Variance by Welford's update per thread and Chan's combination of partials: one read of the
// input, no cancellation from a large mean. float32 accumulates in double, as on the CPU: with a
// float mean, a variance far below mean^2 keeps only a few correct digits.
template <typename T>
struct VarOp {
  using A = std::conditional_t<std::is_same_v<T, float>, double, GpuAccumulateType<T>>;
  struct Acc {
    A mean, m2, count;
  };
  T* out;
  A divisor;
  __device__ Acc identity() const { return {A(0), A(0), A(0)}; }
  __device__ Acc reduce(Acc acc, T x, int64_t) const {
    const A v = convert<A>(x);
    acc.count += A(1);
    const A delta = v - acc.mean;
    acc.mean += delta / acc.count;
    acc.m2 += delta * (v - acc.mean);
    return acc;
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if (b.count == A(0)) return a;
    if (a.count == A(0)) return b;
    const A count = a.count + b.count, delta = b.mean - a.mean, weight = b.count / count;
    return {a.mean + delta * weight, a.m2 + b.m2 + delta * delta * a.count * weight, count};
  }
  __device__ void store(Acc acc, int64_t offset, int64_t) const {
    out[offset] = convert<T>(acc.m2 / divisor);
  }
};

template <typename T, NormKind kKind>
void norm_typed(const Layout& l, const Tensor& out, const Tensor& in, double p) {
  using Acc = GpuAccumulateType<T>;
  run_reduction<T>(l, in, NormOp<T, kKind>{out.data<T>(), static_cast<Acc>(p)});
}

template <typename T>
void reduce_typed(ReduceOp op, const Layout& l, const Tensor& out, const Tensor& in, double p) {
  switch (op) {
    case ReduceOp::Sum:
      return run_reduction<T>(l, in, SumProdOp<T, false>{out.data<T>()});
    case ReduceOp::Prod:
      return run_reduction<T>(l, in, SumProdOp<T, true>{out.data<T>()});
    case ReduceOp::Max:
      return run_reduction<T>(l, in, ExtremeOp<T, true>{out.data<T>()});
    case ReduceOp::Min:
      return run_reduction<T>(l, in, ExtremeOp<T, false>{out.data<T>()});
    case ReduceOp::All:
      return run_reduction<T>(l, in, TruthOp<T, true>{out.data<bool>()});
    case ReduceOp::Any:
      return run_reduction<T>(l, in, TruthOp<T, false>{out.data<bool>()});
    case ReduceOp::Norm:
      if constexpr (backend::kIsFloating<T>) {
        if (std::isinf(p)) return norm_typed<T, NormKind::Inf>(l, out, in, p);
        if (p == 0) return norm_typed<T, NormKind::Zero>(l, out, in, p);
        if (p == 1) return norm_typed<T, NormKind::One>(l, out, in, p);
        if (p == 2) return norm_typed<T, NormKind::Two>(l, out, in, p);
        return norm_typed<T, NormKind::General>(l, out, in, p);
      }
      break;
  }
  throw DTypeError(std::string("reduce: norm needs a floating dtype, got ") +
                   dtype_name(in.dtype()));
}

template <typename T>
void var_typed(const Layout& l, const Tensor& out, const Tensor& in, double correction) {
  using A = GpuAccumulateType<T>;
  // As torch: N - correction is clamped at 0, so too few elements give NaN (or inf).
  const double divisor = std::max(0.0, static_cast<double>(l.reduced_numel) - correction);
  run_reduction<T>(l, in, VarOp<T>{out.data<T>(), static_cast<A>(divisor)});
}

}  // namespace

void CudaBackend::reduce(ReduceOp op, const Tensor& out, const Tensor& in, double p) {
  if (out.numel() == 0) return;
  const Layout l = reduction::make_layout(in, out, out);
  backend::dispatch_all(in.dtype(),
                        [&](auto tag) { reduce_typed<decltype(tag)>(op, l, out, in, p); });
}

void CudaBackend::var(const Tensor& out, const Tensor& in, double correction) {
  if (out.numel() == 0) return;
  const Layout l = reduction::make_layout(in, out, out);
  backend::dispatch_floating(in.dtype(), "var",
                             [&](auto tag) { var_typed<decltype(tag)>(l, out, in, correction); });
}

}  // namespace rcuda::cuda
