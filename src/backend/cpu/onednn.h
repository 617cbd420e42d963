// oneDNN plumbing for the CPU layers (docs/pooling-normalization.md): the engine, a stream per
// thread, memory objects over rcuda's own buffers, and the float32 layer calls that the
// primitives try first. Each `try_*` returns false when oneDNN has no implementation for the
// call (the caller then runs its own loops) and throws InternalError when one fails to run.
#pragma once

#include <dnnl.hpp>

#include "rcuda/backend/backend.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::cpu::onednn {

// The process's CPU engine (made once).
dnnl::engine& engine();
// A stream of the calling thread (oneDNN streams are not shared between threads).
dnnl::stream& stream();

// A float32 memory descriptor of `dims` in NC... order, or channels-last (N, spatial..., C).
dnnl::memory::desc f32_desc(const dnnl::memory::dims& dims, bool channels_last);
// A memory object over t's data (no copy).
dnnl::memory wrap(const dnnl::memory::desc& desc, const Tensor& t);

// Runs `prim` with `args` on the thread's stream and waits; oneDNN errors become InternalError.
void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args,
             const char* op);

// Pooling (src/backend/cpu/pool_onednn.cpp): the float32 calls whose result is PyTorch's
// (docs/pooling-normalization.md says which).
bool try_pool2d(const PoolArgs& args, const Tensor& out, const Tensor& indices, const Tensor& in);
bool try_pool2d_backward(const PoolArgs& args, const Tensor& grad_in, const Tensor& grad_out);

// Batch normalisation of float32 [N, C, S] views (src/backend/cpu/batch_norm_onednn.cpp) with
// Backend::batch_norm's operands, except that training writes the batch's mean and biased
// variance (not invstd), and the running statistics are left to the caller.
bool try_batch_norm(const Tensor& out, const Tensor& mean, const Tensor& variance,
                    const Tensor& invstd, const Tensor& in, const Tensor& weight,
                    const Tensor& bias, bool training, double eps);
bool try_batch_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                             const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                             const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                             bool batch_stats);

}  // namespace rcuda::cpu::onednn
