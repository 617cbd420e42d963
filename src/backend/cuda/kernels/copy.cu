// Same-device copies with dtype conversion and any strides.
#include "backend/cuda/kernels/copy.h"
#include "backend/cuda/kernels/launch.cuh"
#include "backend/dispatch.h"

namespace rcuda::cuda {

namespace {

template <typename D, typename S>
void convert_typed(const Tensor& dst, const Tensor& src) {
  launch_map<D, S, 1>(dst, {src}, [] __device__(S v) { return backend::convert<D>(v); });
}

}  // namespace

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
  backend::dispatch_with_float8(dst.dtype(), [&](auto dst_tag) {
    using D = decltype(dst_tag);
    backend::dispatch_with_float8(
        src.dtype(), [&](auto src_tag) { convert_typed<D, decltype(src_tag)>(dst, src); });
  });
}

}  // namespace rcuda::cuda
