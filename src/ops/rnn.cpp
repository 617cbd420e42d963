// Recurrent layers (rcuda/ops/rnn.h): argument checks, the time-major batched layout the
// primitives take (Note [Recurrent primitives] in backend.h), empty sequences and batches, then
// one rnn or rnn_backward primitive per call.
//
// Note [Recurrent layouts]
// The primitives take contiguous time-major operands [T, N, ...]. An unbatched input [T, I] is
// a batch of one (hx [L * D, H] likewise), and batch_first input [N, T, I] is transposed; the
// output goes back the same way, so a batch_first output is the transposed view of a contiguous
// time-major tensor (as PyTorch's), and its backward finds that tensor again without a copy.
// Empty sequences (T = 0) and batches (N = 0) never reach a backend: the output is empty,
// h_n and c_n are the initial states, and the gradients follow from that.
#include "rcuda/ops/rnn.h"

#include <string>
#include <vector>

#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"

namespace rcuda::ops {
namespace {

using RnnArgs = Backend::RnnArgs;

// PyTorch's parameter names: weight_ih_l0, bias_hh_l1_reverse, ...
std::string weight_name(int64_t index, int64_t per_block, int64_t directions) {
  static const char* const kinds[] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
  const int64_t block = index / per_block;
  return std::string(kinds[index % per_block]) + "_l" + std::to_string(block / directions) +
         (block % directions == 1 ? "_reverse" : "");
}

// Everything the checks establish about a call.
struct Layout {
  RnnArgs args;
  bool unbatched = false;
  int64_t T = 0, N = 0, I = 0;
  Shape state_shape;  // of hx, cx, h_n and c_n as the caller sees them
};

void check_like(const char* op, const std::string& arg, const Tensor& t, const Tensor& input) {
  RCUDA_CHECK(t.dtype() == input.dtype(), DTypeError, op, ": ", arg, " is ", dtype_name(t.dtype()),
              " but input is ", dtype_name(input.dtype()), " (every tensor must have one dtype)");
  RCUDA_CHECK(t.device() == input.device(), DeviceError, op, ": ", arg, " is on ", t.device().str(),
              " but input is on ", input.device().str());
}

void check_state(const char* op, const char* arg, const Tensor& t, const Layout& a,
                 const Tensor& input) {
  if (!t.defined()) return;
  check_like(op, arg, t, input);
  RCUDA_CHECK(t.shape() == a.state_shape, ShapeError, op, ": ", arg, " must have shape ",
              shape_str(a.state_shape), " ([num_layers * num_directions, ",
              a.unbatched ? "hidden_size] for unbatched input" : "batch, hidden_size]",
              "), got shape ", shape_str(t.shape()));
}

// The hidden size, from weight_hh_l0 [G * H, H].
int64_t hidden_size(const char* op, const Tensor& w_hh, int64_t gates) {
  RCUDA_CHECK(w_hh.defined(), ValueError, op, ": weight_hh_l0 is undefined");
  RCUDA_CHECK(w_hh.dim() == 2 && w_hh.size(0) == gates * w_hh.size(1), ShapeError, op,
              ": weight_hh_l0 must be [", gates, " * hidden_size, hidden_size], got shape ",
              shape_str(w_hh.shape()));
  RCUDA_CHECK(w_hh.size(1) >= 1, ValueError, op,
              ": hidden_size (weight_hh_l0's second dim) must be >= 1, got ", w_hh.size(1));
  return w_hh.size(1);
}

void check_weights(const char* op, const std::vector<Tensor>& weights, const Layout& a,
                   const Tensor& input) {
  const int64_t per_block = a.args.has_biases ? 4 : 2, D = a.args.directions;
  const int64_t G = Backend::rnn_gates(a.args.mode), H = a.args.hidden;
  for (size_t k = 0; k < weights.size(); ++k) {
    const std::string name = weight_name(static_cast<int64_t>(k), per_block, D);
    const Tensor& w = weights[k];
    RCUDA_CHECK(w.defined(), ValueError, op, ": ", name, " is undefined");
    check_like(op, name, w, input);
    const int64_t kind = static_cast<int64_t>(k) % per_block;
    const int64_t layer = static_cast<int64_t>(k) / per_block / D;
    const Shape expected = kind == 0   ? Shape{G * H, layer == 0 ? a.I : D * H}
                           : kind == 1 ? Shape{G * H, H}
                                       : Shape{G * H};
    RCUDA_CHECK(w.shape() == expected, ShapeError, op, ": ", name, " must have shape ",
                shape_str(expected),
                kind == 0 && layer == 0 ? " ([gates * hidden_size, input_size])"
                : kind == 0             ? " ([gates * hidden_size, num_directions * hidden_size])"
                                        : "",
                ", got shape ", shape_str(w.shape()));
  }
}

Layout check(const char* op, const Tensor& input, const Tensor& hx, const Tensor& cx,
             const std::vector<Tensor>& weights, const RnnParams& p) {
  Layout a;
  a.args.mode = p.mode;
  a.args.layers = p.num_layers;
  a.args.directions = p.bidirectional ? 2 : 1;
  a.args.training = p.training;
  RCUDA_CHECK(p.num_layers >= 1, ValueError, op, ": num_layers must be >= 1, got ", p.num_layers);
  RCUDA_CHECK(input.defined(), ValueError, op, ": input is undefined");
  check_not_float8(op, input);
  check_floating(op, "input", input);
  RCUDA_CHECK(input.dim() == 2 || input.dim() == 3, ShapeError, op, ": input must be 3-D ",
              p.batch_first ? "[batch, seq_len" : "[seq_len, batch",
              ", input_size] or 2-D unbatched [seq_len, input_size], got shape ",
              shape_str(input.shape()));
  a.unbatched = input.dim() == 2;
  a.T = input.size(p.batch_first && !a.unbatched ? 1 : 0);
  a.N = a.unbatched ? 1 : input.size(p.batch_first ? 0 : 1);
  a.I = input.size(-1);
  RCUDA_CHECK(a.I >= 1, ShapeError, op,
              ": input_size (input's last dim) must be >= 1, got input of shape ",
              shape_str(input.shape()));
  const int64_t blocks = p.num_layers * a.args.directions;
  const int64_t count = static_cast<int64_t>(weights.size());
  RCUDA_CHECK(count == 4 * blocks || count == 2 * blocks, ValueError, op, ": expected ", 4 * blocks,
              " weights (weight_ih, weight_hh, bias_ih, bias_hh for each of ", p.num_layers,
              " layers x ", a.args.directions, " directions) or ", 2 * blocks,
              " (without biases), got ", count);
  a.args.has_biases = count == 4 * blocks;
  a.args.hidden = hidden_size(op, weights[1], Backend::rnn_gates(p.mode));
  check_weights(op, weights, a, input);
  a.state_shape = a.unbatched ? Shape{blocks, a.args.hidden} : Shape{blocks, a.N, a.args.hidden};
  check_state(op, "hx", hx, a, input);
  if (p.mode == RnnMode::Lstm)
    check_state(op, "cx", cx, a, input);
  else
    RCUDA_CHECK(!cx.defined(), ValueError, op,
                ": cx (the initial cell state) is for LSTM only, got one of shape ",
                shape_str(cx.shape()));
  return a;
}

// Note [Recurrent layouts]: the caller's [T, N, ...] / [N, T, ...] / [T, ...] as contiguous
// time-major batched, and back.
Tensor to_time_major(const Tensor& t, const Layout& a, bool batch_first) {
  if (a.unbatched) return contiguous(t.unsqueeze(1));
  return contiguous(batch_first ? t.transpose(0, 1) : t);
}
Tensor from_time_major(const Tensor& t, const Layout& a, bool batch_first) {
  if (a.unbatched) return t.squeeze(1);
  return batch_first ? t.transpose(0, 1) : t;
}
Tensor state_in(const Tensor& t, const Layout& a) {
  if (!t.defined()) return t;
  return contiguous(a.unbatched ? t.unsqueeze(1) : t);
}
Tensor state_out(const Tensor& t, const Layout& a) {
  return t.defined() && a.unbatched ? t.squeeze(1) : t;
}

std::vector<Tensor> contiguous_all(const std::vector<Tensor>& weights) {
  std::vector<Tensor> out;
  out.reserve(weights.size());
  for (const Tensor& w : weights) out.push_back(contiguous(w));
  return out;
}

Tensor zeros_as(const Shape& shape, const Tensor& like) {
  return zeros(shape, TensorOptions(like.dtype(), like.device()));
}
// A gradient buffer: zeros when the primitive will not write it (an empty sequence or batch).
Tensor grad_buffer(const Shape& shape, const Tensor& like, bool zero) {
  return zero ? zeros_as(shape, like) : new_empty(shape, like.dtype(), like.device());
}

void check_grad(const char* op, const char* arg, const Tensor& g, const Shape& expected,
                const Tensor& input) {
  if (!g.defined()) return;
  check_like(op, arg, g, input);
  RCUDA_CHECK(g.shape() == expected, ShapeError, op, ": ", arg, " must have shape ",
              shape_str(expected), ", got shape ", shape_str(g.shape()));
}

}  // namespace

const char* rnn_mode_name(RnnMode mode) {
  switch (mode) {
    case RnnMode::Lstm:
      return "lstm";
    case RnnMode::Gru:
      return "gru";
    case RnnMode::RnnTanh:
      return "rnn_tanh";
    case RnnMode::RnnRelu:
      return "rnn_relu";
  }
  return "rnn";
}

void check_rnn_arguments(const Tensor& input, const Tensor& hx, const Tensor& cx,
                         const std::vector<Tensor>& weights, const RnnParams& params) {
  check(rnn_mode_name(params.mode), input, hx, cx, weights, params);
}

RnnOutputs rnn_forward(const Tensor& input, const Tensor& hx, const Tensor& cx,
                       const std::vector<Tensor>& weights, const RnnParams& params) {
  const char* op = rnn_mode_name(params.mode);
  const Layout a = check(op, input, hx, cx, weights, params);
  const bool lstm = params.mode == RnnMode::Lstm;
  const int64_t blocks = a.args.layers * a.args.directions, H = a.args.hidden;
  const Shape state = {blocks, a.N, H};
  const Tensor h0 = hx.defined() ? state_in(hx, a) : zeros_as(state, input);
  const Tensor c0 = !lstm ? Tensor() : cx.defined() ? state_in(cx, a) : zeros_as(state, input);
  const Tensor x = to_time_major(input, a, params.batch_first);
  RnnOutputs r;
  const Tensor out = new_empty({a.T, a.N, a.args.directions * H}, input.dtype(), input.device());
  if (a.T == 0 || a.N == 0) {
    r.h_n = clone(h0);
    if (lstm) r.c_n = clone(c0);
  } else {
    r.h_n = new_empty(state, input.dtype(), input.device());
    if (lstm) r.c_n = new_empty(state, input.dtype(), input.device());
    r.reserve =
        backend_of(input).rnn(a.args, out, r.h_n, r.c_n, x, h0, c0, contiguous_all(weights));
  }
  r.output = from_time_major(out, a, params.batch_first);
  r.h_n = state_out(r.h_n, a);
  r.c_n = state_out(r.c_n, a);
  return r;
}

RnnGrads rnn_backward(const Tensor& grad_output, const Tensor& grad_h_n, const Tensor& grad_c_n,
                      const Tensor& input, const Tensor& hx, const Tensor& cx,
                      const std::vector<Tensor>& weights, const Tensor& output,
                      const Tensor& reserve, const RnnParams& params, const RnnWanted& wanted) {
  const char* op = rnn_mode_name(params.mode);
  RnnParams training = params;
  training.training = true;
  RCUDA_CHECK(output.defined(), ValueError, op, ": output (the forward's) is undefined");
  const Layout a = check(op, input, hx, cx, weights, training);
  const bool lstm = params.mode == RnnMode::Lstm;
  const int64_t blocks = a.args.layers * a.args.directions, H = a.args.hidden;
  const Shape state = {blocks, a.N, H};
  const Shape out_shape = {a.T, a.N, a.args.directions * H};
  check_grad(op, "grad_output", grad_output, output.shape(), input);
  check_grad(op, "grad_h_n", grad_h_n, a.state_shape, input);
  check_grad(op, "grad_c_n", grad_c_n, a.state_shape, input);
  RnnGrads r;
  const bool empty = a.T == 0 || a.N == 0;
  const bool want_hx = wanted.hx && hx.defined(), want_cx = lstm && wanted.cx && cx.defined();
  const Tensor gi = wanted.input ? grad_buffer({a.T, a.N, a.I}, input, empty) : Tensor();
  const Tensor gh = want_hx ? grad_buffer(state, input, empty) : Tensor();
  const Tensor gc = want_cx ? grad_buffer(state, input, empty) : Tensor();
  if (wanted.weights)
    for (const Tensor& w : weights) r.weights.push_back(grad_buffer(w.shape(), input, empty));
  if (empty) {
    // h_n and c_n were the initial states themselves.
    if (want_hx && grad_h_n.defined()) copy_(gh, state_in(grad_h_n, a));
    if (want_cx && grad_c_n.defined()) copy_(gc, state_in(grad_c_n, a));
  } else {
    RCUDA_CHECK(reserve.defined(), ValueError, op,
                ": backward needs the reserve of a forward run with training = true");
    const Tensor h0 = hx.defined() ? state_in(hx, a) : zeros_as(state, input);
    const Tensor c0 = !lstm ? Tensor() : cx.defined() ? state_in(cx, a) : zeros_as(state, input);
    const Tensor g_out = grad_output.defined() ? to_time_major(grad_output, a, params.batch_first)
                                               : zeros_as(out_shape, input);
    backend_of(input).rnn_backward(
        a.args, gi, gh, gc, r.weights, g_out, state_in(grad_h_n, a),
        lstm ? state_in(grad_c_n, a) : Tensor(), to_time_major(input, a, params.batch_first), h0,
        c0, contiguous_all(weights), to_time_major(output, a, params.batch_first), reserve);
  }
  if (wanted.input) r.input = from_time_major(gi, a, params.batch_first);
  r.hx = state_out(gh, a);
  r.cx = state_out(gc, a);
  return r;
}

}  // namespace rcuda::ops
