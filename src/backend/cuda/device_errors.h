// Errors that kernels find in their data (an index out of range) and the host raises later.
//
// Note [Deferred device errors]
// A kernel cannot throw, and reading a flag back after each launch would synchronise the host
// with the device on every gather, scatter, embedding and loss: the step could no longer run
// ahead of the GPU, and no such op could be captured in a CUDA graph. Instead each device has one
// error record in mapped pinned host memory. A kernel that meets a bad index never dereferences
// it, and its first such thread fills the record (the op's name, the index, the dim and its size).
// The host reads the record, without any CUDA call, at the next synchronisation with the device
// (synchronize, a copy to the host, item()) and at the start of the next op that can report one,
// and raises the IndexError there, naming the op where it happened; the record is then cleared
// and the process stays usable. RCUDA_SYNC_DEVICE_CHECKS=1 makes every such op synchronise and
// raise at the op itself, for debugging (as CUDA_LAUNCH_BLOCKING does for launch errors).
#pragma once

#include <cstdint>

namespace rcuda::cuda {

// One per device, written by kernels (kernels/device_errors.cuh) and read by the host.
struct DeviceErrorRecord {
  enum Kind : long long { kIndex = 0, kClassTarget = 1 };
  unsigned long long claimed;  // the first reporting thread sets it (atomicCAS), others return
  unsigned long long op;       // the op's name: the address of a string literal
  long long kind;
  long long index, dim, size;  // kClassTarget: the target, its row, the number of classes
  unsigned long long ready;    // set last, after a system-wide fence, when the fields are written
};

// The device's record (its address is valid on the host and on the device, and never changes,
// so a captured graph's kernels report through it too).
DeviceErrorRecord* device_error_record(int device);

// Throws the IndexError a kernel on `device` reported since the last check, and clears it.
// Costs a read of host memory when there is none.
void check_device_errors(int device);

// After the launch of a kernel that may report: with RCUDA_SYNC_DEVICE_CHECKS=1, synchronises
// the current stream and raises a report at once; otherwise nothing.
void check_device_errors_after_launch(int device);

}  // namespace rcuda::cuda
