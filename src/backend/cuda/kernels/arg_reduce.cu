// argmax / argmin along one dim on the GPU, through the engine in reduce.cuh. As the CPU
// backend (src/backend/cpu/reduce.cpp): the first index of the extreme wins ties and the first
// NaN wins outright. Threads see their elements in increasing index order, but partials meet
// in tree order, so combine() compares indices rather than relying on the order of its sides.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/reduce.cuh"

namespace rcuda::cuda {
namespace {

using backend::ComputeType;
using backend::convert;
using reduction::is_nan;

template <typename T, bool kIsMax>
struct ArgExtremeOp {
  using C = ComputeType<T>;
  struct Acc {
    C value;
    int64_t index;  // -1: nothing seen yet
  };
  T* values;
  int64_t* indices;
  __device__ static bool better(C x, C best) { return kIsMax ? x > best : x < best; }
  __device__ Acc identity() const { return {C(), -1}; }
  __device__ Acc reduce(Acc acc, T x, int64_t index) const {
    const C v = convert<C>(x);
    if (acc.index < 0) return {v, index};
    if (is_nan(acc.value)) return acc;  // an earlier NaN
    return is_nan(v) || better(v, acc.value) ? Acc{v, index} : acc;
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool a_nan = is_nan(a.value), b_nan = is_nan(b.value);
    if (a_nan != b_nan) return a_nan ? a : b;
    if (a_nan || a.value == b.value) return a.index < b.index ? a : b;
    return better(b.value, a.value) ? b : a;
  }
  __device__ void store(Acc acc, int64_t values_offset, int64_t indices_offset) const {
    values[values_offset] = convert<T>(acc.value);
    indices[indices_offset] = acc.index;
  }
};

template <typename T>
void arg_reduce_typed(bool is_max, const reduction::Layout& l, const Tensor& values,
                      const Tensor& indices, const Tensor& in) {
  if (is_max) {
    reduction::run_reduction<T>(l, in,
                                ArgExtremeOp<T, true>{values.data<T>(), indices.data<int64_t>()});
  } else {
    reduction::run_reduction<T>(l, in,
                                ArgExtremeOp<T, false>{values.data<T>(), indices.data<int64_t>()});
  }
}

}  // namespace

void CudaBackend::arg_reduce(bool is_max, const Tensor& values, const Tensor& indices,
                             const Tensor& in, int64_t /*dim: where values has size 1*/) {
  if (values.numel() == 0) return;
  const reduction::Layout l = reduction::make_layout(in, values, indices);
  backend::dispatch_all(in.dtype(), [&](auto tag) {
    arg_reduce_typed<decltype(tag)>(is_max, l, values, indices, in);
  });
}

}  // namespace rcuda::cuda
