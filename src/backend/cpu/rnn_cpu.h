// The CPU's recurrent primitives (Note [Recurrent primitives] in backend.h) in two
// implementations: float32 through oneDNN (rnn_onednn.cpp) and float64 through plain loops
// (rnn_loops.cpp). The entry points (rnn.cpp) pick one by dtype and run float16 and bfloat16
// through float32 copies.
#pragma once

#include "rcuda/backend/backend.h"

namespace rcuda::cpu {

using RnnArgs = Backend::RnnArgs;
using RnnMode = Backend::RnnMode;

// Note [oneDNN recurrent layers]
// Each layer is one oneDNN primitive of one layer (L = 1 in oneDNN's terms) with both directions
// (bidirectional_concat), because oneDNN's own stacks differ from PyTorch's: its layers must all
// have one input size, and its bidirectional stack runs each direction's layers on their own and
// joins them at the top, where PyTorch's layer l + 1 reads both directions of layer l. PyTorch's
// weights [G * H, I] (gates in PyTorch's order) are packed into oneDNN's ldigo (and from there
// into whatever layout the primitive asks for), the two biases summed into one per gate (GRU
// keeps b_hn apart: oneDNN's linear-before-reset GRU has a fourth bias for it), and the weight
// gradients unpacked the same way back. The reserve holds, per layer, oneDNN's workspace, the
// layer's output (the next layer's input; not for the last layer, whose output is `out`) and
// its final states (the backward primitive takes them as operands).
Tensor rnn_f32(const RnnArgs& args, const Tensor& out, const Tensor& hy, const Tensor& cy,
               const Tensor& input, const Tensor& hx, const Tensor& cx,
               const Backend::TensorList& weights);
void rnn_backward_f32(const RnnArgs& args, const Tensor& grad_input, const Tensor& grad_hx,
                      const Tensor& grad_cx, const Backend::TensorList& grad_weights,
                      const Tensor& grad_out, const Tensor& grad_hy, const Tensor& grad_cy,
                      const Tensor& input, const Tensor& hx, const Tensor& cx,
                      const Backend::TensorList& weights, const Tensor& out, const Tensor& reserve);

// Note [float64 recurrent layers]
// oneDNN's RNN primitives stop at float32, so float64 runs through plain loops, written from the
// equations of Note [Recurrent primitives]: a step's gates are two matrix-vector products per
// batch row, and the backward is back-propagation through time over the activations the forward
// kept. The reserve holds, per layer, the layer's output (but the last layer's: that is `out`)
// and per direction the activated gates of every step and, for LSTM, the cell states (GRU: the
// hidden-side candidate term W_hn h + b_hn). float64 is what gradient checks and references
// use, where exactness matters more than speed.
Tensor rnn_f64(const RnnArgs& args, const Tensor& out, const Tensor& hy, const Tensor& cy,
               const Tensor& input, const Tensor& hx, const Tensor& cx,
               const Backend::TensorList& weights);
void rnn_backward_f64(const RnnArgs& args, const Tensor& grad_input, const Tensor& grad_hx,
                      const Tensor& grad_cx, const Backend::TensorList& grad_weights,
                      const Tensor& grad_out, const Tensor& grad_hy, const Tensor& grad_cy,
                      const Tensor& input, const Tensor& hx, const Tensor& cx,
                      const Backend::TensorList& weights, const Tensor& out, const Tensor& reserve);

}  // namespace rcuda::cpu
