// Recurrent layers without autograd (LSTM, GRU, RNN with tanh or relu): the forward and backward
// halves that the recording rcuda::rnn (rcuda/autograd/rnn.h) and rcuda::nn::rnn call. The
// equations and the weights' order are Note [Recurrent primitives] in rcuda/backend/backend.h
// (PyTorch's); docs/rnn.md says how each backend runs them.
//
// input [T, N, I] (batch_first: [N, T, I]) or unbatched [T, I]; hx and cx [L * D, N, H]
// (unbatched: [L * D, H]) or undefined (zeros); weights per layer l and direction d, in
// PyTorch's _flat_weights order: w_ih [G * H, I_l], w_hh [G * H, H], then b_ih and b_hh [G * H]
// when the layers have biases (G = 4 LSTM, 3 GRU, 1 RNN; I_0 = I, I_l = D * H). The hidden size
// H is w_hh's second dim, has_biases follows from the number of weights. Any strides are
// accepted (operands are made contiguous here). Dtypes: one floating dtype for every tensor;
// the CPU takes all four (float16 and bfloat16 computed in float32), CUDA float32, float16 and
// bfloat16. Errors name the op, the argument and the values.
#pragma once

#include <cstdint>
#include <vector>

#include "rcuda/backend/backend.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

using RnnMode = Backend::RnnMode;

// "lstm", "gru", "rnn_tanh", "rnn_relu" (for messages).
const char* rnn_mode_name(RnnMode mode);

struct RnnParams {
  RnnMode mode = RnnMode::Lstm;
  int64_t num_layers = 1;  // >= 1
  bool bidirectional = false;
  bool batch_first = false;  // input and output [N, T, ...]; hx, cx, h_n and c_n stay [L * D, N, H]
  // Keep what rnn_backward needs (the backend's reserve).
  bool training = false;
};

struct RnnOutputs {
  Tensor output;   // [T, N, D * H] (batch_first [N, T, D * H], unbatched [T, D * H])
  Tensor h_n;      // hx's shape: the last step's hidden state of every layer and direction
  Tensor c_n;      // LSTM: the last cell states; undefined otherwise
  Tensor reserve;  // params.training: what rnn_backward reads; undefined otherwise
};

// The checks rnn_forward makes, alone (for callers that split a call into one per layer).
void check_rnn_arguments(const Tensor& input, const Tensor& hx, const Tensor& cx,
                         const std::vector<Tensor>& weights, const RnnParams& params);

RnnOutputs rnn_forward(const Tensor& input, const Tensor& hx, const Tensor& cx,
                       const std::vector<Tensor>& weights, const RnnParams& params);

// Which gradients to compute.
struct RnnWanted {
  bool input = true, hx = true, cx = true, weights = true;
};
struct RnnGrads {
  Tensor input, hx, cx;         // the shapes of the forward's input, hx and cx (undefined when
                                // not wanted, or when hx / cx was undefined)
  std::vector<Tensor> weights;  // weights' shapes and order; empty when not wanted
};

// The gradients of sum(output * grad_output) + sum(h_n * grad_h_n) + sum(c_n * grad_c_n) from
// a training forward's arguments and results (any of the three gradients may be undefined:
// zero). `output` and `reserve` are rnn_forward's.
RnnGrads rnn_backward(const Tensor& grad_output, const Tensor& grad_h_n, const Tensor& grad_c_n,
                      const Tensor& input, const Tensor& hx, const Tensor& cx,
                      const std::vector<Tensor>& weights, const Tensor& output,
                      const Tensor& reserve, const RnnParams& params, const RnnWanted& wanted = {});

}  // namespace rcuda::ops
