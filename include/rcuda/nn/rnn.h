// Recurrent layers as torch's nn.LSTM, nn.GRU and nn.RNN compute them, in functional form: the
// weights are the caller's (PyTorch's _flat_weights order), the equations Note [Recurrent
// primitives] in rcuda/backend/backend.h. Differentiable with respect to input, hx, cx and every
// weight, from gradients of any of output, h_n and c_n. docs/rnn.md has the design.
//
//   std::vector<Tensor> w = {w_ih_l0, w_hh_l0, b_ih_l0, b_hh_l0};
//   nn::RnnResult r = nn::lstm(x, Tensor(), Tensor(), w, {});   // x [T, N, I]
//   autograd::backward(sum(r.output));
#pragma once

#include <cstdint>
#include <vector>

#include "rcuda/backend/backend.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::nn {

struct RnnOptions {
  Backend::RnnMode mode = Backend::RnnMode::Lstm;
  int64_t num_layers = 1;
  bool bidirectional = false;
  bool batch_first = false;  // input [N, T, I] and output [N, T, D*H]; h/c stay [L*D, N, H]
  double dropout = 0;        // on every layer's output but the last, when training
  bool training = true;
};
struct RnnResult {
  Tensor output, h_n, c_n;  // c_n undefined unless LSTM
};

// input [T, N, I] (or [N, T, I]) or unbatched [T, I]; hx/cx undefined = zeros; weights as in
// the Backend contract (PyTorch's _flat_weights order): per layer and direction w_ih [G * H,
// I_l], w_hh [G * H, H], then b_ih and b_hh [G * H] unless the layers have no biases.
// Dropout (0 <= dropout <= 1, ValueError otherwise) draws from the default generator
// (rcuda::nn::dropout), so a seed repeats it; with dropout the layers run one call each.
RnnResult rnn(const Tensor& input, const Tensor& hx, const Tensor& cx,
              const std::vector<Tensor>& weights, const RnnOptions& options);

// rnn with options.mode set to Lstm, Gru.
RnnResult lstm(const Tensor& input, const Tensor& hx, const Tensor& cx,
               const std::vector<Tensor>& weights, RnnOptions options = {});
RnnResult gru(const Tensor& input, const Tensor& hx, const std::vector<Tensor>& weights,
              RnnOptions options = {});

}  // namespace rcuda::nn
