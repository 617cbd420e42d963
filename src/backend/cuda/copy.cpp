// Copies that involve a GPU: within a device (kernels/copy.cu), between devices (peer copies),
// and between host and device. Host transfers move the source's bytes as they are and convert
// dtypes on the GPU, where conversion is cheap; pinned host memory makes them asynchronous.
#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_errors.h"
#include "backend/cuda/graph_capture.h"
#include "backend/cuda/kernels/copy.h"
#include "backend/cuda/pinned.h"
#include "backend/cuda/runtime.h"

namespace rcuda::cuda {
namespace {

size_t nbytes(const Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

Tensor host_contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = Tensor::empty(t.shape(), t.dtype(), Device(DeviceType::CPU));
  backend_for(Device(DeviceType::CPU)).copy(out, t);
  return out;
}

void host_to_device(const Tensor& dst, const Tensor& src) {
  const int device = dst.device().index;
  // A captured copy would read the host buffer again at every replay, long after it is gone.
  check_not_capturing(device, "copy from the host");
  DeviceGuard guard(device);
  const Tensor host = host_contiguous(src);
  const bool direct = dst.is_contiguous() && dst.dtype() == src.dtype();
  const Tensor staging = direct ? dst : Tensor::empty(src.shape(), src.dtype(), dst.device());
  // From pageable memory the call returns once the bytes are staged, so `host` may be freed.
  RCUDA_CUDA_CHECK(cudaMemcpyAsync(staging.data_ptr(), host.data_ptr(), nbytes(host),
                                   cudaMemcpyHostToDevice, current_stream(device)));
  // From pinned memory the copy is still running: its block must not be reused before it ends.
  record_pinned_use(host.data_ptr(), current_stream(device));
  if (!direct) device_copy(dst, staging);
}

void device_to_host(const Tensor& dst, const Tensor& src) {
  const int device = src.device().index;
  check_not_capturing(device, "copy to the host");
  DeviceGuard guard(device);
  Tensor from = src;
  if (!src.is_contiguous() || src.dtype() != dst.dtype()) {
    from = Tensor::empty(src.shape(), dst.dtype(), src.device());
    device_copy(from, src);
  }
  const Tensor host = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype());
  RCUDA_CUDA_CHECK(cudaMemcpyAsync(host.data_ptr(), from.data_ptr(), nbytes(from),
                                   cudaMemcpyDeviceToHost, current_stream(device)));
  RCUDA_CUDA_CHECK(cudaStreamSynchronize(current_stream(device)));
  check_device_errors(device);  // Note [Deferred device errors]
  if (!host.is_same(dst)) backend_for(Device(DeviceType::CPU)).copy(dst, host);
}

void device_to_device(const Tensor& dst, const Tensor& src) {
  const int to = dst.device().index, from = src.device().index;
  check_not_capturing(from, "copy between devices");
  check_not_capturing(to, "copy between devices");
  Tensor packed = src;
  if (!src.is_contiguous()) {
    packed = Tensor::empty(src.shape(), src.dtype(), src.device());
    device_copy(packed, src);
  }
  // The destination stream must not start before the source's pending work is done.
  {
    DeviceGuard guard(from);
    RCUDA_CUDA_CHECK(cudaStreamSynchronize(current_stream(from)));
    check_device_errors(from);
  }
  DeviceGuard guard(to);
  const bool direct = dst.is_contiguous() && dst.dtype() == src.dtype();
  const Tensor landing = direct ? dst : Tensor::empty(src.shape(), src.dtype(), dst.device());
  RCUDA_CUDA_CHECK(cudaMemcpyPeerAsync(landing.data_ptr(), to, packed.data_ptr(), from,
                                       nbytes(packed), current_stream(to)));
  if (!direct) device_copy(dst, landing);
  // `packed` may be a temporary on the source device: keep it alive until the copy is done.
  RCUDA_CUDA_CHECK(cudaStreamSynchronize(current_stream(to)));
  check_device_errors(to);
}

}  // namespace

void CudaBackend::cat(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim) {
  device_cat(out, inputs, dim);
}

void CudaBackend::copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  const Device d = dst.device(), s = src.device();
  if (d.is_cuda() && s.is_cuda()) {
    if (d.index == s.index) {
      DeviceGuard guard(d.index);
      device_copy(dst, src);
    } else {
      device_to_device(dst, src);
    }
  } else if (d.is_cuda()) {
    host_to_device(dst, src);
  } else {
    device_to_host(dst, src);
  }
}

void CudaBackend::synchronize(int device_index) {
  check_device_index(device_index, "synchronize");
  check_not_capturing(device_index, "synchronize");
  DeviceGuard guard(device_index);
  RCUDA_CUDA_CHECK(cudaStreamSynchronize(current_stream(device_index)));
  check_device_errors(device_index);
}

}  // namespace rcuda::cuda
