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

// Note [One kernel per dtype for related reductions]
// Sum and product, max and min, all and any, and the norms share a kernel per dtype that
// switches on a runtime field: the choice is uniform across the launch, so it costs a select per
// element of a memory-bound loop, and it keeps this file's kernels (each built as a row, a column
// and a combining kernel) at a third of what one per op made, which was minutes of build time.
template <typename T>
struct SumProdOp {
  using Acc = GpuAccumulateType<T>;
  T* out;
  bool product;
  __device__ Acc identity() const { return Acc(product ? 1 : 0); }
  __device__ Acc reduce(Acc acc, T x, int64_t) const { return combine(acc, convert<Acc>(x)); }
  __device__ Acc combine(Acc a, Acc b) const { return product ? a * b : a + b; }
  __device__ void store(Acc acc, int64_t offset, int64_t) const {
    if constexpr (std::is_same_v<Acc, uint64_t>)
      out[offset] = convert<T>(static_cast<int64_t>(acc));  // wraps as int64, as the CPU
    else
      out[offset] = convert<T>(acc);
  }
};

template <typename T>
struct ExtremeOp {
  using Acc = ComputeType<T>;
  T* out;
  bool max;
  __device__ Acc identity() const {
    if constexpr (std::is_floating_point_v<Acc>)
      return max ? -INFINITY : INFINITY;
    else
      return max ? std::numeric_limits<Acc>::lowest() : std::numeric_limits<Acc>::max();
  }
  __device__ Acc reduce(Acc acc, T x, int64_t) const { return combine(acc, convert<Acc>(x)); }
  // NaN propagates from either side.
  __device__ Acc combine(Acc a, Acc b) const {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return (max ? b > a : b < a) ? b : a;
  }
  __device__ void store(Acc acc, int64_t offset, int64_t) const { out[offset] = convert<T>(acc); }
};

// all / any: an int flag (the half types compare through float, so -0 and +0 are zero).
template <typename T>
struct TruthOp {
  using Acc = int;
  bool* out;
  bool all;
  __device__ Acc identity() const { return all ? 1 : 0; }
  __device__ Acc reduce(Acc acc, T x, int64_t) const {
    const bool nonzero = convert<ComputeType<T>>(x) != ComputeType<T>(0);
    return combine(acc, nonzero ? 1 : 0);
  }
  __device__ Acc combine(Acc a, Acc b) const { return all ? (a & b) : (a | b); }
  __device__ void store(Acc acc, int64_t offset, int64_t) const { out[offset] = acc != 0; }
};

enum class NormKind { Inf, Zero, One, Two, General };

template <typename T>
struct NormOp {
  using Acc = GpuAccumulateType<T>;
  T* out;
  NormKind kind;
  Acc p;
  __device__ Acc identity() const { return Acc(0); }
  __device__ Acc reduce(Acc acc, T x, int64_t) const {
    const Acc v = convert<Acc>(x);
    switch (kind) {
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
    if (kind == NormKind::Inf) {
      if (is_nan(a)) return a;  // NaN wins, then the larger
      if (is_nan(b)) return b;
      return b > a ? b : a;
    }
    return a + b;
  }
  __device__ void store(Acc acc, int64_t offset, int64_t) const {
    if (kind == NormKind::Two)
      acc = sqrt(acc);
    else if (kind == NormKind::General)
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

template <typename T>
void norm_typed(NormKind kind, const Layout& l, const Tensor& out, const Tensor& in, double p) {
  using Acc = GpuAccumulateType<T>;
  run_reduction<T>(l, in, NormOp<T>{out.data<T>(), kind, static_cast<Acc>(p)});
}

template <typename T>
void reduce_typed(ReduceOp op, const Layout& l, const Tensor& out, const Tensor& in, double p) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Prod:
      return run_reduction<T>(l, in, SumProdOp<T>{out.data<T>(), op == ReduceOp::Prod});
    case ReduceOp::Max:
    case ReduceOp::Min:
      return run_reduction<T>(l, in, ExtremeOp<T>{out.data<T>(), op == ReduceOp::Max});
    case ReduceOp::All:
    case ReduceOp::Any:
      return run_reduction<T>(l, in, TruthOp<T>{out.data<bool>(), op == ReduceOp::All});
    case ReduceOp::Norm:
      if constexpr (backend::kIsFloating<T>) {
        const NormKind kind = std::isinf(p) ? NormKind::Inf
                              : p == 0      ? NormKind::Zero
                              : p == 1      ? NormKind::One
                              : p == 2      ? NormKind::Two
                                            : NormKind::General;
        return norm_typed<T>(kind, l, out, in, p);
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
