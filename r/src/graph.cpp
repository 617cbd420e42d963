// cuda_graph() (R/cuda-graph.R) over the engine's cuda::Graph: one graph per R object, behind
// an external pointer that a finalizer frees.
#include <memory>
#include <string>

#include "rcuda/backend/cuda_graph.h"
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

cuda::Graph& graph_of(SEXP ptr) {
  return external_object<cuda::Graph>(
      ptr,
      "cuda_graph: the graph's engine object is gone (saved with saveRDS and read back?); "
      "capture it again");
}

}  // namespace

// device: a CUDA device index; share: NULL or another graph's pointer (its pool).
extern "C" SEXP rc_graph_new(SEXP device, SEXP share) {
  RCUDA_BEGIN
  const int index = Rf_asInteger(device);
  return external_pointer(Rf_isNull(share) ? std::make_unique<cuda::Graph>(index)
                                           : std::make_unique<cuda::Graph>(index, graph_of(share)));
  RCUDA_END
}

// what: "begin", "end", "abort", "replay" or "reset".
extern "C" SEXP rc_graph_call(SEXP ptr, SEXP what) {
  RCUDA_BEGIN
  cuda::Graph& g = graph_of(ptr);
  const std::string w = CHAR(STRING_ELT(what, 0));
  if (w == "begin") {
    g.capture_begin();
  } else if (w == "end") {
    g.capture_end();
  } else if (w == "abort") {
    g.capture_abort();
  } else if (w == "replay") {
    g.replay();
  } else if (w == "reset") {
    g.reset();
  } else {
    throw InternalError("rc_graph_call: unknown call " + w);
  }
  return R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_graph_captured(SEXP ptr) {
  RCUDA_BEGIN
  return Rf_ScalarLogical(graph_of(ptr).captured());
  RCUDA_END
}

extern "C" SEXP rc_graph_is_capturing(SEXP device) {
  RCUDA_BEGIN
  return Rf_ScalarLogical(cuda::is_capturing(Rf_asInteger(device)));
  RCUDA_END
}
