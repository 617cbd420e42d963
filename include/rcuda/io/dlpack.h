// DLPack: tensors shared with other libraries (PyTorch, NumPy, CuPy, JAX) without a copy, as
// DLPack 1.1's managed tensors (third_party/dlpack). docs/dlpack.md tells the whole design; the
// Python half of the protocol (capsules, __dlpack__) is the R package's (r/inst/python).
//
// Note [DLPack ownership]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A managed tensor is a loan: whoever holds it calls its deleter exactly once, when done.
//  - Export: the managed tensor holds a reference on the tensor's storage, so the memory lives
//    until both rcuda's last tensor and the consumer are done, whichever lets go first; its
//    deleter drops that reference (and is safe to call from any thread).
//  - Import: on success the tensor owns the managed tensor and calls the producer's deleter when
//    the last rcuda tensor sharing the memory is freed; when the import throws, the managed
//    tensor stays the caller's, untouched, so that its owner (an unconsumed capsule) can still
//    call the deleter.
//
// Note [DLPack streams]
// ~~~~~~~~~~~~~~~~~~~~~
// Streams are integers as the Python array API passes them to __dlpack__(stream=): -1 asks for
// no ordering, 1 is CUDA's legacy default stream, 2 its per-thread default stream, anything
// above 2 a cudaStream_t (0 is refused as ambiguous). The consumer passes its stream; the
// producer makes that stream wait for the work it has queued on the memory (an event, never a
// host synchronisation). CPU tensors take no stream.
#pragma once

#include <cstdint>
#include <optional>

#include "rcuda/tensor/tensor.h"

// dlpack.h's structs, declared here so that users of this header need not have dlpack.h.
struct DLManagedTensor;
struct DLManagedTensorVersioned;

namespace rcuda::io {

// DLPack's device codes for rcuda's devices (kDLCPU, kDLCUDA).
constexpr int32_t kDLPackCPU = 1;
constexpr int32_t kDLPackCUDA = 2;

// (device_type, device_id) as __dlpack_device__ returns them.
struct DLPackDevice {
  int32_t type = kDLPackCPU;
  int32_t id = 0;
};
DLPackDevice dlpack_device(Device device);
// The rcuda device for a DLPack device: the CPU for kDLCPU and kDLCUDAHost (page-locked host
// memory), a CUDA device for kDLCUDA. DeviceError naming `op` and the value for any other device
// type, a CUDA device rcuda does not see, or CUDA in a build without it.
Device device_from_dlpack(int32_t device_type, int32_t device_id, const char* op);

// ValueError naming `op` unless `t` can be exported: defined, and not requiring grad (its memory
// carries no gradient: export t$detach(), as PyTorch asks).
void check_exportable(const Tensor& t, const char* op);

// How to export (Note [DLPack streams]).
struct DLPackExportOptions {
  // The consumer's stream; nullopt (Python's None) means the legacy default stream on CUDA.
  std::optional<int64_t> stream;
  // Export a copy of the tensor (the consumer asked for one: __dlpack__(copy=True)); the
  // versioned struct then carries DLPACK_FLAG_BITMASK_IS_COPIED.
  bool copy = false;
};

// A new managed tensor over t's memory (its shape, strides in elements, dtype and device; the
// data pointer is t's first element and byte_offset 0, as PyTorch and NumPy export, for
// consumers that ignore byte_offset). Note [DLPack ownership]: the caller owns the result.
DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t, const DLPackExportOptions& options);
DLManagedTensor* to_dlpack(const Tensor& t, const DLPackExportOptions& options);

// The stream a consumer on `device` passes to the producer's __dlpack__: rcuda's current stream
// there (Note [DLPack streams]); nullopt for the CPU.
std::optional<int64_t> consumer_stream(Device device);

// A tensor over a managed tensor's memory, with its shape, strides and byte offset (Note
// [DLPack ownership] for who owns what, and when). Refused with an error naming `op`: another
// major version, a dtype or device rcuda does not have, negative strides, and a read-only tensor
// (DLPACK_FLAG_BITMASK_READ_ONLY) unless `copy`. With `copy` the result is a contiguous copy and
// the producer's deleter has run before this returns.
Tensor from_dlpack(DLManagedTensorVersioned* managed, bool copy, const char* op = "from_dlpack");
Tensor from_dlpack(DLManagedTensor* managed, bool copy, const char* op = "from_dlpack");

// Ends a loan that was never taken: calls the managed tensor's deleter if it has one (a DLPack
// capsule destroyed unconsumed does this; nullptr is allowed).
void delete_managed(DLManagedTensorVersioned* managed) noexcept;
void delete_managed(DLManagedTensor* managed) noexcept;

// Managed tensors made and released so far, for tests of Note [DLPack ownership]: exports made
// and their deleters called, imports taken and the producers' deleters called.
struct DLPackCounts {
  int64_t exported = 0, exports_deleted = 0;
  int64_t imported = 0, imports_released = 0;
};
DLPackCounts dlpack_counts();

}  // namespace rcuda::io
