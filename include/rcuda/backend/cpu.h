// The CPU backend, seen from outside it: which BLAS librcuda calls, for diagnostics
// (`rcuda doctor`, the R package's cuda_doctor()), and how many threads its loops and GEMMs use
// (torch_set_num_threads()).
#pragma once

#include <string>

namespace rcuda::cpu {

struct BlasDetails {
  std::string name;     // "OpenBLAS", or "BLAS" when the library does not say
  std::string version;  // "0.3.21", "" when unknown
  std::string config;   // openblas_get_config(): "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell
                        // MAX_THREADS=64"
  std::string core;     // the kernel set chosen for this CPU ("Haswell"), "" when unknown
  int num_threads = 0;  // threads a GEMM uses now; 0 when unknown
  std::string library_path;  // the shared library cblas_sgemm was resolved from
};

BlasDetails blas_details();
// One line: "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64; 2 threads;
// /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3".
std::string blas_info();

// The threads the CPU backend's parallel loops (OpenMP) and GEMMs (OpenBLAS) use from now on, as
// torch.set_num_threads: n >= 1, a ValueError otherwise. With an OpenMP build of OpenBLAS both
// share one pool of n; with a pthreads build, whose pool spins beside OpenMP's, each gets n / 2
// (at least one), as at start (Note [BLAS and OpenMP threads] in src/backend/cpu/blas_info.cpp).
void set_num_threads(int n);
// The count last given to set_num_threads(); before any, the threads of OpenMP's pool and, for
// a pthreads OpenBLAS, of its own (torch.get_num_threads).
int num_threads();

}  // namespace rcuda::cpu
