// Entry point of the recurrent layers: one RnnBackward node (grads/rnn.h) per call.
#include "rcuda/autograd/rnn.h"

#include <string>
#include <vector>

#include "grads/rnn.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"

namespace rcuda {
namespace {

using autograd::OpCall;
using autograd::RnnBackward;
using autograd::SavedTensor;

OpId rnn_op(ops::RnnMode mode) {
  switch (mode) {
    case ops::RnnMode::Lstm:
      return OpId::Lstm;
    case ops::RnnMode::Gru:
      return OpId::Gru;
    case ops::RnnMode::RnnTanh:
    case ops::RnnMode::RnnRelu:
      return OpId::Rnn;
  }
  return OpId::Rnn;
}

// The attributes rcuda::nn::rnn reports (docs/graph.md), so that a replay through it runs this
// call: no dropout between layers here; the hidden size is w_hh_l0's second dim ([G * H, H]).
Attributes rnn_attributes(const std::vector<Tensor>& weights, const ops::RnnParams& params) {
  return {{"mode", std::string(ops::rnn_mode_name(params.mode))},
          {"num_layers", params.num_layers},
          {"hidden_size", weights.at(1).size(1)},
          {"bidirectional", params.bidirectional},
          {"batch_first", params.batch_first},
          {"dropout", 0.0},
          {"training", params.training}};
}

}  // namespace

ops::RnnOutputs rnn(const Tensor& input, const Tensor& hx, const Tensor& cx,
                    const std::vector<Tensor>& weights, const ops::RnnParams& params) {
  OpCall call(rnn_op(params.mode), input);
  if (call.autocasts()) {
    std::vector<Tensor> cast_weights;
    for (const Tensor& w : weights) cast_weights.push_back(call.cast(w));
    return rnn(call.cast(input), call.cast(hx), call.cast(cx), cast_weights, params);
  }
  std::vector<Tensor> inputs = {input, hx, cx};
  inputs.insert(inputs.end(), weights.begin(), weights.end());
  ops::RnnOutputs r;
  if (!OpCall::records_list(inputs)) {
    r = ops::rnn_forward(input, hx, cx, weights, params);
  } else {
    ops::RnnParams training = params;
    training.training = true;  // the backward reads the reserve
    r = autograd::below_autograd(
        [&] { return ops::rnn_forward(input, hx, cx, weights, training); });
    auto node = autograd::make_node_list<RnnBackward>(call.op(), inputs);
    node->params = training;
    node->input = SavedTensor(input, SavedTensor::kInput);
    node->hx = SavedTensor(hx, SavedTensor::kInput);
    node->cx = SavedTensor(cx, SavedTensor::kInput);
    for (const Tensor& w : weights) node->weights.emplace_back(w, SavedTensor::kInput);
    node->output = SavedTensor(r.output);
    node->reserve = SavedTensor(r.reserve);
    const bool lstm = params.mode == ops::RnnMode::Lstm;
    node->set_num_outputs(lstm ? 3 : 2);
    autograd::set_history(r.output, node, 0);
    autograd::set_history(r.h_n, node, 1);
    if (lstm) autograd::set_history(r.c_n, node, 2);
  }
  r.reserve = Tensor();
  // inputs: input, hx, cx (undefined when absent: always for GRU and RNN), then each weight;
  // outputs: output, h_n, and c_n for an LSTM.
  if (call.reported()) {
    std::vector<Tensor> outputs{r.output, r.h_n};
    if (params.mode == ops::RnnMode::Lstm) outputs.push_back(r.c_n);
    call.report(inputs, rnn_attributes(weights, params), outputs);
  }
  return r;
}

}  // namespace rcuda
