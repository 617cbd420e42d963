#include "cpu_backend.h"

namespace rcuda::cpu {
namespace {

Backend* make_cpu_backend() {
  share_cores_with_blas();
  return new CpuBackend();  // lives for the process
}

}  // namespace
}  // namespace rcuda::cpu

namespace rcuda::cpu {
RCUDA_REGISTER_BACKEND(::rcuda::DeviceType::CPU, make_cpu_backend)
}
