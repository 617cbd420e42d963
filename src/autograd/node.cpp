// Nodes, saved tensors, the leaf accumulator, and the recording helpers of
// rcuda/autograd/record.h.
#include <atomic>

#include "formula.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/node.h"
#include "rcuda/autograd/record.h"
#include "rcuda/core/error.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/tensor/memory_format.h"

namespace rcuda::autograd {
namespace {
std::atomic<uint64_t> next_sequence_nr{0};
}  // namespace

Node::Node() : sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

void Node::add_input(const Tensor& input) {
  NodeInput& in = inputs_.emplace_back();
  if (!input.defined()) return;
  if (needs_grad(input)) in.edge = gradient_edge(input);
  in.meta.sizes.assign(input.shape().begin(), input.shape().end());
  in.meta.dtype = input.dtype();
  in.meta.device = input.device();
}

SavedTensor::SavedTensor(const Tensor& t, Kind kind) {
  if (!t.defined()) return;
  data_ = kind == kInput ? t : t.alias();
  version_ = t.storage()->version();
  is_output_ = kind == kOutput;
}

Tensor SavedTensor::unpack(const Node& owner) const {
  RCUDA_CHECK(!released_, ValueError, "backward: trying to backward through ", owner.name(),
              " a second time, after its saved tensors were freed; pass retain_graph = true to "
              "the first backward if you need to backward twice");
  if (!data_.defined()) return data_;
  const uint64_t now = data_.storage()->version();
  RCUDA_CHECK(
      now == version_, ValueError, "backward: a tensor that ", owner.name(),
      " saved for the gradient (shape ", shape_str(data_.shape()), ", ", dtype_name(data_.dtype()),
      ") has been modified by an in-place operation: it is at version ", now, ", expected version ",
      version_, "; use an out-of-place op, or clone() the tensor before changing it");
  // Note [Gradients of gradients]: grad mode is on during backward only when it creates a
  // graph; the output then takes its node's history back, held by this alias only.
  if (is_output_ && formula::recording() && is_floating(data_.dtype())) {
    Tensor out = data_.alias();
    set_history(out, std::const_pointer_cast<Node>(owner.shared_from_this()));
    return out;
  }
  return data_;
}

void SavedTensor::release() {
  if (data_.defined() || !released_) {
    data_ = Tensor();
    released_ = true;
  }
}

// No inputs of its own: the gradient stops here.
AccumulateGrad::AccumulateGrad(const Tensor& leaf) : leaf_(leaf.weak_impl()) {}

// Note [Accumulating into grad]: the first gradient is stored as it is when nothing else holds
// it, else copied, so that a later in-place accumulation never writes into a tensor the user
// or another node can see; later gradients are added in place, so that an optimizer holding
// `grad` sees the sum.
TensorList AccumulateGrad::apply(TensorList&& grads) {
  Tensor& g = grads[0];
  const Tensor leaf = this->leaf();
  if (!g.defined() || !leaf.defined()) return {};
  // Note [Gradients of gradients]: a gradient with a history keeps it in `grad` (PyTorch's
  // accumulation under create_graph): a recorded copy first, a recorded sum after.
  if (formula::recording() && g.requires_grad()) {
    AutogradMeta& meta = leaf.ensure_autograd_meta();
    meta.grad = meta.grad.defined() ? rcuda::add(meta.grad, g) : rcuda::clone(g);
    return {};
  }
  NoGradGuard no_grad;
  AutogradMeta& meta = leaf.ensure_autograd_meta();
  if (!meta.grad.defined()) {
    // The gradient is taken as it is when nothing else can see its memory, it fills that
    // memory densely and it has the leaf's layout (PyTorch's layout contract: a channels-last
    // weight gets a channels-last gradient, so that the optimizer updates both flat); a
    // formula's output is often a view of a fresh tensor (a squeezed product, a sum), which a
    // new non-view handle on the same storage stands in for. Otherwise a copy in the leaf's
    // layout.
    const bool sole_owner = g.use_count() == 1 && g.storage().use_count() == 1;
    const bool whole = g.is_non_overlapping_and_dense() &&
                       g.storage()->nbytes() == static_cast<size_t>(g.numel()) * g.element_size();
    const bool leaf_dense = leaf.is_non_overlapping_and_dense();
    const bool layout_ok = (g.is_contiguous() && leaf.is_contiguous()) ||
                           (leaf_dense ? g.strides() == leaf.strides() : g.is_contiguous());
    if (sole_owner && whole && layout_ok) {
      meta.grad = g.is_view() ? g.alias() : g;
    } else {
      meta.grad = empty_like_layout(leaf, g.dtype());
      if (g.numel() > 0) ops::copy_(meta.grad, g);
    }
  } else {
    ops::add_(meta.grad, g);
  }
  return {};
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* meta = t.autograd_meta();
  if (meta == nullptr) return {};
  if (meta->grad_fn) return Edge{meta->grad_fn, meta->output_nr, Tensor()};
  if (!meta->requires_grad) return {};
  // Note [The leaf keeps its accumulator]
  if (!meta->grad_accumulator) meta->grad_accumulator = std::make_shared<AccumulateGrad>(t);
  return Edge{meta->grad_accumulator, 0, t};
}

void set_history(const Tensor& out, std::shared_ptr<Node> node, uint32_t output_nr) {
  if (!is_floating(out.dtype())) return;
  AutogradMeta& meta = out.ensure_autograd_meta();
  meta.grad_fn = std::move(node);
  meta.output_nr = output_nr;
  meta.requires_grad = false;
}

void check_inplace(const char* op, const Tensor& self) {
  if (!GradMode::is_enabled()) return;
  RCUDA_CHECK(!(self.is_leaf() && self.requires_grad()), ValueError, op,
              ": a leaf tensor that requires grad cannot be modified in place while grad mode "
              "is on (wrap the update in NoGradGuard, or use an out-of-place op)");
}

void check_not_view(const char* op, const Tensor& self, const char* advice) {
  RCUDA_CHECK(!self.is_view(), ValueError, op,
              ": in-place changes of a view are not recorded by autograd (the tensor it views "
              "would not see them); ",
              advice);
}

}  // namespace rcuda::autograd
