// Entry points of sparse COO tensors (rcuda/autograd/sparse.h) and their backward nodes. A
// sparse tensor's gradient lives on its values (a dense tensor), so these nodes are ordinary
// nodes over dense inputs: the sparsity pattern (indices) is a constant of the graph.
#include "rcuda/autograd/sparse.h"

#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

using autograd::OpCall;
using autograd::SavedTensor;
using autograd::TensorList;

// Inputs: 0 = a.values, 1 = b. The pattern is kept as plain tensors (indices are never
// written in place by any op); values and b as version-checked saved inputs.
struct SparseMmBackward final : autograd::Node {
  SparseCooTensor pattern;  // a, with values left undefined
  SavedTensor values, b;
  const char* name() const override { return "SparseMmBackward"; }
  TensorList apply(TensorList&& grads) override {
    const Tensor& g = grads[0];
    TensorList out(2);
    if (!g.defined()) return out;
    if (needs_input_grad(0)) {
      out[0] = ops::sparse_mm_backward_values(pattern, b.unpack(*this), g);
    }
    if (needs_input_grad(1)) {
      SparseCooTensor a = pattern;
      a.values = values.unpack(*this);
      out[1] = ops::sparse_mm_backward_dense(a, g);
    }
    return out;
  }
  void release_saved() override {
    values.release();
    b.release();
  }
};

// Input 0 = x.values.
struct SparseToDenseBackward final : autograd::Node {
  SparseCooTensor pattern;
  const char* name() const override { return "ToDenseBackward"; }
  TensorList apply(TensorList&& grads) override {
    TensorList out(1);
    if (grads[0].defined()) out[0] = ops::to_dense_backward_values(pattern, grads[0]);
    return out;
  }
};

SparseCooTensor pattern_of(const SparseCooTensor& x) {
  SparseCooTensor pattern = x;
  pattern.values = Tensor();
  return pattern;
}

}  // namespace

// Sparse ops are not traced or exported (docs/sparse.md), so their nodes carry no OpId
// (OpId::Count): graphs and errors name them by the node's name.
Tensor sparse_mm(const SparseCooTensor& a, const Tensor& b) {
  if (!OpCall::records(a.values, b)) return ops::sparse_mm(a, b);
  Tensor out = autograd::below_autograd([&] { return ops::sparse_mm(a, b); });
  auto node = autograd::make_node<SparseMmBackward>(OpId::Count, a.values, b);
  node->pattern = pattern_of(a);
  // Each operand is needed only for the other's gradient.
  if (autograd::needs_grad(a.values)) node->b = SavedTensor(b, SavedTensor::kInput);
  if (autograd::needs_grad(b)) node->values = SavedTensor(a.values, SavedTensor::kInput);
  autograd::set_history(out, std::move(node));
  return out;
}

Tensor to_dense(const SparseCooTensor& x) {
  if (!OpCall::records(x.values)) return ops::to_dense(x);
  Tensor out = autograd::below_autograd([&] { return ops::to_dense(x); });
  auto node = autograd::make_node<SparseToDenseBackward>(OpId::Count, x.values);
  node->pattern = pattern_of(x);
  autograd::set_history(out, std::move(node));
  return out;
}

}  // namespace rcuda
