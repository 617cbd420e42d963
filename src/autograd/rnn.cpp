// Entry point of the recurrent layers: one RnnBackward node (grads/rnn.h) per call.
#include "rcuda/autograd/rnn.h"

#include "grads/rnn.h"
#include "rcuda/autograd/record.h"

namespace rcuda {

using autograd::RnnBackward;
using autograd::SavedTensor;

ops::RnnOutputs rnn(const Tensor& input, const Tensor& hx, const Tensor& cx,
                    const std::vector<Tensor>& weights, const ops::RnnParams& params) {
  std::vector<Tensor> inputs = {input, hx, cx};
  inputs.insert(inputs.end(), weights.begin(), weights.end());
  if (!autograd::should_record_list(inputs)) {
    ops::RnnOutputs r = ops::rnn_forward(input, hx, cx, weights, params);
    r.reserve = Tensor();
    return r;
  }
  ops::RnnParams training = params;
  training.training = true;  // the backward reads the reserve
  ops::RnnOutputs r =
      autograd::below_autograd([&] { return ops::rnn_forward(input, hx, cx, weights, training); });
  auto node = autograd::make_node_list<RnnBackward>(inputs);
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
  r.reserve = Tensor();
  return r;
}

}  // namespace rcuda
