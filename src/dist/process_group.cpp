// The default process group of this process, and the names of the backends and ops.
#include "rcuda/dist/process_group.h"

#include <mutex>

#include "dist/mpi/mpi_group.h"
#include "dist/nccl/nccl_group.h"

namespace rcuda::dist {

namespace {

std::mutex g_mutex;
std::shared_ptr<ProcessGroup> g_default;

}  // namespace

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::Mpi:
      return "mpi";
    case Backend::Nccl:
      return "nccl";
  }
  return "unknown";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
  }
  return "unknown";
}

std::shared_ptr<ProcessGroup> init_process_group(const ProcessGroupOptions& options) {
  std::lock_guard<std::mutex> lock(g_mutex);
  RCUDA_CHECK(!g_default, ValueError, "init_process_group: a default group (",
              backend_name(g_default->backend()), ", rank ", g_default->rank(), " of ",
              g_default->size(), ") exists; call destroy_process_group() first");
  const LaunchInfo launch = launch_info();
  if (options.backend == Backend::Nccl)
    g_default = nccl::make_group(options, launch);
  else
    g_default = std::make_shared<mpi::MpiGroup>(options, launch);
  return g_default;
}

std::shared_ptr<ProcessGroup> default_group() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_default;
}

bool is_initialized() { return default_group() != nullptr; }

void destroy_process_group() {
  std::shared_ptr<ProcessGroup> group;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    group.swap(g_default);
  }
  // Destroyed here unless a caller still holds it (then when the last handle goes).
}

}  // namespace rcuda::dist
