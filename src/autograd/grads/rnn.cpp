// Gradients of the recurrent layers: one ops::rnn_backward call for whichever of output, h_n
// and c_n received a gradient, computing only what the inputs need.
#include "rnn.h"

namespace rcuda::autograd {

const char* RnnBackward::name() const {
  switch (params.mode) {
    case ops::RnnMode::Lstm:
      return "LstmBackward";
    case ops::RnnMode::Gru:
      return "GruBackward";
    case ops::RnnMode::RnnTanh:
      return "RnnTanhBackward";
    case ops::RnnMode::RnnRelu:
      return "RnnReluBackward";
  }
  return "RnnBackward";
}

TensorList RnnBackward::apply(TensorList&& grads) {
  grads.resize(3);
  ops::RnnWanted wanted;
  wanted.input = needs_input_grad(0);
  wanted.hx = needs_input_grad(1);
  wanted.cx = needs_input_grad(2);
  wanted.weights = false;
  for (size_t i = 3; i < next_edges().size(); ++i) wanted.weights |= needs_input_grad(i);
  std::vector<Tensor> w;
  w.reserve(weights.size());
  for (const SavedTensor& t : weights) w.push_back(t.unpack(*this));
  ops::RnnGrads g = ops::rnn_backward(grads[0], grads[1], grads[2], input.unpack(*this),
                                      hx.unpack(*this), cx.unpack(*this), w, output.unpack(*this),
                                      reserve.unpack(*this), params, wanted);
  TensorList result = {wanted.input ? g.input : Tensor(), wanted.hx ? g.hx : Tensor(),
                       wanted.cx ? g.cx : Tensor()};
  for (size_t i = 0; i < w.size(); ++i)
    result.push_back(needs_input_grad(i + 3) ? g.weights[i] : Tensor());
  return result;
}

void RnnBackward::release_saved() {
  for (SavedTensor* t : {&input, &hx, &cx, &output, &reserve}) t->release();
  for (SavedTensor& t : weights) t.release();
}

}  // namespace rcuda::autograd
