// Backward nodes of views and copies (entry points in src/autograd/views.cpp).
#pragma once

#include "rcuda/autograd/node.h"

namespace rcuda::autograd {

// A view method of Tensor (Note [Views record through a hook] in rcuda/tensor/autograd_meta.h).
struct ViewBackward final : Node {
  ViewSpec spec;
  const char* name() const override;
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
};

// The gradient of a ViewBackward that writes into zeros (slice, select, diagonal, as_strided),
// recorded in a backward pass that creates a graph: input the gradient g, of the view's shape;
// its own gradient is the same view taken again (Note [Gradients of gradients]).
struct ViewScatterBackward final : Node {
  ViewSpec spec;
  const char* name() const override { return "ViewScatterBackward"; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
};

// reshape/flatten (view or copy): the gradient takes the input's shape back.
struct ReshapeBackward final : Node {
  const char* name() const override { return "ReshapeBackward"; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
};

// to(dtype/device), contiguous, clone: the gradient goes back to the input's dtype and
// device; the engine casts dtype, this node moves devices.
struct ToBackward final : Node {
  const char* name_ = "ToBackward";
  const char* name() const override { return name_; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
};

// copy_(dst, src): dst's old history gets nothing (overwritten), src gets the gradient.
struct CopyBackward final : Node {
  const char* name() const override { return "CopyBackward"; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
};

// fill_: the old values are overwritten; nothing flows back.
struct FillBackward final : Node {
  const char* name() const override { return "FillBackward"; }
  TensorList apply(TensorList&& grads) override { return {Tensor()}; }
  bool supports_create_graph() const override { return true; }
};

}  // namespace rcuda::autograd
