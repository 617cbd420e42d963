// Replay of the recurrent layers through rcuda::nn::rnn, its options rebuilt from the
// attributes. rcuda::rnn (below rcuda::nn) reports the same attributes with no dropout, so its
// calls run again through rcuda::nn::rnn as well.
#include "rcuda/core/error.h"
#include "rcuda/nn/rnn.h"
#include "replay.h"

namespace rcuda::graph::replay {
namespace {

Backend::RnnMode rnn_mode(const std::string& name, OpId op) {
  if (name == "lstm") return Backend::RnnMode::Lstm;
  if (name == "gru") return Backend::RnnMode::Gru;
  if (name == "rnn_tanh") return Backend::RnnMode::RnnTanh;
  if (name == "rnn_relu") return Backend::RnnMode::RnnRelu;
  throw ValueError(std::string("graph: ") + op_name(op) + ": unknown recurrent mode \"" + name +
                   "\" (lstm, gru, rnn_tanh or rnn_relu)");
}

}  // namespace

// Inputs: input, hx, cx (undefined when not given), then the weights in PyTorch's
// _flat_weights order. Outputs: output, h_n, and c_n for an LSTM only.
Tensors recurrent(OpId op, const Tensors& in, const Attributes& a) {
  RCUDA_CHECK(in.size() >= 5, ValueError, "graph: ", op_name(op),
              " needs input, hx, cx and at least two weights but the node has ", in.size(),
              " inputs");
  nn::RnnOptions o;
  o.mode = rnn_mode(text(a, "mode", op, ""), op);
  o.num_layers = integer(a, "num_layers", op);
  o.bidirectional = flag(a, "bidirectional", op, false);
  o.batch_first = flag(a, "batch_first", op, false);
  o.dropout = number(a, "dropout", op);
  o.training = flag(a, "training", op, true);
  const std::vector<Tensor> weights(in.begin() + 3, in.end());
  // hidden_size follows from the weights (w_hh_l0 is [G * H, H]); a mismatch means the graph's
  // weights are not the ones it was traced with.
  const int64_t hidden = integer(a, "hidden_size", op);
  RCUDA_CHECK(weights[1].dim() == 2 && weights[1].size(1) == hidden, ShapeError,
              "graph: ", op_name(op), " was traced with hidden_size ", hidden,
              " but w_hh_l0 has shape ", shape_str(weights[1].shape()));
  nn::RnnResult r = nn::rnn(in[0], in[1], in[2], weights, o);
  if (o.mode == Backend::RnnMode::Lstm) return {r.output, r.h_n, r.c_n};
  return {r.output, r.h_n};
}

}  // namespace rcuda::graph::replay
