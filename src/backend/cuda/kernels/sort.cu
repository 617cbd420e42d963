// sort on the GPU through CUB's segmented sort (one segment per row, Note [Row primitives] in
// rcuda/backend/backend.h): cub::DeviceSegmentedSort::StableSortPairs(Descending) of the keys
// with their positions. Radix order puts a NaN whose sign bit is set below -inf, so float keys
// are first copied with every NaN made the positive quiet NaN, which sorts above +inf: last
// ascending, first descending, as torch and the CPU backend. One difference from the CPU,
// which compares values: -0.0 sorts before +0.0 here.
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <climits>
#include <cstdint>
#include <cub/device/device_segmented_sort.cuh>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/launch.cuh"

namespace rcuda::cuda {
namespace {

struct RowStart {
  int64_t n;
  __host__ __device__ int64_t operator()(int64_t row) const { return row * n; }
};

template <typename T>
__global__ void prepare_keys_kernel(T* keys, int64_t* positions, const T* in, int64_t n,
                                    int64_t total) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    const T x = in[i];
    if constexpr (std::is_floating_point_v<T>)
      keys[i] = x != x ? T(NAN) : x;
    else
      keys[i] = x;
    positions[i] = i % n;
  }
}

template <typename T>
void sort_typed(const Tensor& values, const Tensor& indices, const Tensor& in, bool descending) {
  const int64_t rows = in.shape()[0], n = in.shape()[1], total = rows * n;
  RCUDA_CHECK(total <= INT_MAX && rows <= INT_MAX, ShapeError, "sort: ", total,
              " elements are more than CUB's segmented sort takes (", INT_MAX, ")");
  const int device = in.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  const Tensor keys = Tensor::empty({rows, n}, in.dtype(), in.device());
  const Tensor positions = Tensor::empty({rows, n}, DType::Int64, in.device());
  prepare_keys_kernel<T><<<blocks_for(total, device), kThreadsPerBlock, 0, stream>>>(
      keys.data<T>(), positions.data<int64_t>(), in.data<T>(), n, total);
  RCUDA_CUDA_CHECK_LAUNCH();

  const auto begin =
      thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), RowStart{n});
  const auto end = begin + 1;
  auto run = [&](void* scratch, size_t& bytes) {
    const T* k_in = keys.data<T>();
    T* k_out = values.data<T>();
    const int64_t* v_in = positions.data<int64_t>();
    int64_t* v_out = indices.data<int64_t>();
    const int items = static_cast<int>(total), segments = static_cast<int>(rows);
    return descending
               ? cub::DeviceSegmentedSort::StableSortPairsDescending(
                     scratch, bytes, k_in, k_out, v_in, v_out, items, segments, begin, end, stream)
               : cub::DeviceSegmentedSort::StableSortPairs(scratch, bytes, k_in, k_out, v_in, v_out,
                                                           items, segments, begin, end, stream);
  };
  size_t bytes = 0;
  RCUDA_CUDA_CHECK(run(nullptr, bytes));
  const Tensor scratch =
      Tensor::empty({static_cast<int64_t>(bytes > 0 ? bytes : 1)}, DType::UInt8, in.device());
  RCUDA_CUDA_CHECK(run(scratch.data_ptr(), bytes));
}

}  // namespace

void CudaBackend::sort(const Tensor& values, const Tensor& indices, const Tensor& in,
                       bool descending) {
  switch (in.dtype()) {
    case DType::Float32:
      return sort_typed<float>(values, indices, in, descending);
    case DType::Float64:
      return sort_typed<double>(values, indices, in, descending);
    case DType::Int32:
      return sort_typed<int32_t>(values, indices, in, descending);
    case DType::Int64:
      return sort_typed<int64_t>(values, indices, in, descending);
    case DType::UInt8:
      return sort_typed<uint8_t>(values, indices, in, descending);
    default:
      throw DTypeError(std::string("sort: the backend sorts float32, float64, int32, int64 and "
                                   "uint8, got ") +
                       dtype_name(in.dtype()));
  }
}

}  // namespace rcuda::cuda
