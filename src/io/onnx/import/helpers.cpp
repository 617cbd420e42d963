// NodeReader (a node's attributes, read and checked at load) and the helpers kernels share.
#include <cstring>

#include "io/onnx/import/kernel.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import {

NodeReader::NodeReader(const onnx::NodeProto& proto, int version, std::string where,
                       std::vector<const Tensor*> constants)
    : proto_(proto),
      version_(version),
      where_(std::move(where)),
      constants_(std::move(constants)),
      host_inputs_(static_cast<size_t>(proto.input_size()), false) {}

bool NodeReader::has_input(size_t i) const {
  return i < num_inputs() && !proto_.input(static_cast<int>(i)).empty();
}

bool NodeReader::has_output(size_t i) const {
  return i < num_outputs() && !proto_.output(static_cast<int>(i)).empty();
}

const Tensor* NodeReader::constant_input(size_t i) const {
  return i < constants_.size() ? constants_[i] : nullptr;
}

void NodeReader::host_input(size_t i) {
  if (i < host_inputs_.size()) host_inputs_[i] = true;
}

void NodeReader::fail(const std::string& why) const { throw ValueError(where_ + ": " + why); }

void NodeReader::unsupported(const std::string& what) const {
  throw ValueError(where_ + ": " + what + " is not supported by rcuda's ONNX import");
}

namespace {

const char* attribute_type_name(int type) {
  switch (type) {
    case onnx::AttributeProto::FLOAT:
      return "FLOAT";
    case onnx::AttributeProto::INT:
      return "INT";
    case onnx::AttributeProto::STRING:
      return "STRING";
    case onnx::AttributeProto::TENSOR:
      return "TENSOR";
    case onnx::AttributeProto::GRAPH:
      return "GRAPH";
    case onnx::AttributeProto::FLOATS:
      return "FLOATS";
    case onnx::AttributeProto::INTS:
      return "INTS";
    case onnx::AttributeProto::STRINGS:
      return "STRINGS";
    default:
      return "another type";
  }
}

}  // namespace

const onnx::AttributeProto* NodeReader::find(const char* name, int type) const {
  for (const onnx::AttributeProto& a : proto_.attribute()) {
    if (a.name() != name) continue;
    if (!a.ref_attr_name().empty())
      unsupported(std::string("attribute '") + name + "' referring to a function's attribute");
    // Files written before IR version 3 may leave the type unset; the field present decides.
    if (a.type() != type && a.type() != onnx::AttributeProto::UNDEFINED)
      fail(std::string("attribute '") + name + "' is " + attribute_type_name(a.type()) +
           ", expected " + attribute_type_name(type));
    return &a;
  }
  return nullptr;
}

bool NodeReader::has(const char* name) const {
  for (const onnx::AttributeProto& a : proto_.attribute())
    if (a.name() == name) return true;
  return false;
}

int64_t NodeReader::i(const char* name) const {
  const onnx::AttributeProto* a = find(name, onnx::AttributeProto::INT);
  if (a == nullptr) fail(std::string("attribute '") + name + "' is required");
  return a->i();
}

int64_t NodeReader::i(const char* name, int64_t def) const {
  const onnx::AttributeProto* a = find(name, onnx::AttributeProto::INT);
  return a == nullptr ? def : a->i();
}

double NodeReader::f(const char* name) const {
  const onnx::AttributeProto* a = find(name, onnx::AttributeProto::FLOAT);
  if (a == nullptr) fail(std::string("attribute '") + name + "' is required");
  return a->f();
}

double NodeReader::f(const char* name, double def) const {
  const onnx::AttributeProto* a = find(name, onnx::AttributeProto::FLOAT);
  return a == nullptr ? def : a->f();
}

std::string NodeReader::s(const char* name) const {
  const onnx::AttributeProto* a = find(name, onnx::AttributeProto::STRING);
  if (a == nullptr) fail(std::string("attribute '") + name + "' is required");
  return a->s();
}

std::string NodeReader::s(const char* name, const std::string& def) const {
  const onnx::AttributeProto* a = find(name, onnx::AttributeProto::STRING);
  return a == nullptr ? def : a->s();
}

std::vector<int64_t> NodeReader::ints(const char* name) const {
  const onnx::AttributeProto* a = find(name, onnx::AttributeProto::INTS);
  if (a == nullptr) fail(std::string("attribute '") + name + "' is required");
  return {a->ints().begin(), a->ints().end()};
}

std::vector<int64_t> NodeReader::ints(const char* name, const std::vector<int64_t>& def) const {
  const onnx::AttributeProto* a = find(name, onnx::AttributeProto::INTS);
  return a == nullptr ? def : std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<double> NodeReader::floats(const char* name) const {
  const onnx::AttributeProto* a = find(name, onnx::AttributeProto::FLOATS);
  if (a == nullptr) fail(std::string("attribute '") + name + "' is required");
  return {a->floats().begin(), a->floats().end()};
}

std::vector<double> NodeReader::floats(const char* name, const std::vector<double>& def) const {
  const onnx::AttributeProto* a = find(name, onnx::AttributeProto::FLOATS);
  return a == nullptr ? def : std::vector<double>(a->floats().begin(), a->floats().end());
}

std::vector<std::string> NodeReader::strings(const char* name) const {
  const onnx::AttributeProto* a = find(name, onnx::AttributeProto::STRINGS);
  if (a == nullptr) return {};
  return {a->strings().begin(), a->strings().end()};
}

Tensor NodeReader::tensor(const char* name) const {
  const onnx::AttributeProto* a = find(name, onnx::AttributeProto::TENSOR);
  if (a == nullptr) fail(std::string("attribute '") + name + "' is required");
  // A tensor attribute cannot refer to external data: there is no folder to resolve it in.
  return tensor_from_proto(a->t(), "", where_ + ": attribute '" + name + "'");
}

// ---- helpers -------------------------------------------------------------------------------

std::vector<int64_t> host_ints(const Tensor& t) {
  Tensor h = t.device().is_cpu() ? t : ops::to(t, Device());
  if (h.dtype() != DType::Int64) h = ops::to(h, DType::Int64);
  h = ops::contiguous(h);
  const int64_t* p = h.data<int64_t>();
  return {p, p + h.numel()};
}

std::vector<double> host_doubles(const Tensor& t) {
  Tensor h = t.device().is_cpu() ? t : ops::to(t, Device());
  if (h.dtype() != DType::Float64) h = ops::to(h, DType::Float64);
  h = ops::contiguous(h);
  const double* p = h.data<double>();
  return {p, p + h.numel()};
}

double host_scalar(const Tensor& t, const std::string& what) {
  RCUDA_CHECK(t.defined() && t.numel() == 1, ValueError, what, " must have one element, got ",
              t.defined() ? shape_str(t.shape()) : std::string("none"));
  return host_doubles(t)[0];
}

int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what) {
  RCUDA_CHECK(axis >= -rank && axis < std::max<int64_t>(rank, 1), IndexError, what, " ", axis,
              " is out of range for rank ", rank, " (expected ", -rank, " to ",
              std::max<int64_t>(rank, 1) - 1, ")");
  return axis < 0 ? axis + rank : axis;
}

std::string onnx_type_name(int32_t elem_type) {
  if (elem_type == 17) return "FLOAT8E4M3FN";
  if (elem_type == 19) return "FLOAT8E5M2";
  if (onnx::TensorProto_DataType_IsValid(elem_type))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type));
  return "type " + std::to_string(elem_type);
}

DType dtype_from_onnx(int32_t elem_type, const std::string& what) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return DType::Float32;
    case onnx::TensorProto::DOUBLE:
      return DType::Float64;
    case onnx::TensorProto::FLOAT16:
      return DType::Float16;
    case onnx::TensorProto::BFLOAT16:
      return DType::BFloat16;
    case onnx::TensorProto::INT64:
      return DType::Int64;
    case onnx::TensorProto::INT32:
      return DType::Int32;
    case onnx::TensorProto::INT16:
      return DType::Int16;
    case onnx::TensorProto::INT8:
      return DType::Int8;
    case onnx::TensorProto::UINT8:
      return DType::UInt8;
    case onnx::TensorProto::BOOL:
      return DType::Bool;
    // The float8 types came with IR version 9, after the ONNX library rcuda builds against:
    // their numbers are ONNX's FLOAT8E4M3FN and FLOAT8E5M2.
    case 17:
      return DType::Float8E4M3FN;
    case 19:
      return DType::Float8E5M2;
    default:
      throw DTypeError(what + " has ONNX type " + onnx_type_name(elem_type) +
                       ", which rcuda has no dtype for (rcuda has float32, float64, float16, "
                       "bfloat16, float8 e4m3fn and e5m2, int64, int32, int16, int8, uint8 and "
                       "bool)");
  }
}

}  // namespace rcuda::io::onnx_import
