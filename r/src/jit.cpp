// jit_trace() and onnx_export() (R/jit.R) over the engine's traced graphs (rcuda/graph/graph.h)
// and ONNX export (rcuda/io/onnx.h). A trace starts in rc_trace_begin, R runs the function, and
// rc_trace_end returns the graph behind an external pointer; nothing of R runs when it replays.
#include <map>
#include <memory>
#include <string>

#include "rcuda/graph/graph.h"
#include "rcuda/io/onnx.h"
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

graph::Graph& graph_of(SEXP ptr) {
  return external_object<graph::Graph>(
      ptr,
      "jit_trace: the traced graph's engine object is gone (saved with saveRDS and read "
      "back?); trace it again");
}

std::vector<std::string> strings(SEXP x) {
  std::vector<std::string> out;
  if (Rf_isNull(x)) return out;
  for (R_xlen_t i = 0; i < Rf_xlength(x); ++i) out.emplace_back(CHAR(STRING_ELT(x, i)));
  return out;
}

}  // namespace

// inputs: list of tensors; names and parameters: the module's named parameters and buffers;
// input_names: NULL or a character vector; scope: NULL or an R function of no arguments giving
// the path of the module whose forward is running (R/jit.R's trace_scope), asked per node.
extern "C" SEXP rc_trace_begin(SEXP inputs, SEXP names, SEXP parameters, SEXP input_names,
                               SEXP scope) {
  RCUDA_BEGIN
  graph::ScopeProvider provider;
  if (!Rf_isNull(scope)) {
    cpp11::function fn(scope);  // kept protected by the provider's copy
    provider = [fn]() -> std::string {
      cpp11::sexp path = fn();
      return TYPEOF(path) == STRSXP && Rf_xlength(path) == 1 ? CHAR(STRING_ELT(path, 0)) : "";
    };
  }
  const std::vector<Tensor> in = unwrap_tensors(inputs, "jit_trace", "input");
  const std::vector<Tensor> params = unwrap_tensors(parameters, "jit_trace", "parameter");
  const std::vector<std::string> param_names = strings(names);
  graph::NamedTensors named;
  for (size_t i = 0; i < params.size(); ++i) named.emplace_back(param_names.at(i), params[i]);
  return external_pointer(
      std::make_unique<graph::Tracer>(in, named, strings(input_names), std::move(provider)));
  RCUDA_END
}

// Ends the trace: the graph, or an error naming what the function returned.
extern "C" SEXP rc_trace_end(SEXP tracer, SEXP outputs) {
  RCUDA_BEGIN
  auto& t = external_object<graph::Tracer>(tracer, "jit_trace: the trace is gone");
  std::vector<Tensor> out;
  if (TYPEOF(outputs) == VECSXP) {
    out = unwrap_tensors(outputs, "jit_trace", "output");
  } else {
    RCUDA_CHECK(is_tensor(outputs), ValueError,
                "jit_trace: the traced function must return a tensor or a list of tensors, got "
                "an R ",
                Rf_type2char(TYPEOF(outputs)));
    out.push_back(unwrap(outputs));
  }
  return external_pointer(std::make_unique<graph::Graph>(t.finish(out)));
  RCUDA_END
}

// Stops a trace that did not finish (the function failed): observing ends now, not at GC.
extern "C" SEXP rc_trace_abort(SEXP tracer) {
  RCUDA_BEGIN
  if (TYPEOF(tracer) == EXTPTRSXP) {
    delete static_cast<graph::Tracer*>(R_ExternalPtrAddr(tracer));
    R_ClearExternalPtr(tracer);
  }
  return R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_graph_run(SEXP ptr, SEXP inputs) {
  RCUDA_BEGIN
  return wrap_tensors(graph_of(ptr).run(unwrap_tensors(inputs, "graph", "input")));
  RCUDA_END
}

// what: "text" (the printed graph), "warnings", "ops" (names of nodes in order), "inputs" or
// "outputs" (names), "parameters" (a named list of the parameter tensors).
extern "C" SEXP rc_graph_info(SEXP ptr, SEXP what) {
  RCUDA_BEGIN
  const graph::Graph& g = graph_of(ptr);
  const std::string w = CHAR(STRING_ELT(what, 0));
  if (w == "text") return cpp11::as_sexp(g.to_string());
  std::vector<std::string> out;
  if (w == "warnings") out = g.warnings;
  if (w == "ops")
    for (const graph::Node& n : g.nodes) out.emplace_back(op_name(n.op));
  if (w == "inputs")
    for (int id : g.inputs) out.push_back(g.values[id].name);
  if (w == "outputs")
    for (int id : g.outputs) out.push_back(g.values[id].name);
  if (w == "parameters") {
    std::vector<std::pair<std::string, Tensor>> parameters;
    for (const graph::Value& v : g.values)
      if (v.kind == graph::ValueKind::Parameter) parameters.emplace_back(v.name, v.tensor);
    return wrap_named_tensors(parameters);
  }
  return cpp11::as_sexp(out);
  RCUDA_END
}

// dynamic_axes: a named list (input or output name -> named integer vector or list: 0-based dim
// -> symbolic name), already shifted from R's 1-based dims by R/jit.R.
extern "C" SEXP rc_onnx_export(SEXP ptr, SEXP path, SEXP input_names, SEXP output_names,
                               SEXP dynamic_axes, SEXP opset) {
  RCUDA_BEGIN
  io::OnnxExportOptions options;
  options.input_names = strings(input_names);
  options.output_names = strings(output_names);
  options.opset_version = Rf_asInteger(opset);
  if (!Rf_isNull(dynamic_axes)) {
    SEXP names = Rf_getAttrib(dynamic_axes, R_NamesSymbol);
    for (R_xlen_t i = 0; i < Rf_xlength(dynamic_axes); ++i) {
      SEXP axes = VECTOR_ELT(dynamic_axes, i);
      SEXP dims = Rf_getAttrib(axes, R_NamesSymbol);
      auto& entry = options.dynamic_axes[CHAR(STRING_ELT(names, i))];
      for (R_xlen_t k = 0; k < Rf_xlength(axes); ++k)
        entry[std::stoll(CHAR(STRING_ELT(dims, k)))] = CHAR(STRING_ELT(axes, k));
    }
  }
  io::export_onnx(graph_of(ptr), CHAR(STRING_ELT(path, 0)), options);
  return R_NilValue;
  RCUDA_END
}
