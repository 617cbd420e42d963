// Which BLAS librcuda calls (rcuda/backend/cpu.h). OpenBLAS describes itself through
// openblas_get_config(); other BLAS libraries are reported by the file they were loaded from.
#include <cblas.h>
#include <dlfcn.h>

#include <sstream>

#include "rcuda/backend/cpu.h"

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
