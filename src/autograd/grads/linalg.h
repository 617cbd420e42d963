// Backward nodes of matrix products (entry points in src/autograd/linalg.cpp).
#pragma once

#include "rcuda/autograd/node.h"

namespace rcuda::autograd {

// matmul, mm, bmm: one formula for every rank (torch.matmul's promotions undone).
struct MatmulBackward final : Node {
  const char* name_ = "MmBackward";
  SavedTensor a, b;
  const char* name() const override { return name_; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
  void release_saved() override {
    a.release();
    b.release();
  }
};

// beta * input + alpha * a @ b; inputs (input, a, b).
struct AddmmBackward final : Node {
  double beta = 1, alpha = 1;
  SavedTensor a, b;
  const char* name() const override { return "AddmmBackward"; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
  void release_saved() override {
    a.release();
    b.release();
  }
};

}  // namespace rcuda::autograd
