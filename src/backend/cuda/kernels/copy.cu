// Same-device copies with dtype conversion and any strides, and cat's batched copy.
//
// Note [Batched cat]
// Backend::cat moves whole runs of bytes: input i's part of each output row is a contiguous run
// of chunk_i bytes, at offset_i in the row. One launch handles up to kCatInputsPerLaunch inputs,
// their runs passed by value (a graph capture keeps them); blockIdx.y picks the input and the
// blocks along x stride over its rows x chunk. The copy unit is the widest of 16, 8, 4, 2 and 1
// bytes that divides every run, offset, row and address of the launch, so large parts move in
// 16-byte loads and stores and a stack of 0-d losses in elements.
#include "backend/cuda/kernels/copy.h"

#include <algorithm>
#include <cstdint>

#include "backend/cat_layout.h"
#include "backend/convert_any.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/dispatch.h"
#include "backend/indexing.h"

namespace rcuda::cuda {

namespace {

// Note [Conversions: typed pairs and one generic loop] (backend/convert_any.h).
template <typename D, typename S>
void convert_typed(const Tensor& dst, const Tensor& src) {
  launch_map<D, S, 1>(dst, {src}, [] __device__(S v) { return backend::convert<D>(v); });
}

void convert_generic(const Tensor& dst, const Tensor& src) {
  backend::check_convertible(dst.dtype(), src.dtype());
  const DType to = dst.dtype(), from = src.dtype();
  launch_strided<2>({dst, src}, [=] __device__(char** p) {
    backend::store_any(p[0], to, backend::load_any(p[1], from));
  });
}

constexpr int kCatInputsPerLaunch = 64;

struct CatRun {
  const char* data;
  int64_t chunk;   // units per row
  int64_t offset;  // units from the start of an output row
};

struct CatLaunch {
  CatRun runs[kCatInputsPerLaunch];
};

template <typename Unit>
__global__ void cat_kernel(CatLaunch launch, Unit* out, int64_t rows, int64_t row_units) {
  const CatRun run = launch.runs[blockIdx.y];
  const Unit* in = reinterpret_cast<const Unit*>(run.data);
  const int64_t n = rows * run.chunk;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const int64_t row = i / run.chunk;
    out[row * row_units + run.offset + (i - row * run.chunk)] = in[i];
  }
}

// Inputs [first, last) in one launch, in units of Unit.
template <typename Unit>
void launch_cat(const Tensor& out, const std::vector<Tensor>& inputs, size_t first, size_t last,
                int64_t rows, int64_t row_bytes, const int64_t* offsets, const int64_t* chunks) {
  constexpr int64_t u = sizeof(Unit);
  CatLaunch launch{};
  int64_t widest = 0;
  for (size_t i = first; i < last; ++i) {
    launch.runs[i - first] = {static_cast<const char*>(inputs[i].data_ptr()), chunks[i] / u,
                              offsets[i] / u};
    widest = std::max(widest, rows * chunks[i] / u);
  }
  const int device = out.device().index;
  const dim3 grid(static_cast<unsigned>(blocks_for(widest, device)),
                  static_cast<unsigned>(last - first));
  cat_kernel<Unit><<<grid, kThreadsPerBlock, 0, current_stream(device)>>>(launch, out.data<Unit>(),
                                                                          rows, row_bytes / u);
  RCUDA_CUDA_CHECK_LAUNCH();
}

}  // namespace

void device_cat(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim) {
  if (inputs.empty()) return;
  const backend::CatLayout layout = backend::cat_layout(out, dim);
  const int64_t element = static_cast<int64_t>(out.element_size());
  const int64_t row_bytes = out.size(dim) * layout.inner * element;
  std::vector<int64_t> offsets(inputs.size()), chunks(inputs.size());
  // Every byte count and address of the launch, or-ed: its lowest set bit bounds the unit.
  uint64_t sizes_and_addresses =
      static_cast<uint64_t>(row_bytes) | reinterpret_cast<uintptr_t>(out.data_ptr());
  int64_t offset = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    chunks[i] = inputs[i].size(dim) * layout.inner * element;
    offsets[i] = offset;
    offset += chunks[i];
    sizes_and_addresses |= static_cast<uint64_t>(chunks[i]) | static_cast<uint64_t>(offsets[i]) |
                           reinterpret_cast<uintptr_t>(inputs[i].data_ptr());
  }
  DeviceGuard guard(out.device().index);
  for (size_t first = 0; first < inputs.size(); first += kCatInputsPerLaunch) {
    const size_t last = std::min(inputs.size(), first + kCatInputsPerLaunch);
    const auto run = [&](auto unit) {
      launch_cat<decltype(unit)>(out, inputs, first, last, layout.rows, row_bytes, offsets.data(),
                                 chunks.data());
    };
    if (sizes_and_addresses % 16 == 0) {
      run(uint4{});
    } else if (sizes_and_addresses % 8 == 0) {
      run(uint64_t{});
    } else if (sizes_and_addresses % 4 == 0) {
      run(uint32_t{});
    } else if (sizes_and_addresses % 2 == 0) {
      run(uint16_t{});
    } else {
      run(uint8_t{});
    }
  }
}

void device_copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    const int device = dst.device().index;
    DeviceGuard guard(device);
    RCUDA_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(),
                                     static_cast<size_t>(dst.numel()) * dst.element_size(),
                                     cudaMemcpyDeviceToDevice, current_stream(device)));
    return;
  }
  if (dst.dtype() == src.dtype() && dst.dtype() != DType::Complex64 &&
      dst.dtype() != DType::Complex128) {
    backend::dispatch_width(dst.element_size(), [&](auto unit) {
      using U = decltype(unit);
      convert_typed<U, U>(dst, src);
    });
    return;
  }
  const bool typed = backend::dispatch_hot_conversion(
      dst.dtype(), src.dtype(),
      [&](auto d, auto s) { convert_typed<decltype(d), decltype(s)>(dst, src); });
  if (!typed) convert_generic(dst, src);
}

}  // namespace rcuda::cuda
