// The device side of Note [Deferred device errors] (backend/cuda/device_errors.h).
#pragma once

#include "backend/cuda/device_errors.h"

namespace rcuda::cuda {

// Records that `index` is out of bounds for `dim` of size `size` in `op`, unless a report is
// already pending. The caller then skips the element. `op` must be a string literal of host
// code passed in as a kernel argument: the host reads it, and a literal written in device code
// lives in device memory.
__device__ __forceinline__ void report_index_error(
    DeviceErrorRecord* record, const char* op, int64_t index, int64_t dim, int64_t size,
    DeviceErrorRecord::Kind kind = DeviceErrorRecord::kIndex) {
  if (atomicCAS(&record->claimed, 0ull, 1ull) != 0ull) return;
  record->op = reinterpret_cast<unsigned long long>(op);
  record->kind = kind;
  record->index = index;
  record->dim = dim;
  record->size = size;
  __threadfence_system();
  *reinterpret_cast<volatile unsigned long long*>(&record->ready) = 1ull;
}

// Records that class target `target` of `row` is outside [0, classes) in `op`.
__device__ __forceinline__ void report_target_error(DeviceErrorRecord* record, const char* op,
                                                    int64_t target, int64_t row, int64_t classes) {
  report_index_error(record, op, target, row, classes, DeviceErrorRecord::kClassTarget);
}

}  // namespace rcuda::cuda
