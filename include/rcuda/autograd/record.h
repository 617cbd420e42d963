// How an entry point records a node (Note [Recording]; docs/autograd.md):
//
//   Tensor exp(const Tensor& x) {
//     OpCall call(OpId::Exp, x);
//     if (!OpCall::records(x)) return ops::exp(x);
//     Tensor out = below_autograd([&] { return ops::exp(x); });
//     auto node = make_node<UnaryBackward>(call.op(), x);  // the op; edges to x's history,
//                                                          // x's shape and dtype
//     node->out = SavedTensor(out);                        // what the formula needs
//     set_history(out, node);                              // out.grad_fn() == node
//     return out;
//   }
//
// Note [Recording]
// ~~~~~~~~~~~~~~~~
// An entry point records a node only when its OpCall decides to: autograd::OpCall::records
// (rcuda/autograd/funnel.h, Note [The funnel]) is true when grad mode is on and some input
// requires grad, and that is the one place the decision is made. Otherwise the entry point is
// the no-grad op and costs nothing more. When it records:
// - the no-grad op runs under below_autograd (grad mode off), so that views it takes of its
//   inputs, and any entry point it reaches, record nothing: the node made here is the op's
//   only history, and its formula is the op's whole gradient;
// - make_node takes the OpId of the public op that records (Node::op, so that a graph prints by
//   op name), each input's edge (its grad_fn's output, or its leaf accumulator) and the
//   metadata the engine checks gradients against (shape, dtype, device);
// - the node saves only what its formula reads (SavedTensor, version-checked; sizes and
//   attributes as plain values), so that recording keeps no more memory alive than backward
//   needs;
// - set_history makes the node the output's grad_fn. Non-floating outputs (indices, comparison
//   results) get no history: they carry no gradient.
// Layers above autograd (src/nn) record nodes of their own the same way, for functions whose
// forward and backward are fused primitives of rcuda/ops.
#pragma once

#include <memory>
#include <utility>

#include "rcuda/autograd/node.h"
#include "rcuda/tensor/autograd_meta.h"

namespace rcuda::autograd {

inline bool needs_grad(const Tensor& t) { return t.defined() && t.requires_grad(); }

// Runs the no-grad ops with grad mode off, so views they take of inputs record nothing.
template <typename F>
auto below_autograd(F&& f) {
  NoGradGuard guard;
  return f();
}

// The edge a gradient of t flows along: its grad_fn's output, or its leaf accumulator.
Edge gradient_edge(const Tensor& t);

// A node of type N recorded by the public op `op` (its OpCall's op()), with one input per
// tensor. The OpId is required, so that no recorded node goes without its op's name.
template <typename N, typename... Ts>
std::shared_ptr<N> make_node(OpId op, const Ts&... inputs) {
  auto node = std::make_shared<N>();
  node->set_op(op);
  node->reserve_inputs(sizeof...(inputs));
  (node->add_input(inputs), ...);
  return node;
}
template <typename N>
std::shared_ptr<N> make_node_list(OpId op, const std::vector<Tensor>& inputs) {
  auto node = std::make_shared<N>();
  node->set_op(op);
  node->reserve_inputs(inputs.size());
  for (const Tensor& t : inputs) node->add_input(t);
  return node;
}

// Makes `node` the grad_fn of `out` (output `output_nr`). Non-floating outputs (indices,
// comparisons) get no history: they carry no gradient.
// By value: a caller done with its node moves it in (std::move), saving two reference counts.
void set_history(const Tensor& out, std::shared_ptr<Node> node, uint32_t output_nr = 0);

// Checks before an in-place op records: a leaf that requires grad cannot be changed in place
// while grad mode is on, and a view cannot take a history (its base would not see it).
void check_inplace(const char* op, const Tensor& self);
// The second of those refusals, for an in-place op that must record: ValueError naming op
// when self is a view, ending with `advice`.
void check_not_view(const char* op, const Tensor& self,
                    const char* advice = "use the out-of-place op");

}  // namespace rcuda::autograd
