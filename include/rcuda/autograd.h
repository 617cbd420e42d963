// Autograd: gradients of tensors that require them, recorded by the public ops (rcuda::add,
// rcuda::matmul, ...; rcuda/autograd/api.h) and computed by a backward pass over the graph.
//
//   Tensor w = randn({3, 4}).requires_grad_();
//   Tensor loss = sum(relu(matmul(x, w)));
//   autograd::backward(loss);          // w.grad() now holds d loss / d w
//
// docs/autograd.md explains how ops record, where formulas live and what is checked.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "rcuda/autograd/node.h"
#include "rcuda/tensor/autograd_meta.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::autograd {

// Gradients of `outputs` (with `grad_outputs`, or ones for one-element outputs) accumulated into
// the `grad` of every leaf that requires grad. The graph is freed unless retain_graph.
// ValueError when an output does not require grad; ShapeError for a grad_output of the wrong
// shape; a second backward through a freed graph is a ValueError naming the node.
// With create_graph, the backward pass is recorded: the gradients (and `grad`) have a history of
// their own, to differentiate again (a gradient penalty, a Hessian-vector product), and the graph
// is kept as with retain_graph. An op whose backward cannot record is a ValueError naming it
// (Note [Gradients of gradients] in docs/autograd.md lists the ops).
void backward(const TensorList& outputs, const TensorList& grad_outputs = {},
              bool retain_graph = false, bool create_graph = false);
void backward(const Tensor& output, const Tensor& grad_output = Tensor(), bool retain_graph = false,
              bool create_graph = false);

// Gradients of `outputs` with respect to `inputs`, returned rather than accumulated: no `grad`
// changes. An input that the outputs do not depend on is a ValueError unless allow_unused, where
// its gradient is undefined. create_graph as for backward().
TensorList grad(const TensorList& outputs, const TensorList& inputs,
                const TensorList& grad_outputs = {}, bool retain_graph = false,
                bool allow_unused = false, bool create_graph = false);

// A tensor sharing t's data (and version counter) with no history: it does not require grad.
Tensor detach(const Tensor& t);
// Keeps the gradient of a non-leaf in its `grad` during backward (leaves always keep theirs).
void retain_grad(const Tensor& t);
// hook(grad) runs when t's gradient is computed; a defined result replaces the gradient (same
// shape required). ValueError for a tensor that does not require grad.
void register_hook(const Tensor& t, GradHook hook);

// hook(leaf) runs after a backward pass has accumulated a gradient into leaf.grad() (torch's
// Tensor.register_post_accumulate_grad_hook): data-parallel training starts a bucket's
// all-reduce there. Returns an id for remove_post_accumulate_grad_hook. ValueError for a tensor
// that is not a leaf requiring grad.
using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;
int64_t register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook);
// Removes a hook by its id; an id already removed (or of a freed leaf) is ignored.
void remove_post_accumulate_grad_hook(const Tensor& leaf, int64_t id);
// callback runs once, when the backward pass running now has finished every node (torch's
// Variable._execution_engine.queue_callback): data-parallel training waits for its all-reduces
// there. ValueError outside a backward pass. An exception from it ends the backward call with it.
void queue_callback(std::function<void()> callback);

}  // namespace rcuda::autograd
