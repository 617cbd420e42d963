// sort on CUDA tensors through the host: the rows are copied to the CPU, sorted there by the CPU
// backend's std::stable_sort, and the values and indices copied back.
//
// Note [CUDA sort through the host]
// A CUB segmented sort (cub::DeviceSegmentedSort over one segment per row) was written for this
// primitive, but on the H200 it disagreed with the CPU on rows holding NaN or infinities (and on
// some topk results), so it is not built: correct results first. This path is exact (the CPU's
// sort, which the tests check against std::sort in double), but it waits for the device and
// moves each sorted tensor across PCIe twice, and it cannot be captured in a CUDA graph (the
// copy to the host raises there, naming the op). The sorting ops (sort, argsort, topk, kthvalue,
// median, mode, quantile, unique) therefore run correctly on CUDA tensors but at the host's
// speed; bringing the device sort back, checked against this path, is the next step.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/runtime.h"

namespace rcuda::cuda {

void CudaBackend::sort(const Tensor& values, const Tensor& indices, const Tensor& in,
                       bool descending) {
  const Device host;
  DeviceGuard guard(in.device().index);
  const Tensor host_in = Tensor::empty(in.shape(), in.dtype(), host);
  const Tensor host_values = Tensor::empty(values.shape(), values.dtype(), host);
  const Tensor host_indices = Tensor::empty(indices.shape(), indices.dtype(), host);
  copy(host_in, in);
  backend_for(host).sort(host_values, host_indices, host_in, descending);
  copy(values, host_values);
  copy(indices, host_indices);
}

}  // namespace rcuda::cuda
