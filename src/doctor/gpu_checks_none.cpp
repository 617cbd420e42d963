// The CUDA part of the doctor in builds without CUDA: nothing was built, so every GPU check
// is SKIP and the report says why CUDA is unavailable.
#include "doctor_internal.h"
#include "rcuda/backend/cuda.h"

namespace rcuda::doctor::detail {

void fill_build_info(Report& report) { report.cuda_built = false; }

void run_cuda_checks(Report& r, const Options&) {
  r.cuda_available = false;
  r.cuda_unavailable_reason = cuda::unavailable_reason();  // "rcuda was built without CUDA"
  if (r.driver_version == 0)
    r.cuda_unavailable_reason += " (and this machine has no NVIDIA driver)";
  const bool gpu_here = r.driver_version > 0;
  r.checks.push_back(make_check(
      "cuda_build", check_title("cuda_build"), gpu_here ? Status::Warn : Status::Skip,
      r.cuda_unavailable_reason,
      gpu_here ? "this machine has an NVIDIA driver: rebuild with the CUDA toolkit on PATH "
                 "(make clean && make RCUDA_WITH_CUDA=ON) to use the GPU"
               : ""));
  for (const char* id : {"devices", "cudnn_version", "architecture", "context", "kernel",
                         "cublas_gemm", "cudnn_conv", "round_trip", "memory_pool"})
    r.checks.push_back(
        make_check(id, check_title(id), Status::Skip, "rcuda was built without CUDA"));
}

}  // namespace rcuda::doctor::detail
