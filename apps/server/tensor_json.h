// KServe v2 tensors in JSON and in Triton's binary extension, to and from runtime::NamedTensor.
// Every error is a 400 (InferError BadRequest) naming the input ("inputs[1] ('x')") and field.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "rcuda/core/dtype.h"
#include "rcuda/core/shape.h"
#include "rcuda/runtime/model.h"

namespace rcuda::server {

// An input's "name", "datatype" and "shape", checked: `where` names it in errors.
struct TensorHeader {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  std::string where;  // "inputs[0] ('x')"
  int64_t numel() const;
  size_t byte_size() const;  // numel() * the dtype's element size
};
TensorHeader parse_tensor_header(const nlohmann::json& input, size_t index);

// A CPU tensor of the header's dtype and shape from "data": flat (row-major) or nested arrays
// whose element count matches the shape; booleans for BOOL, integers in range for the integer
// types, numbers for FP16/BF16/FP32/FP64.
Tensor tensor_from_json_data(const TensorHeader& header, const nlohmann::json& data);

// {"name", "datatype", "shape", "data": flat row-major}; FP16 and BF16 as numbers.
nlohmann::json tensor_to_json(const runtime::NamedTensor& tensor);
// The same without "data", for an output sent as binary: "parameters": {"binary_data_size": n}.
nlohmann::json tensor_header_json(const runtime::NamedTensor& tensor);

// Triton's binary tensor extension: a tensor's bytes, little-endian, row-major, BOOL one byte.
Tensor tensor_from_bytes(const TensorHeader& header, const char* bytes, size_t size);
std::string tensor_bytes(const Tensor& tensor);

// An infer request body split at `header_length` (the Inference-Header-Content-Length header's
// value; "" for a body that is JSON alone): the JSON part and the bytes after it. 400 when the
// value is not a size within the body.
struct SplitBody {
  size_t json_size = 0;          // the JSON text is body[0, json_size)
  size_t binary_size = 0;        // the binary part is body[json_size, json_size + binary_size)
  bool has_binary_part = false;  // the header was given
};
SplitBody split_binary_body(const std::string& body, const std::string& header_length);

// A CPU, contiguous copy (or the tensor itself when it already is one).
Tensor host_contiguous(const Tensor& tensor);

}  // namespace rcuda::server
