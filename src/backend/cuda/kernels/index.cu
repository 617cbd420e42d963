// Indexing primitives on the GPU: index_select, gather, scatter (overwrite or accumulate),
// nonzero. Semantics follow the CPU backend (src/backend/cpu/index.cpp), with two documented
// differences: scatter without accumulate leaves the winner among duplicate indices unspecified
// (as torch on CUDA; the CPU lets the later position win), and scatter_add sums duplicates in an
// unspecified order, so floating results agree with the CPU to rounding only.
//
// gather and index_select follow Note [Indexing through a zero stride] (backend/indexing.h):
// `in` seen through out's shape with stride 0 along dim makes them an elementwise loop over (out,
// in, index) on the strided engine of launch.cuh. scatter is the mirror image: a loop over (index,
// src, out seen through index's shape), writing at out + index * stride(dim).
//
// Note [Index bounds on the GPU]
// A kernel cannot throw. Each kernel here checks every index it reads; one out of range (negative
// included, as torch rejects them for these ops) is never dereferenced (gather writes 0 there,
// scatter skips it) and is reported through the device's error record, which the host raises as
// IndexError, with the CPU backend's message, at its next synchronisation or at the next op that
// checks (Note [Deferred device errors] in backend/cuda/device_errors.h): no launch here waits for
// the device. The device is never touched out of bounds, so the process stays usable.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/tabulate_output_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstdint>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <type_traits>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_errors.h"
#include "backend/cuda/graph_capture.h"
#include "backend/cuda/kernels/atomic_narrow.cuh"
#include "backend/cuda/kernels/device_errors.cuh"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/dispatch.h"
#include "backend/indexing.h"

namespace rcuda::cuda {
namespace {

using backend::dispatch_all;
using backend::dispatch_width;
using backend::kIsReducedFloat;
using backend::through_dim;

// backend::index_in_bounds, reporting the index to `record` when it is not.
__device__ __forceinline__ bool index_in_range(int64_t index, int64_t dim, int64_t size,
                                               DeviceErrorRecord* record, const char* op) {
  if (backend::index_in_bounds(index, size)) return true;
  report_index_error(record, op, index, dim, size);
  return false;
}

// out[pos] = in[pos with pos[dim] = index[pos]]; index has out's shape (any strides, zeros too).
template <typename U>
void gather_elements(const char* op, const Tensor& out, const Tensor& in, int64_t dim,
                     const Tensor& index) {
  if (out.numel() == 0) return;
  const int device = out.device().index;
  DeviceGuard guard(device);
  check_device_errors(device);
  DeviceErrorRecord* record = device_error_record(device);
  const int64_t size = in.size(dim);
  const int64_t step = in.stride(dim) * static_cast<int64_t>(sizeof(U));
  launch_strided<3>({out, through_dim(in, out.shape(), dim), index}, [=] __device__(char** p) {
    const int64_t i = *reinterpret_cast<const int64_t*>(p[2]);
    *reinterpret_cast<U*>(p[0]) = index_in_range(i, dim, size, record, op)
                                      ? *reinterpret_cast<const U*>(p[1] + i * step)
                                      : U{};
  });
  check_device_errors_after_launch(device);
}

// *target += value with the CPU's per-step rounding (convert<T>(C(target) + C(value))).
template <typename T>
__device__ void atomic_accumulate(T* target, T value) {
  if constexpr (std::is_same_v<T, bool>) {
    if (value)
      atomic_update_narrow(reinterpret_cast<uint8_t*>(target), [](uint8_t) { return uint8_t{1}; });
  } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t> ||
                       std::is_same_v<T, int16_t>) {
    atomic_add_narrow_integer(target, value);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(target),  // two's complement: same bits
              static_cast<unsigned long long>(value));
  } else if constexpr (std::is_same_v<T, Half>) {
#if __CUDA_ARCH__ >= 700
    atomicAdd(reinterpret_cast<__half*>(target), __ushort_as_half(value.bits));
#else
    atomic_update_narrow(reinterpret_cast<uint16_t*>(target), [value](uint16_t c) {
      return Half(static_cast<float>(Half::from_bits(c)) + static_cast<float>(value)).bits;
    });
#endif
  } else if constexpr (std::is_same_v<T, BFloat16>) {
#if __CUDA_ARCH__ >= 800
    atomicAdd(reinterpret_cast<__nv_bfloat16*>(target), __ushort_as_bfloat16(value.bits));
#else
    atomic_update_narrow(reinterpret_cast<uint16_t*>(target), [value](uint16_t c) {
      return BFloat16(static_cast<float>(BFloat16::from_bits(c)) + static_cast<float>(value)).bits;
    });
#endif
  } else {
    atomicAdd(target, value);  // int32, float32, float64
  }
}

// out[.., index[pos], ..] = src[pos] (or +=) for every position pos of index. Duplicate indices
// without accumulate: an unspecified one of the writes wins.
template <typename T, bool Accumulate>
void scatter_elements(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  const int device = out.device().index;
  DeviceGuard guard(device);
  check_device_errors(device);
  DeviceErrorRecord* record = device_error_record(device);
  const char* op = Accumulate ? "scatter_add" : "scatter";
  const int64_t size = out.size(dim);
  const int64_t step = out.stride(dim) * static_cast<int64_t>(sizeof(T));
  // Index first: the loop walks index's memory order, usually contiguous.
  launch_strided<3>({index, src, through_dim(out, index.shape(), dim)}, [=] __device__(char** p) {
    const int64_t i = *reinterpret_cast<const int64_t*>(p[0]);
    if (!index_in_range(i, dim, size, record, op)) return;
    T* target = reinterpret_cast<T*>(p[2] + i * step);
    const T value = *reinterpret_cast<const T*>(p[1]);
    if constexpr (Accumulate)
      atomic_accumulate(target, value);
    else
      *target = value;
  });
  check_device_errors_after_launch(device);
}

// ---- nonzero ---------------------------------------------------------------------------------

// Note [nonzero through a mask]
// in's elements are first tested into a contiguous uint8 mask in row-major (logical) order, one
// small strided kernel per dtype; CUB's count and select then run once, over the mask, for every
// dtype. Instantiating CUB's select per dtype made this file the build's slowest (its select
// sweep kernels were 70% of the file's device code), for one extra pass over n bytes in an op
// that synchronises anyway.
struct MaskIsSet {
  const uint8_t* mask;
  __device__ bool operator()(int64_t i) const { return mask[i] != 0; }
};

struct MaskCount {
  const uint8_t* mask;
  __device__ int64_t operator()(int64_t i) const { return mask[i]; }
};

// Writes the coordinates of row-major position `linear` as row `row` of the [count, columns]
// output. Only dims of size > 1 are written: the output is zeroed first.
struct WriteCoordinates {
  int64_t* out;
  int64_t columns;
  int dims;              // dims of size > 1
  const int64_t* table;  // their sizes[dims], then their columns[dims]
  __device__ void operator()(int64_t row, int64_t linear) const {
    int64_t* coords = out + row * columns;
    for (int d = dims - 1; d >= 0; --d) {
      coords[table[dims + d]] = linear % table[d];
      linear /= table[d];
    }
  }
};

// Device scratch for CUB, from the caching allocator (stream-ordered like everything else).
Tensor device_bytes(size_t bytes, int device) {
  return Tensor::empty({static_cast<int64_t>(bytes > 0 ? bytes : 1)}, DType::UInt8,
                       Device(DeviceType::CUDA, device));
}

// mask[i] = in[i] != 0 in row-major order; NaN counts as nonzero, as torch.
template <typename T>
void nonzero_mask(const Tensor& mask, const Tensor& in) {
  launch_strided<2>({mask, in}, [] __device__(char** p) {
    const T v = *reinterpret_cast<const T*>(p[1]);
    bool set;
    if constexpr (kIsReducedFloat<T>)
      set = static_cast<float>(v) != 0.0f;
    else
      set = v != T(0);
    *reinterpret_cast<uint8_t*>(p[0]) = set ? 1 : 0;
  });
}

// The mask, a count (CUB reduce), one synchronisation to size the output, then a CUB select whose
// output iterator writes coordinates straight into it, in row-major order. Any rank and strides.
Tensor nonzero_of(const Tensor& in) {
  check_not_capturing(in.device().index, "nonzero");  // its output size is read on the host
  const int64_t n = in.numel(), ndim = in.dim();
  const int device = in.device().index;
  if (n == 0) return Tensor::empty({0, ndim}, DType::Int64, in.device());
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);

  const Tensor mask = Tensor::empty(in.shape(), DType::UInt8, in.device());
  dispatch_all(in.dtype(), [&](auto tag) { nonzero_mask<decltype(tag)>(mask, in); });

  // Host table: the sizes and columns of in's size > 1 dims, then two counts (the reduction's
  // and the select's).
  std::vector<int64_t> table, columns;
  for (int64_t d = 0; d < ndim; ++d) {
    if (in.size(d) == 1) continue;
    table.push_back(in.size(d));
    columns.push_back(d);
  }
  const int coordinate_dims = static_cast<int>(columns.size());
  table.insert(table.end(), columns.begin(), columns.end());
  table.push_back(0);
  table.push_back(0);
  const Tensor device_table =
      Tensor::empty({static_cast<int64_t>(table.size())}, DType::Int64, in.device());
  int64_t* on_device = device_table.data<int64_t>();
  RCUDA_CUDA_CHECK(cudaMemcpyAsync(on_device, table.data(), table.size() * sizeof(int64_t),
                                   cudaMemcpyHostToDevice, stream));
  int64_t* counts = on_device + table.size() - 2;

  const uint8_t* mask_data = mask.data<uint8_t>();
  const thrust::counting_iterator<int64_t> positions(0);
  const auto flags = thrust::make_transform_iterator(positions, MaskCount{mask_data});
  size_t bytes = 0;
  RCUDA_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, flags, counts, n, stream));
  Tensor scratch = device_bytes(bytes, device);
  RCUDA_CUDA_CHECK(cub::DeviceReduce::Sum(scratch.data_ptr(), bytes, flags, counts, n, stream));
  int64_t count = 0;
  RCUDA_CUDA_CHECK(cudaMemcpyAsync(&count, counts, sizeof(count), cudaMemcpyDeviceToHost, stream));
  RCUDA_CUDA_CHECK(cudaStreamSynchronize(stream));
  check_device_errors(device);

  Tensor out = Tensor::empty({count, ndim}, DType::Int64, in.device());
  if (out.numel() == 0) return out;
  RCUDA_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, out.numel() * sizeof(int64_t), stream));
  const auto coordinates = thrust::make_tabulate_output_iterator(
      WriteCoordinates{out.data<int64_t>(), ndim, coordinate_dims, on_device});
  bytes = 0;
  RCUDA_CUDA_CHECK(cub::DeviceSelect::If(nullptr, bytes, positions, coordinates, counts + 1, n,
                                         MaskIsSet{mask_data}, stream));
  scratch = device_bytes(bytes, device);
  RCUDA_CUDA_CHECK(cub::DeviceSelect::If(scratch.data_ptr(), bytes, positions, coordinates,
                                         counts + 1, n, MaskIsSet{mask_data}, stream));
  return out;
}

}  // namespace

void CudaBackend::index_select(const Tensor& out, const Tensor& in, int64_t dim,
                               const Tensor& index) {
  const Tensor index_spread = backend::index_select_as_gather(index, out.shape(), dim);
  dispatch_width(in.element_size(), [&](auto tag) {
    gather_elements<decltype(tag)>("index_select", out, in, dim, index_spread);
  });
}

void CudaBackend::gather(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) {
  dispatch_width(in.element_size(),
                 [&](auto tag) { gather_elements<decltype(tag)>("gather", out, in, dim, index); });
}

void CudaBackend::scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                          bool accumulate) {
  if (index.numel() == 0) return;
  if (accumulate) {
    dispatch_all(out.dtype(),
                 [&](auto tag) { scatter_elements<decltype(tag), true>(out, dim, index, src); });
  } else {
    dispatch_width(out.element_size(),
                   [&](auto tag) { scatter_elements<decltype(tag), false>(out, dim, index, src); });
  }
}

Tensor CudaBackend::nonzero(const Tensor& in) { return nonzero_of(in); }

}  // namespace rcuda::cuda
