// rcuda::nn::rnn: the recording rcuda::rnn (rcuda/autograd/rnn.h), one call for the whole stack
// or, with dropout between layers, one call per layer.
//
// Note [Dropout between recurrent layers]
// The backends run a stack without dropout (Note [Recurrent primitives]). When training with
// dropout > 0, each layer is a call of its own and rcuda::nn::dropout (Philox, the default
// generator) takes every layer's output but the last's, as torch's nn.LSTM does: the mask is
// then the same on every backend for a seed, and its gradient comes by composition through
// DropoutBackward, so the recurrent primitives need no dropout state of their own (cuDNN's
// dropout descriptor draws a mask no other backend could repeat).
#include "rcuda/nn/rnn.h"

#include <cstddef>
#include <string>
#include <vector>

#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/rnn.h"
#include "rcuda/core/error.h"
#include "rcuda/nn/layers.h"

namespace rcuda::nn {
namespace {

ops::RnnParams params_of(const RnnOptions& o) {
  ops::RnnParams p;
  p.mode = o.mode;
  p.num_layers = o.num_layers;
  p.bidirectional = o.bidirectional;
  p.batch_first = o.batch_first;
  return p;
}

RnnResult result_of(const ops::RnnOutputs& r) { return {r.output, r.h_n, r.c_n}; }

// Note [Dropout between recurrent layers]: layer by layer, the states sliced and joined again.
RnnResult layer_by_layer(const Tensor& input, const Tensor& hx, const Tensor& cx,
                         const std::vector<Tensor>& weights, const RnnOptions& o) {
  ops::RnnParams one = params_of(o);
  one.num_layers = 1;
  const int64_t D = o.bidirectional ? 2 : 1;
  const size_t per_layer = weights.size() / static_cast<size_t>(o.num_layers);
  std::vector<Tensor> h_n, c_n;
  Tensor x = input;
  for (int64_t l = 0; l < o.num_layers; ++l) {
    const std::vector<Tensor> w(weights.begin() + static_cast<std::ptrdiff_t>(l * per_layer),
                                weights.begin() + static_cast<std::ptrdiff_t>((l + 1) * per_layer));
    const Tensor h = hx.defined() ? hx.narrow(0, l * D, D) : Tensor();
    const Tensor c = cx.defined() ? cx.narrow(0, l * D, D) : Tensor();
    const ops::RnnOutputs r = rcuda::rnn(x, h, c, w, one);
    x = l < o.num_layers - 1 ? dropout(r.output, o.dropout, true) : r.output;
    h_n.push_back(r.h_n);
    if (r.c_n.defined()) c_n.push_back(r.c_n);
  }
  return {x, cat(h_n, 0), c_n.empty() ? Tensor() : cat(c_n, 0)};
}

// What a call reports: its tensors (input, hx, cx, then the weights; hx and cx undefined when
// not given), its options and the hidden size (w_hh_l0 is [G * H, H]), and its outputs (c_n
// for LSTM only).
void report_rnn(const autograd::OpCall& call, const Tensor& input, const Tensor& hx,
                const Tensor& cx, const std::vector<Tensor>& weights, const RnnOptions& o,
                const RnnResult& result) {
  std::vector<Tensor> inputs = {input, hx, cx};
  inputs.insert(inputs.end(), weights.begin(), weights.end());
  std::vector<Tensor> outputs = {result.output, result.h_n};
  if (result.c_n.defined()) outputs.push_back(result.c_n);
  call.report(inputs,
              {{"mode", std::string(ops::rnn_mode_name(o.mode))},
               {"num_layers", o.num_layers},
               {"hidden_size", weights.at(1).size(1)},
               {"bidirectional", o.bidirectional},
               {"batch_first", o.batch_first},
               {"dropout", o.dropout},
               {"training", o.training}},
              outputs);
}

}  // namespace

RnnResult rnn(const Tensor& input, const Tensor& hx, const Tensor& cx,
              const std::vector<Tensor>& weights, const RnnOptions& options) {
  const OpId op_id = options.mode == Backend::RnnMode::Lstm  ? OpId::Lstm
                     : options.mode == Backend::RnnMode::Gru ? OpId::Gru
                                                             : OpId::Rnn;
  autograd::OpCall call(op_id, input);
  if (call.autocasts()) {
    std::vector<Tensor> cast_weights;
    for (const Tensor& w : weights) cast_weights.push_back(call.cast(w));
    return rnn(call.cast(input), call.cast(hx), call.cast(cx), cast_weights, options);
  }
  const char* op = ops::rnn_mode_name(options.mode);
  RCUDA_CHECK(options.dropout >= 0 && options.dropout <= 1, ValueError, op,
              ": dropout must be in [0, 1], got ", options.dropout);
  const ops::RnnParams p = params_of(options);
  RnnResult result;
  if (!options.training || options.dropout == 0 || options.num_layers == 1) {
    result = result_of(rcuda::rnn(input, hx, cx, weights, p));
  } else {
    ops::check_rnn_arguments(input, hx, cx, weights, p);  // errors name the whole stack's weights
    result = layer_by_layer(input, hx, cx, weights, options);
  }
  if (call.reported()) report_rnn(call, input, hx, cx, weights, options, result);
  return result;
}

RnnResult lstm(const Tensor& input, const Tensor& hx, const Tensor& cx,
               const std::vector<Tensor>& weights, RnnOptions options) {
  options.mode = Backend::RnnMode::Lstm;
  return rnn(input, hx, cx, weights, options);
}

RnnResult gru(const Tensor& input, const Tensor& hx, const std::vector<Tensor>& weights,
              RnnOptions options) {
  options.mode = Backend::RnnMode::Gru;
  return rnn(input, hx, Tensor(), weights, options);
}

}  // namespace rcuda::nn
