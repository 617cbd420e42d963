// The NCCL backend's entry point, seen without NCCL's or CUDA's headers. nccl_group.cpp defines
// it where NCCL was found; nccl_unavailable.cpp otherwise.
#pragma once

#include <memory>

#include "rcuda/dist/process_group.h"

namespace rcuda::dist::nccl {

// Whether this build has the NCCL backend.
bool is_built();
// The group of every rank over NCCL on the GPU of this rank's local rank; ValueError when NCCL
// was not built.
std::shared_ptr<ProcessGroup> make_group(const ProcessGroupOptions& options,
                                         const LaunchInfo& launch);

}  // namespace rcuda::dist::nccl
