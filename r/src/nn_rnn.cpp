// The recurrent layers of the R package (nn_rnn, nn_lstm, nn_gru): one call into rcuda::nn::rnn
// (include/rcuda/nn/rnn.h), which records one autograd node per backend call.
#include <string>
#include <vector>

#include "nn_glue.h"
#include "rcuda/nn/rnn.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

Backend::RnnMode mode_arg(SEXP mode) {
  const std::string m = CHAR(STRING_ELT(mode, 0));
  if (m == "LSTM") return Backend::RnnMode::Lstm;
  if (m == "GRU") return Backend::RnnMode::Gru;
  if (m == "RNN_TANH") return Backend::RnnMode::RnnTanh;
  if (m == "RNN_RELU") return Backend::RnnMode::RnnRelu;
  throw ValueError("nn_rnn: mode must be \"LSTM\", \"GRU\", \"RNN_TANH\" or \"RNN_RELU\", got \"" +
                   m + "\"");
}

}  // namespace

// weights: a list of tensors in PyTorch's flat order (per layer, per direction: w_ih, w_hh and,
// with biases, b_ih, b_hh). Returns list(output, h_n, c_n), c_n NULL unless LSTM.
extern "C" SEXP rc_nn_rnn(SEXP mode, SEXP input, SEXP hx, SEXP cx, SEXP weights, SEXP num_layers,
                          SEXP dropout, SEXP training, SEXP bidirectional, SEXP batch_first) {
  RCUDA_BEGIN
  nn::RnnOptions options;
  options.mode = mode_arg(mode);
  options.num_layers = static_cast<int64_t>(Rf_asReal(num_layers));
  options.dropout = Rf_asReal(dropout);
  options.training = flag(training);
  options.bidirectional = flag(bidirectional);
  options.batch_first = flag(batch_first);
  RCUDA_CHECK(Rf_isNewList(weights), ValueError, "nn_rnn: weights must be a list of tensors");
  std::vector<Tensor> w;
  w.reserve(Rf_xlength(weights));
  for (R_xlen_t i = 0; i < Rf_xlength(weights); ++i) w.push_back(unwrap(VECTOR_ELT(weights, i)));
  const nn::RnnResult r = as_r_function("nn_rnn", "rnn", [&] {
    return nn::rnn(unwrap(input), optional_tensor(hx), optional_tensor(cx), w, options);
  });
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 3));
  SET_VECTOR_ELT(out, 0, wrap(r.output));
  SET_VECTOR_ELT(out, 1, wrap(r.h_n));
  if (r.c_n.defined()) SET_VECTOR_ELT(out, 2, wrap(r.c_n));
  UNPROTECT(1);
  return out;
  RCUDA_END
}
