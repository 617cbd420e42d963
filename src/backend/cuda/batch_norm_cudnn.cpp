// Batch normalisation through cuDNN's graph API (cudnn-frontend; docs/pooling-normalization.md,
// "Batch norm on CUDA"). One graph per (device, phase, dtype, N, C, S, memory format, eps),
// built on first use and cached with its workspace size; a configuration cuDNN declines (or
// fails to execute) is cached as declined, so each is tried once and then runs our kernels. The
// graphs have no running-statistics inputs: kernels/batch_norm.cu updates those with PyTorch's
// formula.
//
// Tensors are described as [N, C, S, 1] with the [N, C, S] view's strides; the per-channel ones
// as [1, C, 1, 1], float32 (the statistics dtype of every input cuDNN takes here).
#include <cudnn_frontend.h>

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backend/cuda/batch_norm_cudnn.h"
#include "backend/cuda/cudnn.h"
#include "backend/cuda/runtime.h"
#include "rcuda/backend/backend.h"
#include "rcuda/backend/cuda.h"

namespace rcuda::cuda {
namespace {

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

std::atomic<bool> enabled{true};

enum class Phase { Training, Inference, Backward };

struct Key {
  int device;
  Phase phase;
  DType dtype;
  int64_t n, c, s;
  bool channels_last;
  double eps;
  bool operator<(const Key& o) const {
    return std::tie(device, phase, dtype, n, c, s, channels_last, eps) <
           std::tie(o.device, o.phase, o.dtype, o.n, o.c, o.s, o.channels_last, o.eps);
  }
};

// A built graph and the handles of its tensors (those a phase does not use stay null).
struct Plan {
  fe::graph::Graph graph;
  TensorPtr x, scale, bias, mean, inv_variance, y, dy, dx, dscale, dbias;
  int64_t workspace = 0;
};

std::mutex cache_mutex;
std::map<Key, std::shared_ptr<Plan>> cache;  // null: cuDNN declined

bool io_type(DType dtype, fe::DataType_t* out) {
  switch (dtype) {
    case DType::Float32:
      *out = fe::DataType_t::FLOAT;
      return true;
    case DType::Float16:
      *out = fe::DataType_t::HALF;
      return true;
    case DType::BFloat16:
      *out = fe::DataType_t::BFLOAT16;
      return true;
    default:
      return false;  // float64 and the rest: our kernels
  }
}

TensorPtr data_tensor(fe::graph::Graph& g, const char* name, const Key& k, fe::DataType_t type) {
  const std::vector<int64_t> strides = k.channels_last
                                           ? std::vector<int64_t>{k.s * k.c, 1, k.c, k.c}
                                           : std::vector<int64_t>{k.c * k.s, k.s, 1, 1};
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_dim({k.n, k.c, k.s, 1})
                      .set_stride(strides)
                      .set_data_type(type));
}

TensorPtr channel_tensor(fe::graph::Graph& g, const char* name, const Key& k) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_dim({1, k.c, 1, 1})
                      .set_stride({k.c, 1, k.c, k.c})
                      .set_data_type(fe::DataType_t::FLOAT));
}

void set_channel_output(const TensorPtr& t) {
  t->set_output(true).set_data_type(fe::DataType_t::FLOAT);
}

// Builds the graph of `k`, or returns null when cuDNN (or the frontend) refuses it.
std::shared_ptr<Plan> build(const Key& k) {
  fe::DataType_t io;
  if (!io_type(k.dtype, &io)) return nullptr;
  auto p = std::make_shared<Plan>();
  fe::graph::Graph& g = p->graph;
  g.set_io_data_type(io)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  p->x = data_tensor(g, "x", k, io);
  p->scale = channel_tensor(g, "scale", k);
  switch (k.phase) {
    case Phase::Training: {
      p->bias = channel_tensor(g, "bias", k);
      auto epsilon = g.tensor(static_cast<float>(k.eps));
      auto options = fe::graph::Batchnorm_attributes().set_name("batch_norm").set_epsilon(epsilon);
      auto outputs = g.batchnorm(p->x, p->scale, p->bias, options);
      p->y = outputs[0];
      p->mean = outputs[1];
      p->inv_variance = outputs[2];
      p->y->set_output(true);
      set_channel_output(p->mean);
      set_channel_output(p->inv_variance);
      break;
    }
    case Phase::Inference: {
      p->bias = channel_tensor(g, "bias", k);
      p->mean = channel_tensor(g, "mean", k);
      p->inv_variance = channel_tensor(g, "inv_variance", k);
      auto options = fe::graph::Batchnorm_inference_attributes().set_name("batch_norm_inference");
      p->y = g.batchnorm_inference(p->x, p->mean, p->inv_variance, p->scale, p->bias, options);
      p->y->set_output(true);
      break;
    }
    case Phase::Backward: {
      p->dy = data_tensor(g, "dy", k, io);
      p->mean = channel_tensor(g, "mean", k);
      p->inv_variance = channel_tensor(g, "inv_variance", k);
      auto options = fe::graph::Batchnorm_backward_attributes()
                         .set_name("batch_norm_backward")
                         .set_saved_mean_and_inv_variance(p->mean, p->inv_variance);
      auto outputs = g.batchnorm_backward(p->dy, p->x, p->scale, options);
      p->dx = outputs[0];
      p->dscale = outputs[1];
      p->dbias = outputs[2];
      p->dx->set_output(true);
      set_channel_output(p->dscale);
      set_channel_output(p->dbias);
      break;
    }
  }
  cudnnHandle_t handle = cudnn_handle(k.device);
  try {
    if (!g.validate().is_good() || !g.build_operation_graph(handle).is_good() ||
        !g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}).is_good() ||
        !g.check_support(handle).is_good() || !g.build_plans(handle).is_good() ||
        !g.get_workspace_size(p->workspace).is_good())
      return nullptr;
  } catch (const std::exception&) {
    return nullptr;  // the frontend throws for some unsupported descriptors
  }
  return p;
}

// The cached plan for k (built now if new), null when cuDNN declines it. Call with the cache
// locked.
std::shared_ptr<Plan> plan_for(const Key& k) {
  auto it = cache.find(k);
  if (it == cache.end()) it = cache.emplace(k, build(k)).first;
  return it->second;
}

Key key_of(Phase phase, const Tensor& in, double eps) {
  return {in.device().index, phase,         in.dtype(),          in.shape()[0],
          in.shape()[1],     in.shape()[2], !in.is_contiguous(), eps};
}

// A [C] float32 tensor of `value` on in's device: cuDNN always reads a scale and a bias.
Tensor constant_channels(const Tensor& in, double value) {
  Tensor t = Tensor::empty({in.shape()[1]}, DType::Float32, in.device());
  backend_for(in.device()).fill(t, value);
  return t;
}

// Scratch for a gradient the caller did not ask for, in the layout of `like` ([N, C, S] or [C]).
Tensor scratch_like(const Tensor& like, DType dtype) {
  Tensor t = Tensor::empty(like.shape(), dtype, like.device());
  if (like.dim() == 3 && !like.is_contiguous())
    t.impl()->strides = {like.shape()[2] * like.shape()[1], 1, like.shape()[1]};
  return t;
}

// Runs a plan; a plan cuDNN fails to execute is marked declined (the caller's kernels then
// write every output, so nothing half-written survives). Call with the cache locked.
bool run(const Key& k, Plan& p, std::unordered_map<TensorPtr, void*>& pack) {
  const Tensor workspace = cudnn_workspace(k.device, static_cast<size_t>(p.workspace));
  fe::error_t status = p.graph.execute(cudnn_handle(k.device), pack,
                                       workspace.defined() ? workspace.data_ptr() : nullptr);
  if (status.is_good()) return true;
  cache[k] = nullptr;
  return false;
}

// cuDNN's engines may read 16 bytes at a time; a view that starts elsewhere (a slice) runs our
// kernels instead, without marking its configuration declined.
bool aligned(std::initializer_list<Tensor> tensors) {
  for (const Tensor& t : tensors)
    if (t.defined() && reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 != 0) return false;
  return true;
}

}  // namespace

bool cudnn_batch_norm_enabled() { return enabled; }

bool cudnn_batch_norm_forward(const Tensor& out, const Tensor& mean, const Tensor& invstd,
                              const Tensor& in, const Tensor& weight, const Tensor& bias,
                              bool training, double eps) {
  if (!enabled || !aligned({out, mean, invstd, in, weight, bias})) return false;
  const int device = in.device().index;
  DeviceGuard guard(device);
  std::lock_guard<std::mutex> lock(cache_mutex);
  const Key k = key_of(training ? Phase::Training : Phase::Inference, in, training ? eps : 0);
  const std::shared_ptr<Plan> p = plan_for(k);
  if (!p) return false;
  const Tensor w = weight.defined() ? weight : constant_channels(in, 1);
  const Tensor b = bias.defined() ? bias : constant_channels(in, 0);
  std::unordered_map<TensorPtr, void*> pack = {{p->x, in.data_ptr()},
                                               {p->scale, w.data_ptr()},
                                               {p->bias, b.data_ptr()},
                                               {p->mean, mean.data_ptr()},
                                               {p->inv_variance, invstd.data_ptr()},
                                               {p->y, out.data_ptr()}};
  return run(k, *p, pack);
}

bool cudnn_batch_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                               const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                               const Tensor& mean, const Tensor& invstd, const Tensor& weight) {
  if (!enabled || !aligned({grad_in, grad_weight, grad_bias, grad_out, in, mean, invstd, weight}))
    return false;
  const int device = in.device().index;
  DeviceGuard guard(device);
  std::lock_guard<std::mutex> lock(cache_mutex);
  const Key k = key_of(Phase::Backward, in, 0);
  const std::shared_ptr<Plan> p = plan_for(k);
  if (!p) return false;
  const Tensor w = weight.defined() ? weight : constant_channels(in, 1);
  // cuDNN writes every gradient; the unwanted ones go to scratch.
  const Tensor dx = grad_in.defined() ? grad_in : scratch_like(in, in.dtype());
  const Tensor dw = grad_weight.defined() ? grad_weight : scratch_like(mean, DType::Float32);
  const Tensor db = grad_bias.defined() ? grad_bias : scratch_like(mean, DType::Float32);
  std::unordered_map<TensorPtr, void*> pack = {{p->x, in.data_ptr()},
                                               {p->dy, grad_out.data_ptr()},
                                               {p->scale, w.data_ptr()},
                                               {p->mean, mean.data_ptr()},
                                               {p->inv_variance, invstd.data_ptr()},
                                               {p->dx, dx.data_ptr()},
                                               {p->dscale, dw.data_ptr()},
                                               {p->dbias, db.data_ptr()}};
  return run(k, *p, pack);
}

void set_cudnn_batch_norm(bool on) { enabled = on; }
bool cudnn_batch_norm() { return enabled; }

}  // namespace rcuda::cuda
