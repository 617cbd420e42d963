// KServe v2 JSON tensors: {"name", "datatype", "shape", "data"} <-> CPU tensors.
#include "tensor_json.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "http_util.h"
#include "rcuda/core/half.h"
#include "rcuda/core/shape.h"
#include "rcuda/ops/copy.h"
#include "rcuda/runtime/config.h"

namespace rcuda::server {

using nlohmann::json;

namespace {

// A nested array deeper than this is refused rather than walked (a hostile body of
// "[[[[..." would otherwise recurse as deep as it is long).
constexpr int kMaxNesting = 64;
// Any single dim above this is refused before numel() can overflow.
constexpr int64_t kMaxDim = int64_t{1} << 40;

template <typename T>
T integer_element(const json& v, const TensorHeader& h, int64_t i) {
  auto fail = [&](const std::string& why) {
    bad_request(h.where + ": data[" + std::to_string(i) + "] " + why);
  };
  if (!v.is_number_integer()) fail("is " + std::string(v.type_name()) + ", not an integer");
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max()))
      fail("= " + std::to_string(u) + " is out of range for " + runtime::kserve_datatype(h.dtype));
    return static_cast<T>(u);
  }
  const int64_t s = v.get<int64_t>();
  if (s < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      (s > 0 && static_cast<uint64_t>(s) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
    fail("= " + std::to_string(s) + " is out of range for " + runtime::kserve_datatype(h.dtype));
  return static_cast<T>(s);
}

double float_element(const json& v, const TensorHeader& h, int64_t i) {
  if (!v.is_number())
    bad_request(h.where + ": data[" + std::to_string(i) + "] is " + v.type_name() +
                ", not a number");
  return v.get<double>();
}

// A double beyond float's range becomes an infinity (a plain cast would be undefined).
float to_float(double v) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (v > kMax) return std::numeric_limits<float>::infinity();
  if (v < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(v);
}

bool bool_element(const json& v, const TensorHeader& h, int64_t i) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1))
    return v.get<int64_t>() == 1;
  bad_request(h.where + ": data[" + std::to_string(i) + "] is " + v.type_name() +
              ", not a boolean");
}

// Stores element i of the flattened data into the tensor's buffer.
void store_element(const TensorHeader& h, void* base, int64_t i, const json& v) {
  switch (h.dtype) {
    case DType::Bool:
      static_cast<bool*>(base)[i] = bool_element(v, h, i);
      return;
    case DType::UInt8:
      static_cast<uint8_t*>(base)[i] = integer_element<uint8_t>(v, h, i);
      return;
    case DType::Int8:
      static_cast<int8_t*>(base)[i] = integer_element<int8_t>(v, h, i);
      return;
    case DType::Int16:
      static_cast<int16_t*>(base)[i] = integer_element<int16_t>(v, h, i);
      return;
    case DType::Int32:
      static_cast<int32_t*>(base)[i] = integer_element<int32_t>(v, h, i);
      return;
    case DType::Int64:
      static_cast<int64_t*>(base)[i] = integer_element<int64_t>(v, h, i);
      return;
    case DType::Float16:
      static_cast<Half*>(base)[i] = Half(to_float(float_element(v, h, i)));
      return;
    case DType::BFloat16:
      static_cast<BFloat16*>(base)[i] = BFloat16(to_float(float_element(v, h, i)));
      return;
    case DType::Float32:
      static_cast<float*>(base)[i] = to_float(float_element(v, h, i));
      return;
    case DType::Float64:
      static_cast<double*>(base)[i] = float_element(v, h, i);
      return;
    default:
      bad_request(h.where + ": datatype " + runtime::kserve_datatype(h.dtype) +
                  " cannot be sent as JSON data");
  }
}

// Walks nested arrays in row-major order, storing every scalar; `count` is how many so far.
// count_scalars has checked the nesting and the count.
void flatten_into(const TensorHeader& h, const json& data, void* base, int64_t& count) {
  for (const json& v : data) {
    if (v.is_array()) {
      flatten_into(h, v, base, count);
      continue;
    }
    store_element(h, base, count, v);
    count++;
  }
}

int64_t count_scalars(const TensorHeader& h, const json& data, int depth) {
  if (depth > kMaxNesting)
    bad_request(h.where + ": data is nested deeper than " + std::to_string(kMaxNesting));
  int64_t n = 0;
  for (const json& v : data) n += v.is_array() ? count_scalars(h, v, depth + 1) : 1;
  return n;
}

template <typename T, typename ToJson>
json json_values(const Tensor& t, ToJson to_json) {
  json out = json::array();
  auto& values = out.get_ref<json::array_t&>();
  values.reserve(static_cast<size_t>(t.numel()));
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) values.emplace_back(to_json(p[i]));
  return out;
}

json tensor_values(const Tensor& t) {
  auto same = [](auto v) { return v; };
  auto as_float = [](auto v) { return static_cast<float>(v); };
  switch (t.dtype()) {
    case DType::Bool:
      return json_values<bool>(t, same);
    case DType::UInt8:
      return json_values<uint8_t>(t, same);
    case DType::Int8:
      return json_values<int8_t>(t, same);
    case DType::Int16:
      return json_values<int16_t>(t, same);
    case DType::Int32:
      return json_values<int32_t>(t, same);
    case DType::Int64:
      return json_values<int64_t>(t, same);
    case DType::Float16:
      return json_values<Half>(t, as_float);
    case DType::BFloat16:
      return json_values<BFloat16>(t, as_float);
    case DType::Float32:
      return json_values<float>(t, same);
    case DType::Float64:
      return json_values<double>(t, same);
    default:
      throw runtime::InferError(
          runtime::InferError::Status::Internal,
          std::string("an output of dtype ") + dtype_name(t.dtype()) + " has no KServe datatype");
  }
}

}  // namespace

int64_t TensorHeader::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t TensorHeader::byte_size() const {
  return static_cast<size_t>(numel()) * element_size(dtype);
}

TensorHeader parse_tensor_header(const json& input, size_t index) {
  TensorHeader h;
  h.where = "inputs[" + std::to_string(index) + "]";
  if (!input.is_object()) bad_request(h.where + " is " + input.type_name() + ", not an object");
  const auto name = input.find("name");
  if (name == input.end() || !name->is_string())
    bad_request(h.where + ".name is missing or not a string");
  h.name = name->get<std::string>();
  h.where += " ('" + h.name + "')";

  const auto datatype = input.find("datatype");
  if (datatype == input.end() || !datatype->is_string())
    bad_request(h.where + ".datatype is missing or not a string");
  try {
    h.dtype = runtime::dtype_from_kserve(datatype->get<std::string>());
  } catch (const Error& e) {
    bad_request(h.where + ".datatype: " + e.what());
  }

  const auto shape = input.find("shape");
  if (shape == input.end() || !shape->is_array())
    bad_request(h.where + ".shape is missing or not an array");
  int64_t numel = 1;
  for (size_t d = 0; d < shape->size(); ++d) {
    const json& dim = (*shape)[d];
    if (!dim.is_number_integer() || dim.get<int64_t>() < 0 || dim.get<int64_t>() > kMaxDim)
      bad_request(h.where + ".shape[" + std::to_string(d) + "] = " + dim.dump() +
                  " is not a size (a non-negative integer)");
    h.shape.push_back(dim.get<int64_t>());
    if (h.shape.back() > 0 && numel > kMaxDim / h.shape.back())
      bad_request(h.where + ".shape " + shape->dump() + " is too large");
    numel *= h.shape.back();
  }
  return h;
}

Tensor tensor_from_json_data(const TensorHeader& h, const json& data) {
  if (!data.is_array()) bad_request(h.where + ".data is " + data.type_name() + ", not an array");
  const int64_t expected = h.numel();
  const int64_t given = count_scalars(h, data, 0);
  if (given != expected)
    bad_request(h.where + ": data has " + std::to_string(given) + " elements but shape " +
                shape_str(h.shape) + " needs " + std::to_string(expected));
  Tensor t = Tensor::empty(h.shape, h.dtype);
  int64_t count = 0;
  flatten_into(h, data, t.data_ptr(), count);
  return t;
}

Tensor host_contiguous(const Tensor& tensor) {
  Tensor t = tensor.device().type == DeviceType::CPU ? tensor : ops::to(tensor, Device());
  return ops::contiguous(t);
}

json tensor_header_json(const runtime::NamedTensor& tensor) {
  return json{{"name", tensor.name},
              {"datatype", runtime::kserve_datatype(tensor.value.dtype())},
              {"shape", tensor.value.shape()}};
}

json tensor_to_json(const runtime::NamedTensor& tensor) {
  json out = tensor_header_json(tensor);
  out["data"] = tensor_values(host_contiguous(tensor.value));
  return out;
}

}  // namespace rcuda::server
