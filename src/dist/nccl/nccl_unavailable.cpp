// The NCCL backend of a build without it (no CUDA, or no nccl.h and libnccl beside the toolkit).
#include "dist/nccl/nccl_group.h"

namespace rcuda::dist::nccl {

bool is_built() { return false; }

std::shared_ptr<ProcessGroup> make_group(const ProcessGroupOptions&, const LaunchInfo&) {
  throw ValueError(
      "init_process_group: the nccl backend was not built into this rcuda (it needs a CUDA build "
      "with nccl.h and libnccl found beside the toolkit); use the mpi backend for CPU tensors");
}

}  // namespace rcuda::dist::nccl
