// onnx_load() (R/onnx-load.R) over the engine's ONNX import (rcuda/io/onnx/import.h): the model
// lives behind an external pointer; R's module registers its parameters (the same tensors the
// engine reads) and runs it with one .Call.
#include <memory>
#include <string>

#include "rcuda/io/onnx/import.h"
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

io::OnnxModel& model_of(SEXP ptr) {
  return external_object<io::OnnxModel>(
      ptr,
      "onnx_load: the model's engine object is gone (saved with saveRDS and read back?); load "
      "the file again");
}

// One input or output: list(name, dtype, dims (NA where symbolic), dim_names, shape).
SEXP value_infos(const std::vector<io::OnnxValueInfo>& infos) {
  cpp11::writable::list out(static_cast<R_xlen_t>(infos.size()));
  for (size_t i = 0; i < infos.size(); ++i) {
    const io::OnnxValueInfo& v = infos[i];
    cpp11::writable::integers dims;
    for (int64_t d : v.dims) dims.push_back(d < 0 ? NA_INTEGER : static_cast<int>(d));
    cpp11::writable::strings dim_names;
    for (const std::string& n : v.dim_names) dim_names.push_back(n);
    using namespace cpp11::literals;
    out[static_cast<R_xlen_t>(i)] = cpp11::writable::list(
        {"name"_nm = v.name, "dtype"_nm = dtype_name(v.dtype), "dims"_nm = dims,
         "dim_names"_nm = dim_names, "shape"_nm = v.shape_string()});
  }
  return out;
}

}  // namespace

extern "C" SEXP rc_onnx_load(SEXP path, SEXP device, SEXP cuda_graphs) {
  RCUDA_BEGIN
  io::OnnxLoadOptions options;
  options.device = device_arg(device);
  options.cuda_graphs = Rf_asLogical(cuda_graphs) == TRUE;
  return external_pointer(
      std::make_unique<io::OnnxModel>(io::OnnxModel::load(CHAR(STRING_ELT(path, 0)), options)));
  RCUDA_END
}

extern "C" SEXP rc_onnx_run(SEXP ptr, SEXP inputs) {
  RCUDA_BEGIN
  const io::OnnxModel& model = model_of(ptr);
  return wrap_tensors(model.run(unwrap_tensors(inputs, model.name(), "input")));
  RCUDA_END
}

// what: "summary", "inputs", "outputs", "opset", "ops" (named integer counts), "parameters",
// "initializers", "device", "producer", "metadata" (named strings), "captures".
extern "C" SEXP rc_onnx_info(SEXP ptr, SEXP what) {
  RCUDA_BEGIN
  const io::OnnxModel& m = model_of(ptr);
  const std::string w = CHAR(STRING_ELT(what, 0));
  if (w == "summary") return cpp11::as_sexp(m.summary());
  if (w == "inputs") return value_infos(m.inputs());
  if (w == "outputs") return value_infos(m.outputs());
  if (w == "opset") return Rf_ScalarInteger(static_cast<int>(m.opset()));
  if (w == "device") return cpp11::as_sexp(m.device().str());
  if (w == "producer") return cpp11::as_sexp(m.producer());
  if (w == "metadata") {
    if (m.metadata().empty()) return Rf_allocVector(STRSXP, 0);
    cpp11::writable::strings values, keys;
    for (const auto& [key, value] : m.metadata()) {
      keys.push_back(key);
      values.push_back(value);
    }
    values.names() = keys;
    return values;
  }
  if (w == "parameters") return wrap_named_tensors(m.parameters());
  if (w == "initializers") return wrap_named_tensors(m.initializers());
  if (w == "ops") {
    if (m.op_counts().empty()) return Rf_allocVector(INTSXP, 0);
    cpp11::writable::integers counts;
    cpp11::writable::strings names;
    for (const auto& [op, n] : m.op_counts()) {
      counts.push_back(n);
      names.push_back(op);
    }
    counts.names() = names;
    return counts;
  }
  if (w == "captures") {
    if (m.captures().empty()) return Rf_allocVector(STRSXP, 0);
    cpp11::writable::strings errors;
    cpp11::writable::strings names;
    for (const io::OnnxModel::Capture& c : m.captures()) {
      errors.push_back(c.error);
      names.push_back(c.signature);
    }
    errors.names() = names;
    return errors;
  }
  throw ValueError("onnx model: no information called '" + w + "'");
  RCUDA_END
}

extern "C" SEXP rc_onnx_to(SEXP ptr, SEXP device) {
  RCUDA_BEGIN
  model_of(ptr).to(device_arg(device));
  return R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_onnx_set_cuda_graphs(SEXP ptr, SEXP enabled) {
  RCUDA_BEGIN
  model_of(ptr).set_cuda_graphs(Rf_asLogical(enabled) == TRUE);
  return R_NilValue;
  RCUDA_END
}
