// Triton's binary tensor extension: raw little-endian, row-major bytes after the JSON header.
#include <cstring>

#include "http_util.h"
#include "tensor_json.h"

namespace rcuda::server {

Tensor tensor_from_bytes(const TensorHeader& h, const char* bytes, size_t size) {
  if (size != h.byte_size())
    bad_request(h.where + ": parameters.binary_data_size = " + std::to_string(size) +
                " but shape and datatype need " + std::to_string(h.byte_size()) + " bytes");
  Tensor t = Tensor::empty(h.shape, h.dtype);
  if (size > 0) std::memcpy(t.data_ptr(), bytes, size);
  if (h.dtype == DType::Bool) {
    // A bool byte other than 0 or 1 is undefined behaviour when read as bool: normalise it.
    auto* p = static_cast<unsigned char*>(t.data_ptr());
    for (size_t i = 0; i < size; ++i) p[i] = p[i] != 0;
  }
  return t;
}

SplitBody split_binary_body(const std::string& body, const std::string& header_length) {
  SplitBody split;
  if (header_length.empty()) {
    split.json_size = body.size();
    return split;
  }
  size_t length = 0;
  bool digits = header_length.size() <= 19;
  for (char c : header_length) {
    digits = digits && c >= '0' && c <= '9';
    if (digits) length = length * 10 + static_cast<size_t>(c - '0');
  }
  if (!digits || length > body.size())
    bad_request("header Inference-Header-Content-Length = '" + header_length +
                "' is not a size within the body of " + std::to_string(body.size()) + " bytes");
  split.json_size = length;
  split.has_binary_part = true;
  split.binary_size = body.size() - length;
  return split;
}

std::string tensor_bytes(const Tensor& tensor) {
  const Tensor t = host_contiguous(tensor);
  const size_t size = static_cast<size_t>(t.numel()) * t.element_size();
  std::string out(size, '\0');
  if (size > 0) std::memcpy(out.data(), t.data_ptr(), size);
  return out;
}

}  // namespace rcuda::server
