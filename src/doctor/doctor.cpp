// run_doctor(): the system, the libraries, then the checks (rcuda/doctor.h). Each check is
// written so that an exception inside it becomes its own FAIL and the rest still run.
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>

#include "doctor_internal.h"
#include "rcuda/autograd/api.h"
#include "rcuda/backend/backend.h"
#include "rcuda/backend/cpu.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/core/error.h"
#include "rcuda/telemetry/nvml.h"

#ifndef RCUDA_VERSION_STRING
#define RCUDA_VERSION_STRING "unknown"
#endif

namespace rcuda::doctor {

const char* status_name(Status s) {
  switch (s) {
    case Status::Pass:
      return "PASS";
    case Status::Warn:
      return "WARN";
    case Status::Fail:
      return "FAIL";
    case Status::Skip:
      return "SKIP";
  }
  return "?";
}

bool has_failures(const Report& report) {
  for (const Check& c : report.checks)
    if (c.status == Status::Fail) return true;
  return false;
}

namespace detail {
const char* check_title(const std::string& id) {
  static const std::pair<const char*, const char*> titles[] = {
      {"cuda_build", "rcuda was built with CUDA"},
      {"devices", "CUDA sees at least one device"},
      {"cudnn_version",
       "cuDNN loaded at run time has the major version rcuda was built with, and no older minor"},
      {"architecture", "the compiled code (machine code or PTX) covers the device"},
      {"context", "a CUDA context can be created"},
      {"kernel", "an rcuda kernel runs and gives exact results"},
      {"cublas_gemm", "matmul on CUDA (cuBLAS) matches the CPU"},
      {"cudnn_conv", "a cuDNN convolution matches a CPU reference"},
      {"round_trip", "host -> device -> host copies are bit-identical"},
      {"memory_pool", "the CUDA memory pool allocates and frees, and its statistics follow"},
  };
  for (const auto& [key, title] : titles)
    if (id == key) return title;
  return "";
}

Check make_check(std::string id, std::string title, Status status, std::string detail,
                 std::string fix, int device) {
  return Check{std::move(id), std::move(title), status, std::move(detail), std::move(fix), device};
}
}  // namespace detail

namespace {

using detail::make_check;

std::string os_release_name() {
  std::ifstream in("/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
    std::string v = line.substr(12);
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) v = v.substr(1, v.size() - 2);
    return v;
  }
  return "";
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  for (const char* key : {"model name", "Model", "cpu model", "Hardware"}) {
    in.clear();
    in.seekg(0);
    while (std::getline(in, line)) {
      if (line.rfind(key, 0) != 0) continue;
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      const size_t start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  }
  return "";
}

void fill_system(Report& r) {
  r.rcuda_version = RCUDA_VERSION_STRING;
  utsname u{};
  if (uname(&u) == 0) {
    r.kernel = std::string(u.sysname) + " " + u.release;
    r.arch = u.machine;
  }
  r.os = os_release_name();
  if (r.os.empty()) r.os = r.kernel;
  r.cpu_model = cpu_model();
  if (r.cpu_model.empty()) r.cpu_model = r.arch;
  r.logical_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  cpu_set_t set;
  CPU_ZERO(&set);
  r.usable_cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : r.logical_cores;
  const cpu::BlasDetails blas = cpu::blas_details();
  r.blas = cpu::blas_info();
  r.blas_threads = blas.num_threads;
}

// A small float32 GEMM through the CPU backend (OpenBLAS) against plain loops in double.
Check cpu_gemm_check() {
  const char* title = "CPU matmul (OpenBLAS) matches a double-precision reference";
  const int64_t m = 67, k = 129, n = 33;
  manual_seed(20261130);
  const Tensor a = randn({m, k}), b = randn({k, n});
  const Tensor c = contiguous(matmul(a, b));
  const float *pa = a.data<float>(), *pb = b.data<float>(), *pc = c.data<float>();
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0, scale = 0;
      for (int64_t p = 0; p < k; ++p) {
        ref += double(pa[i * k + p]) * pb[p * n + j];
        scale += std::fabs(double(pa[i * k + p]) * pb[p * n + j]);
      }
      worst = std::max(worst, std::fabs(pc[i * n + j] - ref) / std::max(scale, 1e-30));
    }
  char detail[160];
  std::snprintf(detail, sizeof detail, "%lldx%lldx%lld, worst relative error %.2e", (long long)m,
                (long long)k, (long long)n, worst);
  if (worst < 1e-5) return make_check("cpu_gemm", title, Status::Pass, detail);
  return make_check(
      "cpu_gemm", title, Status::Fail, detail,
      "the BLAS library gives wrong results: reinstall libopenblas0-openmp or "
      "select another with update-alternatives --config libblas.so.3-x86_64-linux-gnu");
}

bool cpu_has_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0)
      return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

// OpenBLAS's DYNAMIC_ARCH picks kernels from the CPU model; a model newer than the library
// (OpenBLAS 0.3.21 on Emerald Rapids, say) falls back to the generic Prescott kernels, which
// run GEMM 5-8x slower than the AVX-512 ones the CPU supports. OPENBLAS_CORETYPE overrides it.
Check blas_kernels_check() {
  const char* title = "OpenBLAS uses the vector kernels this CPU supports";
  const cpu::BlasDetails blas = cpu::blas_details();
  if (blas.core.empty())
    return make_check("blas_kernels", title, Status::Skip, "the BLAS does not name its kernels");
  std::string lower = blas.core;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool generic = lower == "prescott" || lower == "core2" || lower == "katmai" ||
                       lower == "nehalem" || lower == "penryn" || lower == "dunnington" ||
                       lower == "atom" || lower == "banias" || lower == "northwood";
  const bool avx512 = cpu_has_flag("avx512f"), avx2 = cpu_has_flag("avx2");
  const std::string detail = "OpenBLAS kernels: " + blas.core +
                             (avx512 ? "; CPU has AVX-512"
                              : avx2 ? "; CPU has AVX2"
                                     : "");
  if (generic && (avx512 || avx2))
    return make_check("blas_kernels", title, Status::Warn,
                      detail + " (OpenBLAS does not know this CPU model)",
                      std::string("export OPENBLAS_CORETYPE=") + (avx512 ? "SkylakeX" : "Haswell") +
                          " (matmul several times faster), or install a newer OpenBLAS");
  return make_check("blas_kernels", title, Status::Pass, detail);
}

Check driver_check(const Report& r) {
  const char* title = "NVIDIA driver is present and new enough for the CUDA runtime";
  const std::string driver = cuda_version_string(r.driver_version);
  if (r.driver_version == 0) {
    const std::string detail = "no NVIDIA driver: " + r.driver_library;
    if (!r.cuda_built) return make_check("driver", title, Status::Skip, detail);
    return make_check("driver", title, Status::Warn, detail,
                      "install the NVIDIA driver (nvidia-smi must work) to use the GPU; "
                      "nothing to do on a CPU-only machine");
  }
  if (!r.cuda_built)
    return make_check("driver", title, Status::Pass,
                      "driver supports CUDA " + driver + " (" + r.driver_library + ")");
  const std::string runtime = cuda_version_string(r.cuda_runtime_built);
  const std::string detail =
      "driver supports CUDA " + driver + ", rcuda built with CUDA runtime " + runtime;
  if (r.driver_version >= r.cuda_runtime_built)
    return make_check("driver", title, Status::Pass, detail);
  if (r.driver_version / 1000 == r.cuda_runtime_built / 1000)
    // Minor version compatibility: the runtime works, but PTX built by the newer toolkit
    // cannot be JIT-compiled by the older driver.
    return make_check("driver", title, Status::Warn,
                      detail + " (runs through minor-version compatibility; PTX JIT may fail)",
                      "upgrade the NVIDIA driver to one supporting CUDA " + runtime);
  return make_check("driver", title, Status::Fail, detail,
                    "upgrade the NVIDIA driver to one supporting CUDA " + runtime +
                        ", or rebuild rcuda with a CUDA toolkit no newer than " + driver);
}

void fill_nvml(Report& r) {
  std::string why;
  const std::unique_ptr<telemetry::Nvml> nvml = telemetry::Nvml::open(&why);
  const char* title = "MIG mode leaves CUDA devices usable";
  if (!nvml) {
    r.checks.push_back(make_check("mig", title, Status::Skip, why));
    return;
  }
  r.nvidia_driver = nvml->driver_version();
  int known = 0;
  std::string enabled;
  for (int i = 0; i < nvml->device_count(); ++i) {
    const std::optional<bool> mig = nvml->mig_enabled(i);
    const std::string uuid = nvml->sample(i).uuid;
    for (DeviceReport& d : r.devices)
      if (!uuid.empty() && d.uuid == uuid) d.mig_enabled = mig;
    if (!mig) continue;
    ++known;
    if (*mig) enabled += (enabled.empty() ? "" : ", ") + std::to_string(i) + " (" + uuid + ")";
  }
  if (known == 0) {
    r.checks.push_back(
        make_check("mig", title, Status::Skip, "NVML does not report MIG mode here"));
  } else if (enabled.empty()) {
    r.checks.push_back(make_check("mig", title, Status::Pass,
                                  "MIG disabled on all " + std::to_string(known) + " GPUs"));
  } else {
    const bool mig_selected =
        r.cuda_visible_devices && r.cuda_visible_devices->find("MIG-") != std::string::npos;
    r.checks.push_back(make_check(
        "mig", title, mig_selected ? Status::Pass : Status::Warn, "MIG enabled on GPU " + enabled,
        mig_selected ? ""
                     : "CUDA uses a MIG GPU only through its instances: set "
                       "CUDA_VISIBLE_DEVICES=MIG-<uuid> from `nvidia-smi -L`"));
  }
}

}  // namespace

Library find_cudnn() {
  Report r;
  detail::fill_build_info(r);
  return detail::probe_cudnn(r.cudnn_built.empty() ? 0 : std::atoi(r.cudnn_built.c_str()));
}

Report run_doctor(const Options& options) {
  Report r;
  fill_system(r);
  detail::fill_build_info(r);
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) r.cuda_visible_devices = v;

  const detail::DriverProbe driver = detail::probe_driver();
  r.driver_version = driver.version;
  r.driver_library = driver.path;
  r.libraries = {detail::probe_cublas(r.cuda_runtime_built / 1000), find_cudnn(),
                 detail::probe_nccl()};

  try {
    r.checks.push_back(cpu_gemm_check());
  } catch (const std::exception& e) {
    r.checks.push_back(make_check("cpu_gemm", "CPU matmul (OpenBLAS)", Status::Fail, e.what(),
                                  "see the error; rebuild rcuda against a working BLAS"));
  }
  r.checks.push_back(blas_kernels_check());
  detail::run_cuda_checks(r, options);  // fills devices, availability and the GPU checks
  // The driver verdict reads best right after "built with CUDA".
  auto after = std::find_if(r.checks.begin(), r.checks.end(),
                            [](const Check& c) { return c.id == "cuda_build"; });
  r.checks.insert(after == r.checks.end() ? after : after + 1, driver_check(r));
  fill_nvml(r);
  return r;
}

}  // namespace rcuda::doctor
