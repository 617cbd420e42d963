// Other libraries' memory as rcuda tensors, from DLPack managed tensors (rcuda/io/dlpack.h).
// Nothing in a managed tensor is trusted before it is checked: the version, device, dtype,
// shape, strides and the extent of memory they reach, all before the tensor takes ownership.
#include <limits>
#include <memory>
#include <sstream>

#include "io/dlpack_format.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/backend/cuda_graph.h"
#include "rcuda/backend/cuda_stream.h"
#include "rcuda/core/error.h"
#include "rcuda/io/dlpack.h"
#include "rcuda/ops/copy.h"

namespace rcuda::io {

namespace detail {

std::optional<DType> dtype_from_dlpack(DLDataType type) {
  if (type.lanes != 1) return std::nullopt;
  for (const DTypeCode& c : kDTypeCodes)
    if (c.code == type.code && c.bits == type.bits) return c.dtype;
  return std::nullopt;
}

std::string dlpack_dtype_str(DLDataType type) {
  static const char* const kNames[] = {"int",    "uint",    "float", "opaque handle",
                                       "bfloat", "complex", "bool"};
  std::ostringstream out;
  out << "code " << static_cast<int>(type.code);
  if (type.code < sizeof(kNames) / sizeof(kNames[0]))
    out << " (" << kNames[type.code] << ")";
  else if (type.code <= kDLFloat4_e2m1fn)
    out << " (a float8, float6 or float4 type)";
  out << ", " << static_cast<int>(type.bits) << " bits, " << type.lanes << " lane"
      << (type.lanes == 1 ? "" : "s");
  return out.str();
}

}  // namespace detail

namespace {

constexpr int32_t kDLPackCUDAHost = kDLCUDAHost;
constexpr int32_t kMaxDims = 64;  // as the engine's other dim limits: a corrupt ndim is refused

// Note [DLPack streams], at the end of the loan: the producer frees its memory in the order of
// its own stream, which rcuda does not know. The legacy default stream, which PyTorch and CuPy
// use unless told otherwise (and after which every blocking stream runs), waits for rcuda's
// work on the memory; docs/dlpack.md says what other producers' streams ask of users.
void order_release(Device device) noexcept {
  if (!device.is_cuda()) return;
  try {
    if (!cuda::is_capturing(device.index))
      cuda::stream_wait(device.index, 1, cuda::current_stream_handle(device.index));
  } catch (...) {  // a release must not throw: a failed wait leaves it unordered
  }
}

// Calls the producer's deleter once, when the last tensor sharing the memory is freed.
template <typename Managed>
struct Release {
  Device device;
  void operator()(void* managed) const noexcept {
    auto* m = static_cast<Managed*>(managed);
    order_release(device);
    if (m->deleter != nullptr) m->deleter(m);
    detail::imports_released.fetch_add(1, std::memory_order_relaxed);
  }
};

// The tensor described by `dl`, its storage not owning the memory yet; every field checked.
Tensor borrowed_view(const DLTensor& dl, const char* op) {
  const Device device = device_from_dlpack(dl.device.device_type, dl.device.device_id, op);
  const std::optional<DType> dtype = detail::dtype_from_dlpack(dl.dtype);
  RCUDA_CHECK(dtype.has_value(), DTypeError, op, ": obj's dtype (",
              detail::dlpack_dtype_str(dl.dtype),
              ") has no rcuda dtype; rcuda takes bool, uint8, int8, int16, int32, int64, float16, ",
              "bfloat16, float32, float64, complex64, complex128, float8_e4m3fn and float8_e5m2");
  RCUDA_CHECK(dl.ndim >= 0 && dl.ndim <= kMaxDims, ValueError, op, ": obj has ", dl.ndim,
              " dims (0 to ", kMaxDims, " allowed)");
  RCUDA_CHECK(dl.ndim == 0 || dl.shape != nullptr, ValueError, op, ": obj has ", dl.ndim,
              " dims and no shape");
  Shape shape(dl.shape, dl.shape + dl.ndim);
  for (int64_t size : shape)
    RCUDA_CHECK(size >= 0, ValueError, op, ": obj has a negative size in its shape ",
                shape_str(shape));
  const int64_t n = checked_numel(shape, op);
  Strides strides =
      dl.strides == nullptr ? contiguous_strides(shape) : Strides(dl.strides, dl.strides + dl.ndim);
  // The last element's distance from the first bounds the memory the view reaches.
  const size_t element = element_size(*dtype);
  uint64_t last = 0;
  for (int32_t d = 0; d < dl.ndim; ++d) {
    RCUDA_CHECK(strides[d] >= 0 || shape[d] <= 1, ValueError, op, ": obj has the negative stride ",
                strides[d], " in dim ", d, " (strides ", shape_str(strides),
                "), which rcuda tensors cannot have; pass a contiguous copy (in NumPy, ",
                "numpy.ascontiguousarray(obj))");
    if (strides[d] < 0) strides[d] = 0;  // a dim of one element: its stride is never used
    if (n == 0) continue;
    const auto reach = static_cast<uint64_t>(shape[d] - 1) * static_cast<uint64_t>(strides[d]);
    const bool fits = strides[d] == 0 || reach / static_cast<uint64_t>(strides[d]) ==
                                             static_cast<uint64_t>(shape[d] - 1);
    RCUDA_CHECK(fits && last <= std::numeric_limits<uint64_t>::max() - reach, ValueError, op,
                ": obj's shape ", shape_str(shape), " and strides ", shape_str(strides),
                " reach past the address space");
    last += reach;
  }
  RCUDA_CHECK(n == 0 || last < std::numeric_limits<uint64_t>::max() / element, ValueError, op,
              ": obj's shape ", shape_str(shape), " and strides ", shape_str(strides),
              " reach past the address space");
  RCUDA_CHECK(n == 0 || dl.data != nullptr, ValueError, op, ": obj has ", n,
              " elements and a null data pointer");
  const size_t nbytes = n == 0 ? 0 : static_cast<size_t>((last + 1) * element);
  void* first = dl.data == nullptr ? nullptr : static_cast<char*>(dl.data) + dl.byte_offset;

  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(first, nbytes, device, nullptr);
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->dtype = *dtype;
  return Tensor(std::move(impl));
}

template <typename Managed>
Tensor import_managed(Managed* managed, uint64_t flags, bool copy, const char* op) {
  Tensor view = borrowed_view(managed->dl_tensor, op);
  if (copy) {
    // The copy is queued on rcuda's stream, which the producer ordered after its work; the
    // producer may reuse its memory as soon as the deleter returns, so the copy ends first.
    Tensor result = ops::clone(view);
    if (result.device().is_cuda()) cuda::synchronize(result.device().index);
    detail::imported.fetch_add(1, std::memory_order_relaxed);
    Release<Managed>{result.device()}(managed);
    return result;
  }
  RCUDA_CHECK(!(flags & DLPACK_FLAG_BITMASK_READ_ONLY), ValueError, op,
              ": obj is read-only (DLPack's read-only flag: a NumPy array with writeable=False, a "
              "JAX array, ...) and rcuda tensors are writable; pass copy = TRUE for a copy");
  // From here nothing throws: the storage owns the managed tensor.
  std::shared_ptr<void> owner(managed, Release<Managed>{view.device()});
  auto impl = std::make_shared<TensorImpl>(*view.impl());
  impl->storage = std::make_shared<Storage>(view.storage()->data(), view.storage()->nbytes(),
                                            view.device(), std::move(owner));
  detail::imported.fetch_add(1, std::memory_order_relaxed);
  return Tensor(std::move(impl));
}

}  // namespace

Device device_from_dlpack(int32_t device_type, int32_t device_id, const char* op) {
  if (device_type == kDLPackCPU || device_type == kDLPackCUDAHost) return Device();
  RCUDA_CHECK(device_type == kDLPackCUDA, DeviceError, op, ": obj is on DLPack device type ",
              device_type, " (device ", device_id,
              "); rcuda takes 1 (CPU), 2 (CUDA) and 3 (CUDA host memory)");
  RCUDA_CHECK(cuda::is_built(), DeviceError, op,
              ": obj is on a CUDA device and rcuda was built without CUDA");
  RCUDA_CHECK(device_id >= 0 && device_id < cuda::device_count(), DeviceError, op,
              ": obj is on CUDA device ", device_id, " and rcuda sees ", cuda::device_count(),
              " CUDA device(s)");
  return Device(DeviceType::CUDA, device_id);
}

std::optional<int64_t> consumer_stream(Device device) {
  if (!device.is_cuda()) return std::nullopt;
  // The producer would make the captured stream wait for its event, pulling its work into the
  // graph.
  RCUDA_CHECK(!cuda::is_capturing(device.index), ValueError, "from_dlpack: cannot take memory on ",
              device.str(), " while rcuda captures a CUDA graph there");
  const cuda::StreamHandle handle = cuda::current_stream_handle(device.index);
  // 0 would be refused by producers as ambiguous: the legacy default stream is 1 in the protocol.
  return handle == 0 ? 1 : static_cast<int64_t>(handle);
}

Tensor from_dlpack(DLManagedTensorVersioned* managed, bool copy, const char* op) {
  RCUDA_CHECK(managed != nullptr, ValueError, op, ": the DLPack capsule holds a null pointer");
  RCUDA_CHECK(managed->version.major == DLPACK_MAJOR_VERSION, ValueError, op, ": obj is a DLPack ",
              managed->version.major, ".", managed->version.minor,
              " tensor, and rcuda reads DLPack ", DLPACK_MAJOR_VERSION, ".x");
  return import_managed(managed, managed->flags, copy, op);
}

Tensor from_dlpack(DLManagedTensor* managed, bool copy, const char* op) {
  RCUDA_CHECK(managed != nullptr, ValueError, op, ": the DLPack capsule holds a null pointer");
  return import_managed(managed, 0, copy, op);
}

}  // namespace rcuda::io
