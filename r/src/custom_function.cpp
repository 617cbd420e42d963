// autograd_function(): operations whose forward and backward are R functions
// (R/autograd-function.R).
//
// Note [Autograd functions from R]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The R side runs the user's forward with grad mode off, then hands its tensor inputs, its
// tensor outputs and one R function, run_backward(grads), to rc_autograd_function_record. That
// makes an RFunctionNode with an edge to each input's history and gives each output a history
// of its own: an alias of the output (its storage, no history) whose grad_fn is the node, so an
// output that is an input itself, returned unchanged, keeps the input's own history intact. In
// backward the engine calls apply(): the gradient of each output (zeros of its shape where none
// flowed, as torch's materialised gradients) goes to run_backward, which calls the user's
// backward and returns one gradient per input in order (NULL for none); the engine then sums
// each back to its input's shape as for any node. R errors in backward travel as
// cpp11::unwind_exception (Note [R hooks] in autograd.cpp). Backward without retain_graph
// releases the R function, and with it what the context saved; a second backward through the
// node is then an error.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rcuda/autograd.h"
#include "rcuda/autograd/record.h"
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

struct OutputMeta {
  Shape shape;
  DType dtype;
  Device device;
};

class RFunctionNode final : public autograd::Node {
 public:
  const char* name() const override { return "RFunctionBackward"; }

  autograd::TensorList apply(autograd::TensorList&& grads) override {
    RCUDA_CHECK(run_backward_ != nullptr, ValueError,
                "backward: trying to backward through the graph of an autograd_function a second "
                "time (its saved variables were freed); use retain_graph = TRUE the first time");
    cpp11::writable::list given(static_cast<R_xlen_t>(outputs_.size()));
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const OutputMeta& m = outputs_[i];
      Tensor g = i < grads.size() ? grads[i] : Tensor();
      if (!g.defined()) g = zeros(m.shape, TensorOptions(m.dtype, m.device));
      given[static_cast<R_xlen_t>(i)] = wrap(std::move(g));
    }
    const cpp11::function run_backward = *run_backward_;  // a copy: it may be released meanwhile
    cpp11::list result(run_backward(given));
    RCUDA_CHECK(static_cast<size_t>(result.size()) == next_edges().size(), ValueError,
                "autograd_function: backward gave ", result.size(), " gradients for ",
                next_edges().size(), " inputs");
    autograd::TensorList out(next_edges().size());
    for (size_t i = 0; i < out.size(); ++i) {
      SEXP g = result[static_cast<R_xlen_t>(i)];
      if (g == R_NilValue || (is_tensor(g) && is_undefined(g))) continue;
      RCUDA_CHECK(is_tensor(g), ValueError, "autograd_function: backward's gradient for input ",
                  i + 1, " must be a tensor or NULL, got an R ", Rf_type2char(TYPEOF(g)));
      out[i] = unwrap(g);
    }
    return out;
  }

  void release_saved() override { run_backward_.reset(); }

  std::unique_ptr<cpp11::function> run_backward_;
  std::vector<OutputMeta> outputs_;
};

}  // namespace

// inputs: the forward's tensor arguments that require grad; outputs: its tensor outputs, of
// which those marked in `differentiable` get the node as their history (the others stay as they
// are, their gradients zeros). Returns the outputs as the caller should see them.
extern "C" SEXP rc_autograd_function_record(SEXP inputs, SEXP outputs, SEXP run_backward,
                                            SEXP differentiable) {
  RCUDA_BEGIN
  RCUDA_CHECK(Rf_isFunction(run_backward), ValueError,
              "autograd_function: run_backward must be a function");
  RCUDA_CHECK(TYPEOF(differentiable) == LGLSXP && Rf_xlength(differentiable) == Rf_xlength(outputs),
              ValueError, "autograd_function: one differentiable flag per output");
  auto node = std::make_shared<RFunctionNode>();
  const R_xlen_t n_in = Rf_xlength(inputs), n_out = Rf_xlength(outputs);
  node->reserve_inputs(static_cast<size_t>(n_in));
  for (R_xlen_t i = 0; i < n_in; ++i) node->add_input(unwrap(VECTOR_ELT(inputs, i)));
  node->set_num_outputs(static_cast<uint32_t>(n_out));
  node->run_backward_ = std::make_unique<cpp11::function>(run_backward);
  cpp11::writable::list result(n_out);
  for (R_xlen_t i = 0; i < n_out; ++i) {
    const Tensor& out = unwrap(VECTOR_ELT(outputs, i));
    node->outputs_.push_back({out.shape(), out.dtype(), out.device()});
    if (!LOGICAL(differentiable)[i]) {
      result[i] = VECTOR_ELT(outputs, i);
      continue;
    }
    Tensor alias = autograd::detach(out);
    autograd::set_history(alias, node, static_cast<uint32_t>(i));
    result[i] = wrap(std::move(alias));
  }
  return result;
  RCUDA_END
}
