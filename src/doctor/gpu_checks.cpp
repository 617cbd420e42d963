// The CUDA part of the doctor (CUDA builds): devices, then per device the checks that launch
// work. Each check runs through rcuda's own public API where one exists (so it tests what
// users run) and through the CUDA runtime only for what rcuda does not expose (contexts).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>

#include "doctor_internal.h"
#include "rcuda/autograd/api.h"
#include "rcuda/backend/backend.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/core/error.h"

#ifdef RCUDA_HAS_CUDNN_HEADERS
#include <cudnn_version.h>
#endif
#ifndef RCUDA_CUDA_ARCHITECTURES
#define RCUDA_CUDA_ARCHITECTURES ""
#endif
#ifndef RCUDA_CUDA_TOOLKIT_VERSION
#define RCUDA_CUDA_TOOLKIT_VERSION ""
#endif

namespace rcuda::doctor::detail {
namespace {

const Device cuda_device(int i) { return Device(DeviceType::CUDA, i); }

std::string format(const char* fmt, double a, double b = 0) {
  char buf[200];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  return buf;
}

// Runs `body`; an exception becomes a FAIL naming it, with `fix`.
Check guarded(const std::string& id, int device, const std::string& fix,
              const std::function<Check()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::string hint = fix;
    if (std::strstr(e.what(), "NoKernelImage") || std::strstr(e.what(), "no kernel image"))
      hint =
          "rcuda has no code for this GPU: rebuild with CMAKE_CUDA_ARCHITECTURES including it "
          "(e.g. make clean && make CMAKE_FLAGS=-DCMAKE_CUDA_ARCHITECTURES=native)";
    return make_check(id, check_title(id), Status::Fail, e.what(), hint, device);
  }
}

Check architecture_check(int d, const cuda::DeviceProperties& p) {
  const ArchitectureCoverage c = architecture_coverage(RCUDA_CUDA_ARCHITECTURES, p.major, p.minor);
  const std::string cc =
      "compute capability " + std::to_string(p.major) + "." + std::to_string(p.minor);
  const std::string fix = "rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(p.major) +
                          std::to_string(p.minor) + " (or native) added";
  if (!c.known)
    return make_check("architecture", check_title("architecture"), Status::Warn,
                      cc + ": " + c.detail, fix, d);
  if (c.machine_code)
    return make_check("architecture", check_title("architecture"), Status::Pass,
                      cc + ": " + c.detail, "", d);
  if (c.ptx)
    return make_check("architecture", check_title("architecture"), Status::Warn,
                      cc + ": " + c.detail, fix + " to skip JIT compilation at start-up", d);
  return make_check("architecture", check_title("architecture"), Status::Fail, cc + ": " + c.detail,
                    fix, d);
}

Check context_check(int d) {
  cudaError_t st = cudaSetDevice(d);
  if (st == cudaSuccess) st = cudaFree(nullptr);  // creates the primary context
  if (st == cudaSuccess) st = cudaDeviceSynchronize();
  if (st != cudaSuccess) {
    cudaGetLastError();
    return make_check("context", check_title("context"), Status::Fail,
                      std::string(cudaGetErrorName(st)) + ": " + cudaGetErrorString(st),
                      "check `nvidia-smi`: the GPU may be in exclusive-process mode, lost (Xid), "
                      "or need a reboot after a driver update",
                      d);
  }
  size_t free_bytes = 0, total = 0;
  cudaMemGetInfo(&free_bytes, &total);
  return make_check("context", check_title("context"), Status::Pass,
                    format("context created; %.1f of %.1f GiB free", free_bytes / 1073741824.0,
                           total / 1073741824.0),
                    "", d);
}

Check kernel_check(int d) {
  // 2k+1 is exact in float32 for k < 2^23; an odd length exercises the kernels' tails.
  const int64_t n = (int64_t{1} << 20) + 3;
  const Tensor x = arange(0, n, 1, DType::Float32, cuda_device(d));
  const Tensor y = contiguous(to(add(mul(x, 2), 1), Device()));
  const float* p = y.data<float>();
  for (int64_t k = 0; k < n; ++k)
    if (p[k] != float(2 * k + 1))
      return make_check("kernel", check_title("kernel"), Status::Fail,
                        "element " + std::to_string(k) + " is " + std::to_string(p[k]) +
                            ", expected " + std::to_string(2 * k + 1),
                        "report this with `rcuda doctor --json` attached", d);
  return make_check("kernel", check_title("kernel"), Status::Pass,
                    "arange, mul, add over " + std::to_string(n) + " elements exact", "", d);
}

Check gemm_check(int d) {
  const bool tf32 = cuda::allow_tf32();
  cuda::set_allow_tf32(false);
  manual_seed(7);
  const Tensor a = randn({257, 129}), b = randn({129, 65});
  const Tensor ref = contiguous(matmul(a, b));
  Tensor got;
  try {
    got = contiguous(to(matmul(to(a, cuda_device(d)), to(b, cuda_device(d))), Device()));
  } catch (...) {
    cuda::set_allow_tf32(tf32);
    throw;
  }
  cuda::set_allow_tf32(tf32);
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    worst = std::max(worst, std::fabs(double(got.data<float>()[i]) - ref.data<float>()[i]));
    scale = std::max(scale, std::fabs(double(ref.data<float>()[i])));
  }
  const double rel = worst / std::max(scale, 1e-30);
  const std::string detail =
      format("257x129x65 float32 (TF32 off): max |CUDA - CPU| / max |CPU| = %.2e", rel);
  if (rel < 1e-5)
    return make_check("cublas_gemm", check_title("cublas_gemm"), Status::Pass, detail, "", d);
  return make_check("cublas_gemm", check_title("cublas_gemm"), Status::Fail, detail,
                    "cuBLAS gives wrong results: check that the cuBLAS found matches the toolkit "
                    "rcuda was built with (see libraries above)",
                    d);
}

Check round_trip_check(int d) {
  const int64_t n = (int64_t{8} << 20) + 13;
  std::vector<uint8_t> host(static_cast<size_t>(n));
  std::mt19937_64 rng(12345);
  for (auto& b : host) b = static_cast<uint8_t>(rng());
  const Tensor h = from_data(host.data(), {n}, DType::UInt8);
  const Tensor back = contiguous(to(to(h, cuda_device(d)), Device()));
  const Tensor pinned = cuda::pin_memory(h);
  const Tensor back_pinned = contiguous(to(to(pinned, cuda_device(d)), Device()));
  const bool same = std::memcmp(back.data_ptr(), host.data(), host.size()) == 0;
  const bool same_pinned = std::memcmp(back_pinned.data_ptr(), host.data(), host.size()) == 0;
  const std::string detail = std::to_string(n) + " random bytes, pageable " +
                             (same ? "identical" : "DIFFERENT") + ", pinned " +
                             (same_pinned ? "identical" : "DIFFERENT");
  if (same && same_pinned)
    return make_check("round_trip", check_title("round_trip"), Status::Pass, detail, "", d);
  return make_check(
      "round_trip", check_title("round_trip"), Status::Fail, detail,
      "copies corrupt data: check the GPU with `nvidia-smi -q -d ECC` and dmesg for Xid errors", d);
}

Check pool_check(int d) {
  const int64_t bytes = int64_t{64} << 20;
  cuda::synchronize(d);
  const MemoryStats before = cuda::memory_stats(d);
  MemoryStats during;
  {
    const Tensor t = empty({bytes}, {DType::UInt8, cuda_device(d)});
    fill_(t, 7);
    cuda::synchronize(d);
    during = cuda::memory_stats(d);
  }
  cuda::synchronize(d);
  const MemoryStats after = cuda::memory_stats(d);
  const bool grew = during.allocated_bytes - before.allocated_bytes >= bytes &&
                    during.allocation_count > before.allocation_count;
  const bool freed =
      after.allocated_bytes == before.allocated_bytes && after.free_count > before.free_count;
  const std::string detail = "64 MiB: allocated " + std::to_string(before.allocated_bytes) +
                             " -> " + std::to_string(during.allocated_bytes) + " -> " +
                             std::to_string(after.allocated_bytes) + " bytes, reserved " +
                             std::to_string(after.reserved_bytes);
  if (grew && freed)
    return make_check("memory_pool", check_title("memory_pool"), Status::Pass, detail, "", d);
  return make_check(
      "memory_pool", check_title("memory_pool"), Status::Fail, detail,
      "the pool's statistics do not follow allocations: report this with `rcuda doctor --json`", d);
}

Check cudnn_version_check(const Report& r) {
  const Library* cudnn = nullptr;
  for (const Library& l : r.libraries)
    if (l.name == "cuDNN") cudnn = &l;
  const std::string title = check_title("cudnn_version");
  if (r.cudnn_built.empty())
    return make_check("cudnn_version", title, Status::Skip,
                      "rcuda was built without cuDNN headers");
  if (!cudnn || !cudnn->found)
    return make_check("cudnn_version", title, Status::Warn,
                      "built against cuDNN " + r.cudnn_built + ", none found at run time (" +
                          (cudnn ? cudnn->error : "") + ")",
                      "install cuDNN " + r.cudnn_built.substr(0, r.cudnn_built.find('.')) +
                          " for CUDA " + std::to_string(r.cuda_runtime_built / 1000) +
                          " (Debian/Ubuntu: cudnn9-cuda-" +
                          std::to_string(r.cuda_runtime_built / 1000) +
                          ") or add its lib folder to LD_LIBRARY_PATH");
  // cudnnGetVersion() of the library loaded against the build's CUDNN_VERSION (Note [cuDNN
  // versions] in src/backend/cuda/cudnn.cpp).
  const CudnnCompatibility c = cudnn_compatibility(r.cudnn_built, cudnn->version);
  return make_check("cudnn_version", title, c.status, c.detail + " from " + cudnn->path, c.fix);
}

}  // namespace

void fill_build_info(Report& r) {
  r.cuda_built = true;
  r.cuda_runtime_built = CUDART_VERSION;
  r.cuda_toolkit_version = RCUDA_CUDA_TOOLKIT_VERSION;
  r.cuda_architectures = RCUDA_CUDA_ARCHITECTURES;
#ifdef RCUDA_HAS_CUDNN_HEADERS
  r.cudnn_built = std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + "." +
                  std::to_string(CUDNN_PATCHLEVEL);
#endif
}

// The per-device checks switch the calling thread's current device; a caller (an R session)
// keeps the one it had.
class RestoreCurrentDevice {
 public:
  RestoreCurrentDevice() {
    if (cudaGetDevice(&device_) != cudaSuccess) {
      cudaGetLastError();
      device_ = -1;
    }
  }
  ~RestoreCurrentDevice() {
    if (device_ >= 0) cudaSetDevice(device_);
  }
  RestoreCurrentDevice(const RestoreCurrentDevice&) = delete;
  RestoreCurrentDevice& operator=(const RestoreCurrentDevice&) = delete;

 private:
  int device_ = -1;
};

void run_cuda_checks(Report& r, const Options& options) {
  r.cuda_runtime_loaded = cuda::runtime_version();
  const int count = cuda::device_count();
  const RestoreCurrentDevice restore;
  r.cuda_available = count > 0;
  r.cuda_unavailable_reason = count > 0 ? "" : cuda::unavailable_reason();
  r.checks.push_back(
      make_check("cuda_build", check_title("cuda_build"), Status::Pass,
                 "CUDA " + r.cuda_toolkit_version + ", architectures " + r.cuda_architectures));
  if (count == 0) {
    std::string fix =
        "run `nvidia-smi`; if it lists GPUs, check CUDA_VISIBLE_DEVICES and the container's GPU "
        "access";
    if (r.cuda_visible_devices)
      fix = "CUDA_VISIBLE_DEVICES=\"" + *r.cuda_visible_devices +
            "\" hides every GPU: unset it or list valid indices/UUIDs";
    if (r.driver_version == 0)
      fix = "install the NVIDIA driver; nothing to do on a CPU-only machine";
    r.checks.push_back(make_check("devices", check_title("devices"), Status::Warn,
                                  "CUDA is not available: " + r.cuda_unavailable_reason, fix));
  } else {
    r.checks.push_back(make_check("devices", check_title("devices"), Status::Pass,
                                  std::to_string(count) + (count == 1 ? " device" : " devices")));
  }
  r.checks.push_back(cudnn_version_check(r));
  if (count == 0 || !options.gpu_checks) {
    const std::string why = count == 0 ? "no CUDA device" : "GPU checks not requested";
    for (const char* id : {"architecture", "context", "kernel", "cublas_gemm", "cudnn_conv",
                           "round_trip", "memory_pool"})
      r.checks.push_back(make_check(id, check_title(id), Status::Skip, why));
  }
  const Library* cudnn = nullptr;
  for (const Library& l : r.libraries)
    if (l.name == "cuDNN") cudnn = &l;
  for (int d = 0; d < count; ++d) {
    DeviceReport dev;
    dev.index = d;
    try {
      const cuda::DeviceProperties p = cuda::properties(d);
      dev.name = p.name;
      dev.major = p.major;
      dev.minor = p.minor;
      dev.total_memory_bytes = p.total_memory_bytes;
      dev.multiprocessor_count = p.multiprocessor_count;
      dev.uuid = p.uuid;
      dev.pci_bus_id = p.pci_bus_id;
      r.devices.push_back(dev);
      if (!options.gpu_checks) continue;
      r.checks.push_back(architecture_check(d, p));
    } catch (const std::exception& e) {
      r.devices.push_back(dev);
      r.checks.push_back(make_check("architecture", check_title("architecture"), Status::Fail,
                                    e.what(), "the device cannot be queried: check `nvidia-smi`",
                                    d));
      continue;
    }
    const Check context = context_check(d);
    r.checks.push_back(context);
    if (context.status == Status::Fail) continue;  // nothing else can run on this device
    r.checks.push_back(guarded("kernel", d, "report this with `rcuda doctor --json` attached",
                               [&] { return kernel_check(d); }));
    r.checks.push_back(guarded("cublas_gemm", d, "check the cuBLAS library found (see libraries)",
                               [&] { return gemm_check(d); }));
#ifdef RCUDA_HAS_CUDNN_HEADERS
    if (cudnn && cudnn->found)
      r.checks.push_back(guarded("cudnn_conv", d, "check the cuDNN library found (see libraries)",
                                 [&] { return cudnn_conv_check(d, *cudnn); }));
    else
      r.checks.push_back(make_check("cudnn_conv", check_title("cudnn_conv"), Status::Warn,
                                    "cuDNN not found at run time",
                                    "install cuDNN (see cudnn_version)", d));
#else
    (void)cudnn;
    r.checks.push_back(
        make_check("cudnn_conv", check_title("cudnn_conv"), Status::Warn,
                   "cuDNN convolution check not available in this build",
                   "rebuild with cudnn.h on the include path (install cuDNN's dev package)", d));
#endif
    r.checks.push_back(guarded("round_trip", d, "check the GPU with `nvidia-smi -q -d ECC`",
                               [&] { return round_trip_check(d); }));
    r.checks.push_back(
        guarded("memory_pool", d, "see the error message", [&] { return pool_check(d); }));
  }
}

}  // namespace rcuda::doctor::detail
