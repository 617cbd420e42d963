// The optimizer base: groups, per-parameter state, the buckets one backend call updates.
// The state dict is in state_dict.cpp.
#include "rcuda/optim/optimizer.h"

#include "rcuda/backend/cuda_graph.h"

#include <unordered_set>
#include <utility>

#include "rcuda/core/error.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/tensor/memory_format.h"

namespace rcuda::optim {

Optimizer::Optimizer(std::string name, OptionMap defaults, std::vector<std::string> buffer_names,
                     bool counts_steps)
    : name_(std::move(name)),
      defaults_(std::move(defaults)),
      buffer_names_(std::move(buffer_names)),
      counts_steps_(counts_steps) {}

void Optimizer::add_param_groups(std::vector<ParamGroup> groups) {
  size_t params = 0;
  for (const ParamGroup& g : groups) params += g.params.size();
  RCUDA_CHECK(params > 0, ValueError, name_, ": got an empty parameter list");
  for (ParamGroup& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  const size_t index = groups_.size();
  // Where each parameter already optimized here sits, to name both places of a duplicate.
  std::unordered_map<const TensorImpl*, std::pair<size_t, size_t>> seen;
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t i = 0; i < groups_[g].params.size(); ++i)
      if (groups_[g].params[i].defined())
        seen.emplace(groups_[g].params[i].impl(), std::pair(g, i));
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    RCUDA_CHECK(p.defined(), ValueError, name_, ": parameter ", i, " of param group ", index,
                " is an undefined tensor");
    RCUDA_CHECK(is_floating(p.dtype()) && !is_float8(p.dtype()), DTypeError, name_, ": parameter ",
                i, " of param group ", index, " has dtype ", dtype_name(p.dtype()),
                "; optimizers update float16, bfloat16, float32 and float64 tensors only");
    RCUDA_CHECK(p.is_leaf(), ValueError, name_, ": parameter ", i, " of param group ", index,
                " is not a leaf tensor (an op that records gradients produced it); optimize "
                "the leaf it was computed from");
    const auto [it, inserted] = seen.emplace(p.impl(), std::pair(index, i));
    RCUDA_CHECK(inserted, ValueError, name_, ": parameter ", i, " of param group ", index,
                " is also parameter ", it->second.second, " of param group ", it->second.first,
                "; a parameter may appear only once in an optimizer");
  }
  for (const auto& [key, value] : defaults_) group.options.emplace(key, value);
  check_options(group, index);
  groups_.push_back(std::move(group));
}

const ParamState* Optimizer::state(const Tensor& param) const {
  const auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

void Optimizer::step() {
  // Each step_group reads (and so checks) its group's options first: users change them.
  for (size_t g = 0; g < groups_.size(); ++g) step_group(groups_[g], g);
}

void Optimizer::zero_grad(bool set_to_none) {
  for (const ParamGroup& group : groups_) {
    for (const Tensor& p : group.params) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        ops::fill_(grad, 0);
        grad.storage()->bump_version();
      }
    }
  }
}

void Optimizer::check_gradient(const Tensor& p, const Tensor& grad, size_t index,
                               size_t group_index) const {
  RCUDA_CHECK(is_floating(p.dtype()) && !is_float8(p.dtype()), DTypeError, name_, ": parameter ",
              index, " of param group ", group_index, " has dtype ", dtype_name(p.dtype()),
              "; optimizers update floating tensors only");
  RCUDA_CHECK(grad.dtype() == p.dtype(), DTypeError, name_, ": the gradient of parameter ", index,
              " of param group ", group_index, " has dtype ", dtype_name(grad.dtype()),
              ", the parameter ", dtype_name(p.dtype()));
  RCUDA_CHECK(grad.device() == p.device(), DeviceError, name_, ": the gradient of parameter ",
              index, " of param group ", group_index, " is on ", grad.device().str(),
              ", the parameter on ", p.device().str());
  RCUDA_CHECK(grad.shape() == p.shape(), ShapeError, name_, ": the gradient of parameter ", index,
              " of param group ", group_index, " has shape ", shape_str(grad.shape()),
              ", the parameter ", shape_str(p.shape()));
}

namespace {

bool same_layout(const Tensor& a, const Tensor& b) {
  return (a.is_contiguous() && b.is_contiguous()) || a.strides() == b.strides();
}

// Whether every state buffer of a parameter has the parameter's layout (new buffers are made
// in it; a loaded state dict's may be contiguous).
bool state_in_layout(const ParamState& state, const Tensor& p) {
  for (const Tensor& b : state.buffers)
    if (b.defined() && !same_layout(b, p)) return false;
  return true;
}

// grad itself when it has p's layout, else a copy in it.
Tensor in_layout_of(const Tensor& grad, const Tensor& p) {
  if (same_layout(grad, p)) return grad;
  Tensor out = empty_like_layout(p, grad.dtype());
  if (grad.numel() > 0) ops::copy_(out, grad);
  return out;
}

}  // namespace

std::vector<Optimizer::Bucket> Optimizer::buckets(const ParamGroup& group, size_t group_index) {
  // Every gradient is checked before any state changes, so a bad one leaves the group as it was.
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor grad = group.params[i].grad();
    if (grad.defined()) check_gradient(group.params[i], grad, i, group_index);
  }
  std::vector<Bucket> out;
  for (const Tensor& p : group.params) {
    const Tensor grad = p.grad();
    if (!grad.defined()) continue;  // as torch: parameters without a gradient are skipped
    Bucket* bucket = nullptr;
    for (Bucket& b : out)
      if (b.device == p.device() && b.dtype == p.dtype()) bucket = &b;
    if (bucket == nullptr) {
      out.emplace_back();
      bucket = &out.back();
      bucket->device = p.device();
      bucket->dtype = p.dtype();
    }
    ParamState& state = state_[p.impl()];
    state.buffers.resize(buffer_names_.size());
    bucket->states.push_back(&state);
    // The primitives update flat memory, element i of every operand together: a parameter
    // that is dense in some order (channels-last) is updated in place when its state shares
    // its layout, and its gradient is brought to that layout; any other parameter is staged in
    // a contiguous copy, written back after.
    if (p.is_contiguous() || (p.is_non_overlapping_and_dense() && state_in_layout(state, p))) {
      bucket->params.push_back(p);
      bucket->grads.push_back(in_layout_of(grad, p));
    } else {
      Tensor staged = ops::clone(p);
      bucket->staged.emplace_back(p, staged);
      bucket->params.push_back(std::move(staged));
      bucket->grads.push_back(ops::contiguous(grad));
    }
  }
  return out;
}

void Optimizer::finish(const Bucket& bucket) {
  for (const auto& [param, staged] : bucket.staged) ops::copy_(param, staged);
  // Note [Version counter]: every storage the step wrote.
  for (const Tensor& p : bucket.params) p.storage()->bump_version();
  for (const auto& staged : bucket.staged) staged.first.storage()->bump_version();
  for (const ParamState* state : bucket.states)
    for (const Tensor& b : state->buffers)
      if (b.defined()) b.storage()->bump_version();
}

Tensor& Optimizer::buffer(ParamState& state, size_t index, const Tensor& param, double initial) {
  Tensor& b = state.buffers[index];
  if (!b.defined()) {
    check_state_outside_capture(param, buffer_names_[index].c_str());
    b = empty_like_layout(param, param.dtype());
    ops::fill_(b, initial);
  }
  return b;
}

void Optimizer::check_state_outside_capture(const Tensor& param, const char* what) const {
  const Device d = param.device();
  RCUDA_CHECK(!d.is_cuda() || !cuda::is_capturing(d.index), ValueError, name(),
              ".step: a parameter has no ", what,
              " yet, and under CUDA graph capture a new one would be zeroed again by every "
              "replay: run one step before capturing");
}

void Optimizer::run_step(const Bucket& bucket, const std::function<void(bool)>& launch) {
  const Device d = bucket.device;
  if (d.is_cuda() && cuda::is_capturing(d.index)) {
    cuda::run_updatable(d.index, launch);
    return;
  }
  launch(true);
}

}  // namespace rcuda::optim
