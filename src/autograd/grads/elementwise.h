// Backward nodes of the elementwise family (entry points in src/autograd/elementwise.cpp).
#pragma once

#include "rcuda/autograd/node.h"
#include "rcuda/backend/backend.h"

namespace rcuda::autograd {

struct UnaryBackward final : Node {
  UnaryOp op = UnaryOp::Neg;
  UnaryArgs args;
  SavedTensor x, out;  // the formula reads one or both (unary_grad's contract)
  const char* name() const override;
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override;
  void release_saved() override {
    x.release();
    out.release();
  }
};

// a (op) b; with `b_is_number`, b is the plain number `number` (no edge, no saved tensor).
struct BinaryBackward final : Node {
  BinaryOp op = BinaryOp::Add;
  double alpha = 1;  // add/sub: a + alpha * b
  bool a_is_number = false, b_is_number = false;
  double number = 0;
  // mul_ saves self's old value as a copy without history: it cannot record its formula.
  bool in_place = false;
  SavedTensor a, b, out;
  const char* name() const override;
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return !(in_place && op == BinaryOp::Mul); }
  void release_saved() override {
    a.release();
    b.release();
    out.release();
  }
};

// where(condition, a, b): inputs a and b.
struct WhereBackward final : Node {
  SavedTensor condition;
  const char* name() const override { return "WhereBackward"; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
  void release_saved() override { condition.release(); }
};

}  // namespace rcuda::autograd
