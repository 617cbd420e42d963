// backward(), grad(), detach(), retain_grad(), register_hook(): the user-facing autograd calls.
#include "engine.h"
#include "rcuda/autograd.h"
#include "rcuda/autograd/record.h"
#include "rcuda/core/error.h"

namespace rcuda::autograd {

void backward(const TensorList& outputs, const TensorList& grad_outputs, bool retain_graph,
              bool create_graph) {
  run_backward(outputs, grad_outputs, retain_graph, create_graph, nullptr, "backward");
}

void backward(const Tensor& output, const Tensor& grad_output, bool retain_graph,
              bool create_graph) {
  backward(TensorList{output}, TensorList{grad_output}, retain_graph, create_graph);
}

TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs,
                bool retain_graph, bool allow_unused, bool create_graph) {
  std::vector<Edge> captures;
  for (size_t i = 0; i < inputs.size(); ++i) {
    RCUDA_CHECK(inputs[i].defined() && inputs[i].requires_grad(), ValueError, "grad: input ", i,
                " does not require grad");
    captures.push_back(gradient_edge(inputs[i]));
  }
  TensorList grads =
      run_backward(outputs, grad_outputs, retain_graph, create_graph, &captures, "grad");
  for (size_t i = 0; i < grads.size(); ++i)
    RCUDA_CHECK(grads[i].defined() || allow_unused, ValueError, "grad: input ", i,
                " was not used to compute the outputs (pass allow_unused = true to get an "
                "undefined gradient for it)");
  return grads;
}

Tensor detach(const Tensor& t) { return t.alias(); }

void retain_grad(const Tensor& t) {
  RCUDA_CHECK(t.requires_grad(), ValueError,
              "retain_grad: the tensor does not require grad, so it has no gradient to keep");
  if (t.is_leaf()) return;  // leaves keep theirs anyway
  AutogradMeta& meta = t.ensure_autograd_meta();
  if (meta.retains_grad) return;
  meta.retains_grad = true;
  meta.grad_fn->retained().push_back({meta.output_nr, t.impl()->autograd});
}

void register_hook(const Tensor& t, GradHook hook) {
  RCUDA_CHECK(t.requires_grad(), ValueError,
              "register_hook: cannot register a hook on a tensor that does not require grad");
  if (t.is_leaf()) {
    t.ensure_autograd_meta().hooks.push_back(std::move(hook));
    return;
  }
  const AutogradMeta* meta = t.autograd_meta();
  meta->grad_fn->hooks().push_back({meta->output_nr, std::move(hook)});
}

}  // namespace rcuda::autograd
