// Note [Deferred device errors] (device_errors.h).
#include "backend/cuda/device_errors.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "backend/cuda/runtime.h"
#include "backend/indexing.h"
#include "backend/once.h"

namespace rcuda::cuda {
namespace {

struct Records {
  backend::OnceValue<DeviceErrorRecord*> record[kMaxDevices];  // Note [Made once, read often]
};

Records& records() {
  static Records* r = new Records();  // never destroyed: kernels may still hold the pointers
  return *r;
}

bool sync_checks() {
  static const bool on = [] {
    const char* v = std::getenv("RCUDA_SYNC_DEVICE_CHECKS");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

}  // namespace

DeviceErrorRecord* device_error_record(int device) {
  check_device_index(device, "device error record");
  return records().record[device].get([&] {
    DeviceGuard guard(device);
    void* p = nullptr;
    // Mapped: kernels write it through the same address (unified addressing); portable: every
    // context may use it.
    RCUDA_CUDA_CHECK(
        cudaHostAlloc(&p, sizeof(DeviceErrorRecord), cudaHostAllocMapped | cudaHostAllocPortable));
    std::memset(p, 0, sizeof(DeviceErrorRecord));
    return static_cast<DeviceErrorRecord*>(p);
  });
}

void check_device_errors(int device) {
  Records& r = records();
  DeviceErrorRecord* record =
      device >= 0 && device < kMaxDevices ? r.record[device].peek() : nullptr;
  if (record == nullptr) return;  // nothing launched that could report
  if (*reinterpret_cast<volatile unsigned long long*>(&record->ready) == 0) return;
  const DeviceErrorRecord seen = *record;
  record->ready = 0;
  record->claimed = 0;  // the next kernel may report again
  const char* op = reinterpret_cast<const char*>(seen.op);
  const std::string what =
      seen.kind == DeviceErrorRecord::kClassTarget
          ? detail::concat(op, ": target ", seen.index, " is out of bounds for ", seen.size,
                           " classes (row ", seen.dim, ")")
          : backend::index_out_of_bounds(op, seen.index, seen.dim, seen.size).what();
  if (sync_checks()) throw IndexError(what);
  throw IndexError(what + " (found on cuda:" + std::to_string(device) +
                   " by an earlier launch and raised at this synchronisation; "
                   "RCUDA_SYNC_DEVICE_CHECKS=1 raises it at the op)");
}

void check_device_errors_after_launch(int device) {
  if (!sync_checks()) return;
  RCUDA_CUDA_CHECK(cudaStreamSynchronize(current_stream(device)));
  check_device_errors(device);
}

}  // namespace rcuda::cuda
