// The backward node of the factorisations (entry points in src/autograd/linalg_factor.cpp).
#pragma once

#include <vector>

#include "rcuda/autograd/node.h"

namespace rcuda::autograd {

enum class FactorOp : uint8_t { Solve, Inv, Det, Slogdet, Cholesky, Qr, Eigh, Svd };

// One node for the family; what `saved` holds, per op:
//   Solve    {A, X}          inputs (A, B); `flag`: B was a (batch of) vector(s)
//   Inv      {A^-1}
//   Det      {A, det}
//   Slogdet  {A}             outputs (sign, logabsdet); only logabsdet carries a gradient
//   Cholesky {L}             `flag`: the output is U = L^T (upper = TRUE)
//   Qr       {Q, R}          outputs (Q, R)
//   Eigh     {L, V}          outputs (eigenvalues, eigenvectors)
//   Svd      {U, S, Vh}      outputs (U, S, Vh); `flag`: full_matrices
struct FactorBackward final : Node {
  FactorOp op = FactorOp::Solve;
  bool flag = false;
  std::vector<SavedTensor> saved;
  const char* name() const override;
  TensorList apply(TensorList&& grads) override;
  void release_saved() override {
    for (SavedTensor& s : saved) s.release();
  }
};

}  // namespace rcuda::autograd
