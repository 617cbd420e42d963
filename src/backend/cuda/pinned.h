// The pinned host cache's hooks for the rest of the CUDA backend (Note [Pinned host cache] in
// pinned.cpp).
#pragma once

#include <cuda_runtime.h>

namespace rcuda::cuda {

// After an asynchronous copy that reads `host` on `stream`: when `host` lies in a cached pinned
// block, the block is not handed out again before the copy has finished. Other memory is
// ignored. Call with the stream's device current.
void record_pinned_use(const void* host, cudaStream_t stream);

// Returns the cached pinned blocks that nothing uses or reads any more to the driver.
void release_idle_pinned();

}  // namespace rcuda::cuda
