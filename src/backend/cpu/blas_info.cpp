// Which BLAS librcuda calls (rcuda/backend/cpu.h), and the threads of the CPU backend. OpenBLAS
// describes itself through openblas_get_config(); other BLAS libraries are reported by the file
// they were loaded from.
#include <cblas.h>
#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include <sstream>

#include "rcuda/backend/cpu.h"
#include "rcuda/core/error.h"

namespace rcuda::cpu {

BlasDetails blas_details() {
  BlasDetails d;
#ifdef OPENBLAS_VERSION
  d.name = "OpenBLAS";
  std::istringstream words(OPENBLAS_VERSION);  // " OpenBLAS 0.3.21 " (the headers' version)
  std::string word;
  words >> word >> d.version;
  if (const char* config = openblas_get_config()) {
    d.config = config;
    std::istringstream loaded(d.config);  // the loaded library's own version wins
    std::string name, version;
    if (loaded >> name >> version && name == "OpenBLAS") d.version = version;
  }
  if (const char* core = openblas_get_corename()) d.core = core;
  d.num_threads = openblas_get_num_threads();
#else
  d.name = "BLAS";
#endif
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cblas_sgemm), &info) != 0 && info.dli_fname)
    d.library_path = info.dli_fname;
  return d;
}

// Note [BLAS and OpenMP threads]
// An OpenBLAS built on pthreads keeps a thread pool of its own beside OpenMP's. With each pool
// at one thread per core, every GEMM between two OpenMP loops has twice as many spinning
// threads as cores: on a 16-core machine an MLP training step (bench_train) took 104 ms, and
// 3.5 ms with 8 + 8 threads (PyTorch's CPU step: 3.3 ms). So when OpenBLAS runs its own pthreads
// (openblas_get_parallel() == 1) and the user set neither OPENBLAS_NUM_THREADS nor
// OMP_NUM_THREADS, each pool gets half the cores. The OpenMP build of OpenBLAS (Debian's
// libopenblas-openmp, which scripts/install-deps.sh installs) shares OpenMP's pool: nothing to do.
namespace {

// n threads for the CPU backend: OpenMP's pool, which an OpenMP build of OpenBLAS shares, or
// half each (at least one) beside a pthreads OpenBLAS's own pool.
void give_pools(int n) {
  int openmp = n;
#ifdef OPENBLAS_VERSION
  if (openblas_get_parallel() == 1) {
    openmp = std::max(1, n / 2);
    openblas_set_num_threads(openmp);
  }
#endif
  omp_set_num_threads(openmp);
}

// The count last given to set_num_threads(), 0 before: what num_threads() says, since a
// pthreads OpenBLAS's split makes OpenMP's own count half of it.
std::atomic<int> requested_threads{0};

}  // namespace

void share_cores_with_blas() {
#ifdef OPENBLAS_VERSION
  if (openblas_get_parallel() != 1) return;
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr || std::getenv("OMP_NUM_THREADS") != nullptr)
    return;
  give_pools(omp_get_num_procs());
#endif
}

void set_num_threads(int n) {
  RCUDA_CHECK(n >= 1, ValueError, "set_num_threads: the number of threads must be >= 1, got ", n);
  give_pools(n);
  requested_threads.store(n, std::memory_order_relaxed);
}

int num_threads() {
  const int n = requested_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
  int threads = omp_get_max_threads();
#ifdef OPENBLAS_VERSION
  if (openblas_get_parallel() == 1) threads += openblas_get_num_threads();
#endif
  return threads;
}

std::string blas_info() {
  const BlasDetails d = blas_details();
  std::string out =
      d.config.empty() ? d.name + (d.version.empty() ? "" : " " + d.version) : d.config;
  if (d.num_threads > 0)
    out += "; " + std::to_string(d.num_threads) + (d.num_threads == 1 ? " thread" : " threads");
  if (!d.library_path.empty()) out += "; " + d.library_path;
  return out;
}

}  // namespace rcuda::cpu
