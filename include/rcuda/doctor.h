// rcuda doctor: what this machine has (OS, CPU, BLAS, driver, CUDA libraries, GPUs) and
// whether rcuda works on it, as a list of checks, each PASS / WARN / FAIL / SKIP with a
// one-line fix. The CLI (`rcuda doctor`) and the R package (cuda_doctor()) format the same
// Report; to_json() gives the schema of docs/doctor-schema.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rcuda::doctor {

// PASS: works. WARN: works, or is absent, in a way the user may want to change. FAIL: broken;
// `rcuda doctor` exits 1. SKIP: not applicable here (a GPU check on a machine without a GPU).
enum class Status { Pass, Warn, Fail, Skip };
const char* status_name(Status s);  // "PASS", "WARN", "FAIL", "SKIP"

struct Check {
  std::string id;     // stable key: "driver", "cublas_gemm", ...
  std::string title;  // one line, what was checked
  Status status = Status::Skip;
  std::string detail;  // what was found
  std::string fix;     // one line for WARN and FAIL, "" otherwise
  int device = -1;     // the CUDA device checked, -1 when not device-specific
};

// A vendor library as found at run time (dlopen by soname, as rcuda would load it).
struct Library {
  std::string name;  // "cuBLAS"
  bool found = false;
  std::string version;  // "13.0.2"
  std::string path;     // the file loaded, or what was tried when not found
  std::string error;    // dlerror() when not found
};

struct DeviceReport {
  int index = 0;  // CUDA index (after CUDA_VISIBLE_DEVICES)
  std::string name;
  int major = 0, minor = 0;
  int64_t total_memory_bytes = 0;
  int multiprocessor_count = 0;
  std::string uuid;
  std::string pci_bus_id;
  std::optional<bool> mig_enabled;  // from NVML, matched by UUID; empty when unknown
};

struct Report {
  std::string rcuda_version;
  // system
  std::string os;      // PRETTY_NAME of /etc/os-release, else uname
  std::string kernel;  // uname -sr
  std::string arch;    // uname -m
  std::string cpu_model;
  int logical_cores = 0;  // online
  int usable_cores = 0;   // in this process's affinity mask (containers, taskset)
  std::string blas;       // rcuda::cpu::blas_info()
  int blas_threads = 0;
  // CUDA as built
  bool cuda_built = false;
  int cuda_runtime_built = 0;        // CUDART_VERSION, e.g. 13000; 0 when not built
  std::string cuda_toolkit_version;  // CMake's CUDAToolkit_VERSION, "" when not built
  std::string cuda_architectures;    // CMAKE_CUDA_ARCHITECTURES as resolved ("80-real;90")
  std::string cudnn_built;           // cudnn_version.h at build time, "" when absent
  // CUDA as found now
  int cuda_runtime_loaded = 0;  // cudaRuntimeGetVersion
  int driver_version = 0;       // cuDriverGetVersion through dlopen("libcuda.so.1"), 0 without
  std::string driver_library;   // the libcuda file, or why it did not load
  std::string nvidia_driver;    // NVML's driver version string ("580.159.04"), "" without
  bool cuda_available = false;
  std::string cuda_unavailable_reason;              // one sentence when !cuda_available
  std::optional<std::string> cuda_visible_devices;  // unset: empty
  std::vector<Library> libraries;                   // cuBLAS, cuDNN, NCCL
  std::vector<DeviceReport> devices;
  std::vector<Check> checks;
};

struct Options {
  bool gpu_checks = true;  // run the checks that launch work on each device
};

// Never throws: a failure inside a check becomes that check's FAIL.
Report run_doctor(const Options& options = {});
bool has_failures(const Report& report);
// The JSON document of docs/doctor-schema.json (schema_version 1), pretty-printed.
std::string to_json(const Report& report);

// cuDNN as the dynamic loader finds it now, by the report's own search (the major version
// rcuda was built with first): found, version ("9.14.0"), file. CUDA builds of librcuda link
// cuDNN for their layers, so the same soname resolves to the same file unless something
// preloads another; this is what backends_cudnn_version() in R reports.
Library find_cudnn();

// Whether code built for `architectures` (CMAKE_CUDA_ARCHITECTURES syntax: "80-real;90-real;
// 90-virtual", "86", "all", "native") runs on a GPU of compute capability major.minor: machine
// code for the same major and a minor no higher, or PTX no newer (JIT-compiled at load).
// "all"/"all-major" cover everything; "native" cannot be judged (empty result).
struct ArchitectureCoverage {
  bool known = true;  // false for "native" or an unparsable list
  bool machine_code = false;
  bool ptx = false;
  std::string detail;  // "sm_90 machine code", "compute_90 PTX (JIT at load)", ...
};
ArchitectureCoverage architecture_coverage(const std::string& architectures, int major, int minor);

// Whether cuDNN `loaded` ("9.14.0") serves a build against `built` ("9.19.0"). cuDNN promises
// that a build runs on the same major at the same or a newer minor: PASS. An older minor (or
// patch) is WARN: it often works, but may lack engines, so some convolutions can fail to find a
// plan. Another major, or a version that cannot be read, is FAIL. detail and fix are one line
// each ("" fix for PASS).
struct CudnnCompatibility {
  Status status = Status::Fail;
  std::string detail, fix;
};
CudnnCompatibility cudnn_compatibility(const std::string& built, const std::string& loaded);

// "13.0" from 13000; "12.4" from 12040; "" from 0.
std::string cuda_version_string(int version);

}  // namespace rcuda::doctor
