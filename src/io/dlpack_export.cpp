// Tensors lent to other libraries as DLPack managed tensors (rcuda/io/dlpack.h).
#include <memory>
#include <vector>

#include "io/dlpack_format.h"
#include "rcuda/backend/cuda_graph.h"
#include "rcuda/backend/cuda_stream.h"
#include "rcuda/core/error.h"
#include "rcuda/io/dlpack.h"
#include "rcuda/ops/copy.h"

namespace rcuda::io {

namespace detail {

DLDataType dlpack_dtype(DType dtype) {
  for (const DTypeCode& c : kDTypeCodes)
    if (c.dtype == dtype) return DLDataType{c.code, c.bits, 1};
  throw_unknown_dtype("to_dlpack", dtype);
}

}  // namespace detail

namespace {

// What a managed tensor keeps for its consumer: a reference on the memory (the tensor), the
// shape and strides its DLTensor points into, and the consumer's stream when the memory's
// release must wait for it.
struct ExportContext {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  std::optional<cuda::StreamHandle> consumer_stream;
};

template <typename Managed>
struct Export {
  Managed managed{};
  ExportContext context;
};

// Note [DLPack streams], at the end of the loan: memory that goes back to rcuda's pool is
// reused in the order of rcuda's stream, while the consumer's last work on it may still be queued
// on its own stream. So rcuda's stream waits for the consumer's, where that stream is one that
// cannot have been destroyed since (the default streams, 1 and 2, which PyTorch and CuPy pass
// unless the user made a stream current); docs/dlpack.md says what the other case asks of users.
void order_release(const ExportContext& context) noexcept {
  if (!context.consumer_stream) return;
  try {
    const int device = context.tensor.device().index;
    if (!cuda::is_capturing(device))
      cuda::stream_wait(device, cuda::current_stream_handle(device), *context.consumer_stream);
  } catch (...) {  // a deleter must not throw: a failed wait leaves the release unordered
  }
}

template <typename Managed>
void delete_export(Managed* self) noexcept {
  if (self == nullptr) return;
  auto* owner = static_cast<Export<Managed>*>(self->manager_ctx);
  order_release(owner->context);
  delete owner;
  detail::exports_deleted.fetch_add(1, std::memory_order_relaxed);
}

// The consumer's stream waits for rcuda's work on t's memory (Note [DLPack streams]); returns
// the stream that the release must wait for, if any.
std::optional<cuda::StreamHandle> order_for_consumer(const Tensor& t,
                                                     std::optional<int64_t> stream) {
  if (t.device().is_cpu()) {
    RCUDA_CHECK(!stream || *stream == -1, ValueError, "__dlpack__: stream must be None for a CPU ",
                "tensor, got ", *stream);
    return std::nullopt;
  }
  const int64_t consumer = stream.value_or(1);  // None: the legacy default stream
  RCUDA_CHECK(consumer != 0, ValueError,
              "__dlpack__: stream 0 is ambiguous for CUDA; pass 1 for the legacy default stream, 2 "
              "for the per-thread default stream, or a stream's handle");
  RCUDA_CHECK(consumer >= -1, ValueError, "__dlpack__: stream must be -1, 1, 2 or a CUDA stream ",
              "handle, got ", consumer);
  if (consumer == -1) return std::nullopt;  // the consumer orders its work itself
  const int device = t.device().index;
  const auto handle = static_cast<cuda::StreamHandle>(consumer);
  cuda::stream_wait(device, handle, cuda::current_stream_handle(device));
  if (handle == 1 || handle == 2) return handle;
  return std::nullopt;
}

template <typename Managed>
Export<Managed>* make_export(const Tensor& t, const DLPackExportOptions& options) {
  check_exportable(t, "__dlpack__");
  auto owner = std::make_unique<Export<Managed>>();
  ExportContext& context = owner->context;
  context.tensor = options.copy ? ops::clone(t) : t.alias();
  context.shape = context.tensor.shape();
  context.strides = context.tensor.strides();
  context.consumer_stream = order_for_consumer(context.tensor, options.stream);

  DLTensor& dl = owner->managed.dl_tensor;
  const DLPackDevice device = dlpack_device(context.tensor.device());
  dl.data = context.tensor.data_ptr();
  dl.device = DLDevice{static_cast<DLDeviceType>(device.type), device.id};
  dl.ndim = static_cast<int32_t>(context.shape.size());
  dl.dtype = detail::dlpack_dtype(context.tensor.dtype());
  dl.shape = context.shape.data();
  dl.strides = context.strides.data();
  dl.byte_offset = 0;  // data is the first element (the header's note on consumers)
  owner->managed.manager_ctx = owner.get();
  owner->managed.deleter = &delete_export<Managed>;
  detail::exported.fetch_add(1, std::memory_order_relaxed);
  return owner.release();
}

}  // namespace

DLPackDevice dlpack_device(Device device) {
  if (device.is_cuda()) return {kDLPackCUDA, device.index};
  return {kDLPackCPU, 0};
}

void check_exportable(const Tensor& t, const char* op) {
  RCUDA_CHECK(t.defined(), ValueError, op, ": the tensor is undefined");
  RCUDA_CHECK(!t.requires_grad(), ValueError, op,
              ": the tensor requires grad, and the memory shared through DLPack carries no ",
              "gradient; share x$detach() instead");
}

DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t, const DLPackExportOptions& options) {
  auto* owner = make_export<DLManagedTensorVersioned>(t, options);
  owner->managed.version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  owner->managed.flags = options.copy ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
  return &owner->managed;
}

DLManagedTensor* to_dlpack(const Tensor& t, const DLPackExportOptions& options) {
  return &make_export<DLManagedTensor>(t, options)->managed;
}

void delete_managed(DLManagedTensorVersioned* managed) noexcept {
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

void delete_managed(DLManagedTensor* managed) noexcept {
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

DLPackCounts dlpack_counts() {
  DLPackCounts counts;
  counts.exported = detail::exported.load();
  counts.exports_deleted = detail::exports_deleted.load();
  counts.imported = detail::imported.load();
  counts.imports_released = detail::imports_released.load();
  return counts;
}

}  // namespace rcuda::io
