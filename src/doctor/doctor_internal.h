// Pieces of the doctor shared between its files; not installed.
#pragma once

#include <string>

#include "rcuda/doctor.h"

namespace rcuda::doctor::detail {

// Fills the "as built" fields (runtime, toolkit, architectures, cuDNN headers); nothing in a
// CPU-only build. gpu_checks.cpp or gpu_checks_none.cpp, whichever the build compiled.
void fill_build_info(Report& report);
// Appends the checks that need the CUDA runtime: devices, architectures, context, kernel,
// GEMM, cuDNN, round trip, pool. SKIP entries in CPU-only builds.
void run_cuda_checks(Report& report, const Options& options);

// Vendor libraries through dlopen (probes.cpp).
struct DriverProbe {
  int version = 0;   // cuDriverGetVersion, 0 when libcuda did not load
  std::string path;  // the file loaded, or why not
};
DriverProbe probe_driver();
Library probe_cublas(int built_major);
Library probe_cudnn(int built_major);
Library probe_nccl();

// The one-line title of a check by id ("kernel" -> "an rcuda kernel runs ...").
const char* check_title(const std::string& id);

// Check with the given fields (a shorthand used by every check).
Check make_check(std::string id, std::string title, Status status, std::string detail,
                 std::string fix = "", int device = -1);

}  // namespace rcuda::doctor::detail

namespace rcuda::doctor::detail {
// A 3x3 convolution through rcuda's conv2d (cuDNN's graph API) on `device`, against plain
// loops in double (cudnn_conv.cpp; built only when cudnn.h was found).
Check cudnn_conv_check(int device, const Library& cudnn);
}  // namespace rcuda::doctor::detail
