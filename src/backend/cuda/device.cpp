// Devices: count, properties, current device, versions. Counting never throws, so a CUDA build
// runs on machines with no driver or no GPU and reports why.
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "backend/cuda/device_errors.h"
#include "backend/cuda/graph_capture.h"
#include "rcuda/backend/cuda.h"
#include "runtime.h"

namespace rcuda::cuda {
namespace {

struct Availability {
  int count = 0;
  std::string reason;
};

const Availability& availability() {
  static const Availability a = [] {
    Availability r;
    const cudaError_t status = cudaGetDeviceCount(&r.count);
    if (status != cudaSuccess) {
      cudaGetLastError();
      r.count = 0;
      switch (status) {
        case cudaErrorNoDevice:
          r.reason = "no CUDA device is visible";
          break;
        case cudaErrorInsufficientDriver:
          r.reason =
              "the NVIDIA driver is missing or older than the CUDA runtime rcuda was built with";
          break;
        default:
          r.reason = std::string("CUDA initialisation failed: ") + cudaGetErrorString(status);
      }
    } else if (r.count == 0) {
      r.reason = "no CUDA device is visible";
    }
    return r;
  }();
  return a;
}

}  // namespace

bool is_built() { return true; }
int device_count() { return availability().count; }
std::string unavailable_reason() { return availability().reason; }

int runtime_version() {
  int v = 0;
  return cudaRuntimeGetVersion(&v) == cudaSuccess ? v : 0;
}

int driver_version() {
  int v = 0;
  return cudaDriverGetVersion(&v) == cudaSuccess ? v : 0;
}

DeviceProperties properties(int device) {
  check_device_index(device, "cuda_get_device_properties");
  cudaDeviceProp p{};
  RCUDA_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  DeviceProperties out;
  out.name = p.name;
  out.major = p.major;
  out.minor = p.minor;
  out.total_memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
  out.multiprocessor_count = p.multiProcessorCount;
  out.l2_cache_bytes = p.l2CacheSize;
  char uuid[64];
  const unsigned char* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
  std::snprintf(uuid, sizeof uuid,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
  out.uuid = uuid;
  char pci[32];
  std::snprintf(pci, sizeof pci, "%08x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  out.pci_bus_id = pci;
  return out;
}

int current_device() {
  int d = 0;
  RCUDA_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void set_device(int device) {
  check_device_index(device, "cuda_set_device");
  RCUDA_CUDA_CHECK(cudaSetDevice(device));
}

void synchronize(int device) {
  check_device_index(device, "cuda_synchronize");
  check_not_capturing(device, "cuda_synchronize");
  RCUDA_CUDA_CHECK(cudaStreamSynchronize(current_stream(device)));
  check_device_errors(device);  // Note [Deferred device errors]
}

double time_ms(int device, const std::function<void()>& work) {
  check_device_index(device, "time_ms");
  check_not_capturing(device, "time_ms");
  DeviceGuard guard(device);
  cudaEvent_t start = nullptr, stop = nullptr;
  RCUDA_CUDA_CHECK(cudaEventCreate(&start));
  RCUDA_CUDA_CHECK(cudaEventCreate(&stop));
  float ms = 0;
  try {
    RCUDA_CUDA_CHECK(cudaEventRecord(start, current_stream(device)));
    work();
    RCUDA_CUDA_CHECK(cudaEventRecord(stop, current_stream(device)));
    RCUDA_CUDA_CHECK(cudaEventSynchronize(stop));
    RCUDA_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  check_device_errors(device);
  return ms;
}

namespace {
std::atomic<bool> tf32_allowed{false};
}
void set_allow_tf32(bool allow) { tf32_allowed = allow; }
bool allow_tf32() { return tf32_allowed; }

}  // namespace rcuda::cuda
