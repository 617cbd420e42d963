// Kernel launches whose arguments a graph replay updates (Note [Updatable launches] in
// rcuda/backend/cuda_graph.h): random fills, dropout, the optimizers' multi-tensor steps.
#pragma once

#include <cuda_runtime.h>

#include <tuple>
#include <utility>

#include "backend/cuda/graph_capture.h"

namespace rcuda::cuda {

// kernel<<<grid, block, shared, stream>>>(args...), or, inside a replay's update, the same
// launch's captured node updated with these arguments.
template <typename... Params, typename... Args>
void launch_updatable(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared,
                      cudaStream_t stream, Args&&... args) {
  UpdatableCall* call = updatable_call();
  if (call != nullptr && call->exec != nullptr) {
    std::tuple<Params...> values(std::forward<Args>(args)...);
    std::apply(
        [&](auto&... v) {
          void* pointers[] = {static_cast<void*>(&v)..., nullptr};
          update_kernel_node(*call, reinterpret_cast<void*>(kernel), grid, block, shared, pointers);
        },
        values);
    return;
  }
  kernel<<<grid, block, shared, stream>>>(std::forward<Args>(args)...);
  RCUDA_CUDA_CHECK_LAUNCH();
  if (call != nullptr) call->nodes->push_back(last_captured_node(stream));
}

}  // namespace rcuda::cuda
