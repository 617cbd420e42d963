// torch_save / torch_load: R objects holding tensors, in safetensors files (rcuda/io).
//
// Note [R objects in safetensors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A safetensors file holds flat named tensors and text metadata. An R object is stored as
//  1. its tensors, each named by its path in the object with "." between levels, as PyTorch's
//     state dicts name theirs ("encoder.layers.1.weight"); an element without a name takes its
//     1-based position; a lone tensor is "tensor". Two elements with one key are an error.
//  2. metadata "rcuda": a JSON tree of the object, which also says rcuda wrote the file:
//       {"tensor": key} (+ "requires_grad": true, "device": "cuda:0" when not the CPU)
//       {"list": [nodes], "names": [...]}    names only where the R list has them
//       {"null": true}
//       {"type": "double" | "integer" | "logical" | "character", "values": [...],
//        "names": [...], "dim": [...]}       NA is null; NaN, Inf, -Inf are strings
//     wrapped as {"version": 1, "object": node}.
//  3. metadata "format": "pt", as PyTorch writes, for tools that look for it.
// Other R values (functions, environments, classed lists) are refused with their path, rather
// than dropped. A file without "rcuda" (PyTorch's, safetensors') loads as a flat named list in
// file order; one written by torch for R (metadata "__r__") is passed to R as it is (save.R).
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "rcuda_r.h"

namespace rcuda::r {
namespace {

using json = nlohmann::ordered_json;
constexpr int kFormatVersion = 1;

std::string utf8(SEXP s) { return Rf_translateCharUTF8(s); }

std::string where(const std::string& path) {
  return path.empty() ? std::string("the object") : "'" + path + "'";
}

std::string child_key(const std::string& path, SEXP names, R_xlen_t i) {
  std::string segment;
  if (!Rf_isNull(names) && STRING_ELT(names, i) != NA_STRING) segment = utf8(STRING_ELT(names, i));
  if (segment.empty()) segment = std::to_string(i + 1);
  return path.empty() ? segment : path + "." + segment;
}

json names_json(SEXP names) {
  json out = json::array();
  for (R_xlen_t i = 0; i < Rf_xlength(names); ++i)
    out.push_back(STRING_ELT(names, i) == NA_STRING ? json(nullptr)
                                                    : json(utf8(STRING_ELT(names, i))));
  return out;
}

// Note [R objects in safetensors], 1 and 2.
class Encoder {
 public:
  io::NamedTensors tensors;

  json encode(SEXP x, const std::string& path) {
    if (is_tensor(x)) return encode_tensor(unwrap(x), path.empty() ? "tensor" : path);
    if (Rf_isNull(x)) return {{"null", true}};
    check_attributes(x, path);
    if (TYPEOF(x) == VECSXP) {
      SEXP names = Rf_getAttrib(x, R_NamesSymbol);
      json node = {{"list", json::array()}};
      for (R_xlen_t i = 0; i < Rf_xlength(x); ++i)
        node["list"].push_back(encode(VECTOR_ELT(x, i), child_key(path, names, i)));
      if (!Rf_isNull(names)) node["names"] = names_json(names);
      return node;
    }
    json node = encode_atomic(x, path);
    SEXP names = Rf_getAttrib(x, R_NamesSymbol);
    if (!Rf_isNull(names)) node["names"] = names_json(names);
    SEXP dim = Rf_getAttrib(x, R_DimSymbol);
    if (!Rf_isNull(dim))
      node["dim"] = std::vector<int>(INTEGER(dim), INTEGER(dim) + Rf_length(dim));
    return node;
  }

 private:
  json encode_tensor(const Tensor& t, const std::string& key) {
    RCUDA_CHECK(keys_.insert(key).second, ValueError,
                "torch_save: two tensors would be stored as '", key,
                "' (list names joined with '.'); rename one of them");
    tensors.emplace_back(key, t);
    json node = {{"tensor", key}};
    if (t.requires_grad()) node["requires_grad"] = true;
    if (!t.device().is_cpu()) node["device"] = t.device().str();
    return node;
  }

  static void check_attributes(SEXP x, const std::string& path) {
    for (SEXP a = ATTRIB(x); a != R_NilValue; a = CDR(a)) {
      SEXP tag = TAG(a);
      if (tag == R_NamesSymbol || (tag == R_DimSymbol && TYPEOF(x) != VECSXP)) continue;
      throw ValueError("torch_save: cannot save " + where(path) + ": it has the attribute '" +
                       CHAR(PRINTNAME(tag)) +
                       "' (only tensors, lists and atomic vectors with names or dim are saved)");
    }
  }

  static json encode_atomic(SEXP x, const std::string& path) {
    const R_xlen_t n = Rf_xlength(x);
    json values = json::array();
    switch (TYPEOF(x)) {
      case REALSXP:
        for (R_xlen_t i = 0; i < n; ++i) {
          const double v = REAL(x)[i];
          if (R_IsNA(v))
            values.push_back(nullptr);
          else if (std::isnan(v))
            values.push_back("NaN");
          else if (std::isinf(v))
            values.push_back(v > 0 ? "Inf" : "-Inf");
          else
            values.push_back(v);
        }
        return {{"type", "double"}, {"values", values}};
      case INTSXP:
        for (R_xlen_t i = 0; i < n; ++i)
          values.push_back(INTEGER(x)[i] == NA_INTEGER ? json(nullptr) : json(INTEGER(x)[i]));
        return {{"type", "integer"}, {"values", values}};
      case LGLSXP:
        for (R_xlen_t i = 0; i < n; ++i)
          values.push_back(LOGICAL(x)[i] == NA_LOGICAL ? json(nullptr) : json(LOGICAL(x)[i] != 0));
        return {{"type", "logical"}, {"values", values}};
      case STRSXP:
        for (R_xlen_t i = 0; i < n; ++i)
          values.push_back(STRING_ELT(x, i) == NA_STRING ? json(nullptr)
                                                         : json(utf8(STRING_ELT(x, i))));
        return {{"type", "character"}, {"values", values}};
      default:
        throw ValueError("torch_save: cannot save " + where(path) + ", an R " +
                         Rf_type2char(TYPEOF(x)) +
                         " (only tensors, lists and atomic vectors are saved)");
    }
  }

  std::set<std::string> keys_;
};

// Rebuilds the object of an "rcuda" tree from the file's tensors (Note [R objects in
// safetensors]).
class Decoder {
 public:
  Decoder(const std::string& path, std::map<std::string, Tensor> tensors, bool to_saved_device)
      : path_(path), tensors_(std::move(tensors)), to_saved_device_(to_saved_device) {}

  SEXP decode(const json& node) {
    if (!node.is_object()) bad("a node is not an object");
    if (node.contains("tensor")) return decode_tensor(node);
    if (node.contains("null")) return R_NilValue;
    if (node.contains("list")) {
      const json& items = *node.find("list");
      if (!items.is_array()) bad("\"list\" is not an array");
      cpp11::writable::list out(static_cast<R_xlen_t>(items.size()));
      for (size_t i = 0; i < items.size(); ++i) out[static_cast<R_xlen_t>(i)] = decode(items[i]);
      if (node.contains("names")) set_names(out, node["names"], items.size());
      return out;
    }
    if (node.contains("type")) return decode_atomic(node);
    bad("a node is neither a tensor, a list, NULL nor a vector");
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    throw FileError("torch_load: " + path_ + ": the rcuda metadata is malformed (" + what + ")");
  }

  SEXP decode_tensor(const json& node) {
    const std::string key = node["tensor"].is_string() ? node["tensor"].get<std::string>() : "";
    auto it = tensors_.find(key);
    if (it == tensors_.end())
      throw FileError("torch_load: " + path_ + ": the rcuda metadata names tensor '" + key +
                      "', which the file does not hold");
    Tensor t = it->second;
    if (to_saved_device_ && node.contains("device"))
      t = to(t, Device::parse(node["device"].get<std::string>()));
    if (node.value("requires_grad", false) && is_floating(t.dtype())) t.requires_grad_(true);
    return wrap(t);
  }

  void set_names(SEXP out, const json& names, size_t n) {
    if (!names.is_array() || names.size() != n) bad("names do not match the values");
    cpp11::writable::strings r_names(static_cast<R_xlen_t>(n));
    for (size_t i = 0; i < n; ++i)
      r_names[static_cast<R_xlen_t>(i)] = names[i].is_string()
                                              ? cpp11::r_string(names[i].get<std::string>())
                                              : cpp11::na<cpp11::r_string>();
    Rf_setAttrib(out, R_NamesSymbol, r_names);
  }

  double double_value(const json& v) const {
    if (v.is_number()) return v.get<double>();
    if (v.is_null()) return NA_REAL;
    if (v == "NaN") return R_NaN;
    if (v == "Inf") return R_PosInf;
    if (v == "-Inf") return R_NegInf;
    bad("a double is " + v.dump());
  }

  SEXP decode_atomic(const json& node) {
    const std::string type = node["type"].is_string() ? node["type"].get<std::string>() : "";
    const json values = node.value("values", json::array());
    if (!values.is_array()) bad("\"values\" is not an array");
    const R_xlen_t n = static_cast<R_xlen_t>(values.size());
    const int sexp_type = type == "double"      ? REALSXP
                          : type == "integer"   ? INTSXP
                          : type == "logical"   ? LGLSXP
                          : type == "character" ? STRSXP
                                                : NILSXP;
    if (sexp_type == NILSXP) bad("unknown vector type \"" + type + "\"");
    cpp11::sexp out = cpp11::safe[Rf_allocVector](sexp_type, n);
    for (R_xlen_t i = 0; i < n; ++i) {
      const json& v = values[static_cast<size_t>(i)];
      switch (sexp_type) {
        case REALSXP:
          REAL(out)[i] = double_value(v);
          break;
        case INTSXP:
          INTEGER(out)[i] = v.is_number_integer() ? v.get<int>() : NA_INTEGER;
          break;
        case LGLSXP:
          LOGICAL(out)[i] = v.is_boolean() ? static_cast<int>(v.get<bool>()) : NA_LOGICAL;
          break;
        default:
          SET_STRING_ELT(
              out, i,
              v.is_string() ? Rf_mkCharCE(v.get<std::string>().c_str(), CE_UTF8) : NA_STRING);
      }
    }
    if (node.contains("names")) set_names(out, node["names"], values.size());
    if (node.contains("dim")) {
      const std::vector<int> dim = node["dim"].get<std::vector<int>>();
      cpp11::writable::integers r_dim(dim.begin(), dim.end());
      Rf_setAttrib(out, R_DimSymbol, r_dim);
    }
    return out;
  }

  std::string path_;
  std::map<std::string, Tensor> tensors_;
  bool to_saved_device_;
};

std::string path_arg(SEXP path, const char* op) {
  RCUDA_CHECK(Rf_isString(path) && Rf_length(path) == 1 && STRING_ELT(path, 0) != NA_STRING,
              ValueError, op, ": path must be a single file name");
  return R_ExpandFileName(Rf_translateChar(STRING_ELT(path, 0)));
}

// torch for R's torch_save writes metadata "__r__": JSON with the saved object's "type"
// ("tensor", "list", "module", "state_dict") and "requires_grad" (an object of tensor names, or
// [] when none). Marks those tensors and returns the type.
SEXP torch_r_info(const std::string& file, const std::string& text, io::NamedTensors& tensors) {
  json info;
  try {
    info = json::parse(text);
  } catch (const json::parse_error& e) {
    throw FileError("torch_load: " + file +
                    ": the __r__ metadata of torch for R is not valid JSON (" + e.what() + ")");
  }
  RCUDA_CHECK(info.is_object() && info.contains("type") && info["type"].is_string(), FileError,
              "torch_load: ", file, ": the __r__ metadata of torch for R has no type");
  const json grad = info.value("requires_grad", json::object());
  for (auto& [name, t] : tensors)
    if (grad.is_object() && grad.contains(name) && grad[name] == true && is_floating(t.dtype()))
      t.requires_grad_(true);
  return cpp11::as_sexp(info["type"].get<std::string>().c_str());
}

}  // namespace
}  // namespace rcuda::r

using namespace rcuda;
using namespace rcuda::r;

// torch_save(obj, path) for tensors and (nested) lists (Note [R objects in safetensors]).
extern "C" SEXP rc_torch_save(SEXP obj, SEXP path) {
  RCUDA_BEGIN
  const std::string file = path_arg(path, "torch_save");
  Encoder encoder;
  const json tree = {{"version", kFormatVersion}, {"object", encoder.encode(obj, "")}};
  std::string text;
  try {
    text = tree.dump();
  } catch (const json::type_error& e) {
    throw ValueError(std::string("torch_save: a name or string is not valid UTF-8 (") + e.what() +
                     ")");
  }
  io::save_safetensors(file, encoder.tensors, {{"format", "pt"}, {"rcuda", text}});
  return R_NilValue;
  RCUDA_END
}

// Reads a safetensors file for torch_load. device: a device string, or NULL for the device each
// tensor was saved from (the CPU where the file does not say). Returns
// list(object, tensors, metadata, written_by): object is the rebuilt R object for rcuda's files
// (NULL otherwise), tensors the flat named list in file order, written_by "rcuda", "torch for R"
// (metadata "__r__") or "other", and torch_r_type the type torch for R recorded (or NULL).
extern "C" SEXP rc_torch_load(SEXP path, SEXP device) {
  RCUDA_BEGIN
  using namespace cpp11::literals;
  const std::string file = path_arg(path, "torch_load");
  const bool to_saved_device = Rf_isNull(device);
  io::SafetensorsContents contents = io::load_safetensors(file, device_arg(device));
  cpp11::writable::strings meta_values(static_cast<R_xlen_t>(contents.metadata.size()));
  cpp11::writable::strings meta_names(static_cast<R_xlen_t>(contents.metadata.size()));
  R_xlen_t i = 0;
  for (const auto& [key, value] : contents.metadata) {
    meta_names[i] = cpp11::r_string(key);
    meta_values[i++] = cpp11::r_string(value);
  }
  meta_values.names() = meta_names;

  cpp11::sexp object = R_NilValue, torch_r = R_NilValue;
  std::string written_by = "other";
  auto torch_r_meta = contents.metadata.find("__r__");
  if (torch_r_meta != contents.metadata.end()) {
    written_by = "torch for R";
    torch_r = torch_r_info(file, torch_r_meta->second, contents.tensors);
  }
  auto rcuda_meta = contents.metadata.find("rcuda");
  if (rcuda_meta != contents.metadata.end()) {
    written_by = "rcuda";
    json tree;
    try {
      tree = json::parse(rcuda_meta->second);
    } catch (const json::parse_error& e) {
      throw FileError("torch_load: " + file + ": the rcuda metadata is not valid JSON (" +
                      e.what() + ")");
    }
    RCUDA_CHECK(tree.is_object() && tree.contains("object") && tree.value("version", 0) >= 1,
                FileError, "torch_load: ", file, ": the rcuda metadata has no object");
    RCUDA_CHECK(tree["version"].get<int>() <= kFormatVersion, FileError, "torch_load: ", file,
                ": written by a newer rcuda (format version ", tree["version"].dump(),
                "); update rcuda to read it");
    std::map<std::string, Tensor> by_key(contents.tensors.begin(), contents.tensors.end());
    object = Decoder(file, std::move(by_key), to_saved_device).decode(tree["object"]);
  }
  return cpp11::writable::list(
      {"object"_nm = object, "tensors"_nm = wrap_named_tensors(contents.tensors),
       "metadata"_nm = meta_values, "written_by"_nm = cpp11::as_sexp(written_by.c_str()),
       "torch_r_type"_nm = torch_r});
  RCUDA_END
}

// The raw file writer, for tests and for R code that needs exact control of names and metadata.
extern "C" SEXP rc_safetensors_save(SEXP tensors, SEXP metadata, SEXP path) {
  RCUDA_BEGIN
  const std::string file = path_arg(path, "safetensors_save");
  io::NamedTensors named;
  SEXP names = Rf_getAttrib(tensors, R_NamesSymbol);
  for (R_xlen_t i = 0; i < Rf_xlength(tensors); ++i)
    named.emplace_back(utf8(STRING_ELT(names, i)), unwrap(VECTOR_ELT(tensors, i)));
  io::Metadata meta;
  SEXP meta_names = Rf_getAttrib(metadata, R_NamesSymbol);
  for (R_xlen_t i = 0; i < Rf_xlength(metadata); ++i)
    meta[utf8(STRING_ELT(meta_names, i))] = utf8(STRING_ELT(metadata, i));
  io::save_safetensors(file, named, meta);
  return R_NilValue;
  RCUDA_END
}
