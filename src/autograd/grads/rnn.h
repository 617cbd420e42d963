// Backward node of the recurrent layers (entry point in src/autograd/rnn.cpp).
#pragma once

#include <vector>

#include "rcuda/autograd/node.h"
#include "rcuda/ops/rnn.h"

namespace rcuda::autograd {

// Inputs (input, hx, cx, weights...), hx and cx possibly undefined; outputs (output, h_n, c_n),
// c_n for LSTM only. One formula for every mode: the backend's rnn_backward from the saved
// operands, the output and the reserve of the forward; double backward is not supported.
struct RnnBackward final : Node {
  ops::RnnParams params;
  SavedTensor input, hx, cx, output, reserve;
  std::vector<SavedTensor> weights;
  const char* name() const override;
  TensorList apply(TensorList&& grads) override;
  void release_saved() override;
};

}  // namespace rcuda::autograd
