// Reduction primitives: reduce (sum, prod, max, min, all, any, norm), arg_reduce and var.
//
// The input is walked as Note [Reduction layout] (backend/reduction_layout.h) lays it out: kept
// dims and reduced dims, the innermost reduced run as long as memory allows; when it is
// contiguous the row kernels below vectorise with `#pragma omp simd`. Threads split the outputs
// when there are enough of them; otherwise (a full sum of 1e8 elements has one output) they
// split the reduced range, each keeping one partial per output, and partials are merged in
// thread order so that a given thread count always gives the same bits.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "backend/reduction_layout.h"
#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {
namespace {

using ReduceLayout = backend::ReductionLayout;

// Calls run(offset, first, count) for the innermost runs that cover [begin, end) of the
// row-major space `sizes`; offset in elements, first the linear index where the run starts.
template <typename Run>
void for_each_run(const DimVector& sizes, const DimVector& strides, int64_t begin, int64_t end,
                  Run&& run) {
  const int nd = static_cast<int>(sizes.size());
  DimVector index(static_cast<size_t>(nd));
  int64_t offset = 0, rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    index[d] = rem % sizes[d];
    rem /= sizes[d];
    offset += index[d] * strides[d];
  }
  for (int64_t i = begin; i < end;) {
    const int64_t count = std::min(sizes[nd - 1] - index[nd - 1], end - i);
    run(offset, i, count);
    i += count;
    index[nd - 1] += count;
    offset += count * strides[nd - 1];
    for (int d = nd - 1; d > 0 && index[d] == sizes[d]; --d) {
      offset += strides[d - 1] - sizes[d] * strides[d];
      index[d] = 0;
      ++index[d - 1];
    }
  }
}

// Calls f(output, in_offset, out0_offset, out1_offset) for outputs [begin, end).
template <typename F>
void for_each_output(const ReduceLayout& layout, int64_t begin, int64_t end, F&& f) {
  const int nd = static_cast<int>(layout.kept_sizes.size());
  const std::array<const DimVector*, 3> strides = {
      &layout.kept_in_strides, &layout.kept_out_strides[0], &layout.kept_out_strides[1]};
  DimVector index(static_cast<size_t>(nd));
  std::array<int64_t, 3> offset = {0, 0, 0};
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    index[d] = rem % layout.kept_sizes[d];
    rem /= layout.kept_sizes[d];
    for (int k = 0; k < 3; ++k) offset[k] += index[d] * (*strides[k])[d];
  }
  for (int64_t o = begin; o < end; ++o) {
    f(o, offset[0], offset[1], offset[2]);
    for (int d = nd - 1; d >= 0; --d) {
      ++index[d];
      for (int k = 0; k < 3; ++k) offset[k] += (*strides[k])[d];
      if (index[d] < layout.kept_sizes[d] || d == 0) break;
      for (int k = 0; k < 3; ++k) offset[k] -= layout.kept_sizes[d] * (*strides[k])[d];
      index[d] = 0;
    }
  }
}

// Runs range(begin, end, thread) on every thread of a parallel region over [0, n).
template <typename Range>
void split_over_threads(int64_t n, Range&& range) {
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t chunk = (n + threads - 1) / threads;
    const int64_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
    range(begin, end, t);
  }
}

// The reduction engine (Note [Reduction layout]). A kernel K over element type T provides
//   using Acc; Acc identity() const;
//   void row(Acc&, const T* p, int64_t stride, int64_t count, int64_t output, int64_t first);
//   Acc merge(Acc earlier, Acc later) const;
//   void finish(Acc, int64_t output, int64_t out0_offset, int64_t out1_offset) const;
// Kernels never throw: they run inside OpenMP regions.
template <typename T, typename K>
void run_reduction(const ReduceLayout& layout, const T* in, const K& kernel) {
  using Acc = typename K::Acc;
  const int64_t outputs = layout.num_outputs, reduced = layout.reduced_numel;
  if (outputs == 0) return;
  const int64_t inner_stride = layout.reduced_strides.back();
  auto reduce_range = [&](int64_t o, int64_t in_offset, int64_t begin, int64_t end) {
    Acc acc = kernel.identity();
    if (begin >= end) return acc;  // also keeps for_each_run away from zero sizes
    for_each_run(layout.reduced_sizes, layout.reduced_strides, begin, end,
                 [&](int64_t offset, int64_t first, int64_t count) {
                   kernel.row(acc, in + in_offset + offset, inner_stride, count, o, first);
                 });
    return acc;
  };
  // Neighbouring outputs adjacent in memory while the reduced elements are not (a sum over dim
  // 0 of a row-major matrix): reduce a block of outputs together, walking memory in order.
  const int64_t lane_size = layout.kept_sizes.back();
  const bool by_lanes = layout.kept_in_strides.back() == 1 && lane_size >= 8 && inner_stride != 1;
  auto reduce_lanes = [&](int64_t begin, int64_t end) {
    constexpr int64_t kLanes = 128;
    Acc accs[kLanes];
    for (int64_t o = begin; o < end;) {
      const int64_t count = std::min({lane_size - o % lane_size, end - o, kLanes});
      std::array<int64_t, 3> offset;
      for_each_output(layout, o, o + 1, [&](int64_t, int64_t i, int64_t o0, int64_t o1) {
        offset = {i, o0, o1};
      });
      for (int64_t j = 0; j < count; ++j) accs[j] = kernel.identity();
      for_each_run(layout.reduced_sizes, layout.reduced_strides, 0, reduced,
                   [&](int64_t run_offset, int64_t first, int64_t n) {
                     for (int64_t k = 0; k < n; ++k) {
                       const T* p = in + offset[0] + run_offset + k * inner_stride;
                       for (int64_t j = 0; j < count; ++j)
                         kernel.row(accs[j], p + j, 1, 1, o + j, first + k);
                     }
                   });
      for (int64_t j = 0; j < count; ++j) {
        kernel.finish(accs[j], o + j, offset[1] + j * layout.kept_out_strides[0].back(),
                      offset[2] + j * layout.kept_out_strides[1].back());
      }
      o += count;
    }
  };
  auto reduce_outputs = [&](int64_t begin, int64_t end, int64_t /*thread*/) {
    if (by_lanes && reduced > 0) return reduce_lanes(begin, end);
    for_each_output(layout, begin, end, [&](int64_t o, int64_t in_offset, int64_t o0, int64_t o1) {
      kernel.finish(reduce_range(o, in_offset, 0, reduced), o, o0, o1);
    });
  };

  const int64_t threads = omp_get_max_threads();
  if (outputs * reduced < kParallelGrain || threads == 1 || omp_in_parallel()) {
    reduce_outputs(0, outputs, 0);
  } else if (outputs >= 4 * threads) {
    split_over_threads(outputs, reduce_outputs);
  } else {
    // Few outputs: split the reduced range; partials[t * outputs + o] is thread t's share.
    std::unique_ptr<Acc[]> partials(new Acc[threads * outputs]);
    for (int64_t i = 0; i < threads * outputs; ++i) partials[i] = kernel.identity();
    split_over_threads(reduced, [&](int64_t begin, int64_t end, int64_t t) {
      if (begin >= end) return;
      for_each_output(layout, 0, outputs, [&](int64_t o, int64_t in_offset, int64_t, int64_t) {
        partials[t * outputs + o] = reduce_range(o, in_offset, begin, end);
      });
    });
    for_each_output(layout, 0, outputs, [&](int64_t o, int64_t, int64_t o0, int64_t o1) {
      Acc acc = partials[o];
      for (int64_t t = 1; t < threads; ++t) acc = kernel.merge(acc, partials[t * outputs + o]);
      kernel.finish(acc, o, o0, o1);
    });
  }
}

// Integer sums and products wrap around in uint64 (defined behaviour, the same bits as torch's
// int64 arithmetic); floating ones accumulate in AccumulateType (Note [Compute types]).
template <typename T>
using SumType =
    std::conditional_t<std::is_integral_v<AccumulateType<T>>, uint64_t, AccumulateType<T>>;

template <typename T, typename Acc>
T from_accumulator(Acc acc) {
  if constexpr (std::is_same_v<Acc, uint64_t>)
    return convert<T>(static_cast<int64_t>(acc));
  else
    return convert<T>(acc);
}

template <typename T, bool kIsProduct>
struct SumProdKernel {
  using Acc = SumType<T>;
  T* out;
  Acc identity() const { return Acc(kIsProduct ? 1 : 0); }
  void row(Acc& acc, const T* p, int64_t s, int64_t n, int64_t, int64_t) const {
    Acc a = acc;
    if constexpr (kIsProduct) {
      if (s == 1) {
#pragma omp simd reduction(* : a)
        for (int64_t i = 0; i < n; ++i) a *= convert<Acc>(p[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) a *= convert<Acc>(p[i * s]);
      }
    } else {
      if (s == 1) {
#pragma omp simd reduction(+ : a)
        for (int64_t i = 0; i < n; ++i) a += convert<Acc>(p[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) a += convert<Acc>(p[i * s]);
      }
    }
    acc = a;
  }
  Acc merge(Acc a, Acc b) const { return kIsProduct ? a * b : a + b; }
  void finish(Acc acc, int64_t, int64_t offset, int64_t) const {
    out[offset] = from_accumulator<T>(acc);
  }
};

template <typename C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>)
    return std::isnan(v);
  else
    return false;
}

// Max and min. NaN is tracked in a flag next to the running extreme, so that the vectorised
// loop can use OpenMP's max/min reductions and NaN still wins, as torch.
template <typename T, bool kIsMax>
struct ExtremeKernel {
  using C = ComputeType<T>;
  struct Acc {
    C value;
    bool nan;
  };
  T* out;
  Acc identity() const {
    if constexpr (std::is_floating_point_v<C>) {
      return {kIsMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity(),
              false};
    } else {
      return {kIsMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max(), false};
    }
  }
  void row(Acc& acc, const T* p, int64_t s, int64_t n, int64_t, int64_t) const {
    C m = acc.value;
    int nan = acc.nan ? 1 : 0;
    if constexpr (std::is_floating_point_v<C> && !kIsReducedFloat<T>) {
      if (s == 1) {
        if constexpr (kIsMax) {
#pragma omp simd reduction(max : m) reduction(| : nan)
          for (int64_t i = 0; i < n; ++i) {
            m = p[i] > m ? p[i] : m;
            nan |= p[i] != p[i];
          }
        } else {
#pragma omp simd reduction(min : m) reduction(| : nan)
          for (int64_t i = 0; i < n; ++i) {
            m = p[i] < m ? p[i] : m;
            nan |= p[i] != p[i];
          }
        }
        acc = {m, nan != 0};
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      const C x = convert<C>(p[i * s]);
      m = (kIsMax ? x > m : x < m) ? x : m;
      nan |= is_nan(x) ? 1 : 0;
    }
    acc = {m, nan != 0};
  }
  Acc merge(Acc a, Acc b) const {
    return {(kIsMax ? b.value > a.value : b.value < a.value) ? b.value : a.value, a.nan || b.nan};
  }
  void finish(Acc acc, int64_t, int64_t offset, int64_t) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (acc.nan) acc.value = std::numeric_limits<C>::quiet_NaN();
    }
    out[offset] = convert<T>(acc.value);
  }
};

// all / any: counts the elements that decide the answer (zeros for all, non-zeros for any).
template <typename T, bool kIsAll>
struct TruthKernel {
  using Acc = int64_t;
  bool* out;
  static bool is_zero(T x) {
    if constexpr (kIsReducedFloat<T>)
      return static_cast<float>(x) == 0.0f;
    else
      return x == T(0);
  }
  Acc identity() const { return 0; }
  void row(Acc& acc, const T* p, int64_t s, int64_t n, int64_t, int64_t) const {
    int64_t deciding = 0;
    if (s == 1) {
#pragma omp simd reduction(+ : deciding)
      for (int64_t i = 0; i < n; ++i) deciding += is_zero(p[i]) == kIsAll ? 1 : 0;
    } else {
      for (int64_t i = 0; i < n; ++i) deciding += is_zero(p[i * s]) == kIsAll ? 1 : 0;
    }
    acc += deciding;
  }
  Acc merge(Acc a, Acc b) const { return a + b; }
  void finish(Acc acc, int64_t, int64_t offset, int64_t) const {
    out[offset] = kIsAll ? acc == 0 : acc != 0;
  }
};

// Vector p-norms in AccumulateType: inf (max |x|, NaN wins), 0 (count of non-zeros), 1, 2 and
// any other positive p as (sum |x|^p)^(1/p).
template <typename T>
struct NormKernel {
  using Acc = AccumulateType<T>;
  T* out;
  double p;
  Acc identity() const { return Acc(0); }
  void row(Acc& acc, const T* x, int64_t s, int64_t n, int64_t, int64_t) const {
    Acc a = acc;
    if (std::isinf(p)) {
      for (int64_t i = 0; i < n; ++i) {
        const Acc v = std::abs(convert<Acc>(x[i * s]));
        a = (v != v || v > a) ? v : a;  // once a is NaN it stays NaN
      }
    } else if (p == 0) {
      for (int64_t i = 0; i < n; ++i) a += convert<Acc>(x[i * s]) != Acc(0) ? Acc(1) : Acc(0);
    } else if (p == 1) {
      for (int64_t i = 0; i < n; ++i) a += std::abs(convert<Acc>(x[i * s]));
    } else if (p == 2) {
      if (s == 1) {
#pragma omp simd reduction(+ : a)
        for (int64_t i = 0; i < n; ++i) a += convert<Acc>(x[i]) * convert<Acc>(x[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) a += convert<Acc>(x[i * s]) * convert<Acc>(x[i * s]);
      }
    } else {
      const Acc e = static_cast<Acc>(p);
      for (int64_t i = 0; i < n; ++i) a += std::pow(std::abs(convert<Acc>(x[i * s])), e);
    }
    acc = a;
  }
  Acc merge(Acc a, Acc b) const {
    if (std::isinf(p)) return (b != b || b > a) ? b : a;
    return a + b;
  }
  void finish(Acc acc, int64_t, int64_t offset, int64_t) const {
    Acc r = acc;
    if (p == 2)
      r = std::sqrt(acc);
    else if (!std::isinf(p) && p != 0 && p != 1)
      r = std::pow(acc, static_cast<Acc>(1.0 / p));
    out[offset] = convert<T>(r);
  }
};

// Variance, pass one: the mean of each output's elements, in double.
template <typename T>
struct MeanKernel {
  using Acc = double;
  double* means;
  double count;
  Acc identity() const { return 0.0; }
  void row(Acc& acc, const T* p, int64_t s, int64_t n, int64_t, int64_t) const {
    double a = acc;
    if (s == 1) {
#pragma omp simd reduction(+ : a)
      for (int64_t i = 0; i < n; ++i) a += convert<double>(p[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) a += convert<double>(p[i * s]);
    }
    acc = a;
  }
  Acc merge(Acc a, Acc b) const { return a + b; }
  void finish(Acc acc, int64_t o, int64_t, int64_t) const { means[o] = acc / count; }
};

// Variance, pass two: the sum of squared deviations from that mean (two passes in double are
// as accurate as Welford's update and vectorise).
template <typename T>
struct SquaredDeviationKernel {
  using Acc = double;
  T* out;
  const double* means;
  double divisor;
  Acc identity() const { return 0.0; }
  void row(Acc& acc, const T* p, int64_t s, int64_t n, int64_t o, int64_t) const {
    const double m = means[o];
    double a = acc;
    if (s == 1) {
#pragma omp simd reduction(+ : a)
      for (int64_t i = 0; i < n; ++i) {
        const double d = convert<double>(p[i]) - m;
        a += d * d;
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const double d = convert<double>(p[i * s]) - m;
        a += d * d;
      }
    }
    acc = a;
  }
  Acc merge(Acc a, Acc b) const { return a + b; }
  void finish(Acc acc, int64_t, int64_t offset, int64_t) const {
    out[offset] = convert<T>(acc / divisor);
  }
};

// argmax / argmin along one dim: the first index of the extreme; the first NaN wins outright.
template <typename T, bool kIsMax>
struct ArgExtremeKernel {
  using C = ComputeType<T>;
  struct Acc {
    C value;
    int64_t index;  // -1: nothing seen yet
  };
  T* values;
  int64_t* indices;
  static bool better(C x, C best) { return is_nan(x) || (kIsMax ? x > best : x < best); }
  Acc identity() const { return {C(), -1}; }
  void row(Acc& acc, const T* p, int64_t s, int64_t n, int64_t, int64_t first) const {
    if (acc.index >= 0 && is_nan(acc.value)) return;
    for (int64_t i = 0; i < n; ++i) {
      const C x = convert<C>(p[i * s]);
      if (acc.index < 0 || better(x, acc.value)) {
        acc = {x, first + i};
        if (is_nan(x)) return;
      }
    }
  }
  Acc merge(Acc a, Acc b) const {
    if (a.index < 0) return b;
    if (b.index < 0 || is_nan(a.value)) return a;
    return better(b.value, a.value) ? b : a;  // ties keep the earlier chunk's index
  }
  void finish(Acc acc, int64_t, int64_t values_offset, int64_t indices_offset) const {
    values[values_offset] = convert<T>(acc.value);
    indices[indices_offset] = acc.index;
  }
};

}  // namespace

void CpuBackend::reduce(ReduceOp op, const Tensor& out, const Tensor& in, double p) {
  if (out.numel() == 0) return;
  const ReduceLayout layout = backend::make_reduction_layout(in, out, out);
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = in.data<T>();
    switch (op) {
      case ReduceOp::Sum:
        return run_reduction(layout, x, SumProdKernel<T, false>{out.data<T>()});
      case ReduceOp::Prod:
        return run_reduction(layout, x, SumProdKernel<T, true>{out.data<T>()});
      case ReduceOp::Max:
        return run_reduction(layout, x, ExtremeKernel<T, true>{out.data<T>()});
      case ReduceOp::Min:
        return run_reduction(layout, x, ExtremeKernel<T, false>{out.data<T>()});
      case ReduceOp::All:
        return run_reduction(layout, x, TruthKernel<T, true>{out.data<bool>()});
      case ReduceOp::Any:
        return run_reduction(layout, x, TruthKernel<T, false>{out.data<bool>()});
      case ReduceOp::Norm:
        if constexpr (kIsFloating<T>) {
          return run_reduction(layout, x, NormKernel<T>{out.data<T>(), p});
        }
        break;
    }
    throw DTypeError(std::string("reduce: norm needs a floating dtype, got ") +
                     dtype_name(in.dtype()));
  });
}

void CpuBackend::arg_reduce(bool is_max, const Tensor& values, const Tensor& indices,
                            const Tensor& in, int64_t /*dim: where values has size 1*/) {
  if (values.numel() == 0) return;
  const ReduceLayout layout = backend::make_reduction_layout(in, values, indices);
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (is_max) {
      run_reduction(layout, in.data<T>(),
                    ArgExtremeKernel<T, true>{values.data<T>(), indices.data<int64_t>()});
    } else {
      run_reduction(layout, in.data<T>(),
                    ArgExtremeKernel<T, false>{values.data<T>(), indices.data<int64_t>()});
    }
  });
}

void CpuBackend::var(const Tensor& out, const Tensor& in, double correction) {
  if (out.numel() == 0) return;
  const ReduceLayout layout = backend::make_reduction_layout(in, out, out);
  const double count = static_cast<double>(layout.reduced_numel);
  // As torch: N - correction is clamped at 0, so too few elements give NaN (or inf).
  const double divisor = std::max(0.0, count - correction);
  dispatch_floating(in.dtype(), "var", [&](auto tag) {
    using T = decltype(tag);
    std::vector<double> means(static_cast<size_t>(layout.num_outputs));
    run_reduction(layout, in.data<T>(), MeanKernel<T>{means.data(), count});
    run_reduction(layout, in.data<T>(),
                  SquaredDeviationKernel<T>{out.data<T>(), means.data(), divisor});
  });
}

}  // namespace rcuda::cpu
