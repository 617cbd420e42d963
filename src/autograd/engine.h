// The engine's entry, shared by backward() and grad() (functions.cpp).
#pragma once

#include "rcuda/autograd/node.h"

namespace rcuda::autograd {

// Runs backward from outputs. With `captures`, returns the gradient arriving at each captured
// edge and runs only what leads there (no leaf's grad changes); else accumulates into leaves.
// With create_graph, the pass records its own graph and keeps this one (Note [Gradients of
// gradients] in docs/autograd.md).
TensorList run_backward(const TensorList& outputs, const TensorList& grad_outputs,
                        bool retain_graph, bool create_graph, const std::vector<Edge>* captures,
                        const char* op);

// grad summed over the dims where `shape` broadcasts to grad's shape.
Tensor sum_to(const Tensor& grad, const Shape& shape);

}  // namespace rcuda::autograd
