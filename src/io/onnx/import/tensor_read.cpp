// ONNX TensorProtos (initializers, Constant values, test data) as CPU tensors: raw_data, the
// typed fields, or external data files beside the model (models over protobuf's 2 GB limit).
#include <cstring>
#include <fstream>
#include <limits>

#include "io/onnx/import/kernel.h"
#include "rcuda/ops/creation.h"

namespace rcuda::io::onnx_import {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "ONNX import assumes a little-endian host (raw_data is little-endian)");

namespace {

// Copies the elements of a typed repeated field into `out`, converting each to T.
template <typename T, typename Field>
void copy_field(const Field& field, const Tensor& out) {
  T* p = out.data<T>();
  for (int k = 0; k < field.size(); ++k) p[k] = static_cast<T>(field.Get(k));
}

// float16 and bfloat16 values sit in int32_data as their 16 bits.
void copy_bits16(const google::protobuf::RepeatedField<int32_t>& field, const Tensor& out) {
  auto* p = static_cast<uint16_t*>(out.data_ptr());
  for (int k = 0; k < field.size(); ++k) p[k] = static_cast<uint16_t>(field.Get(k));
}

// A relative path inside the model's folder: ONNX's checker refuses the rest too, and a
// model served from a repository must not read files elsewhere.
bool inside_folder(const std::string& location) {
  if (location.empty() || location[0] == '/') return false;
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0 && end - start == 2) return false;
    start = end + 1;
  }
  return true;
}

Tensor read_external(const onnx::TensorProto& proto, const std::string& folder,
                     const std::string& what, const Shape& shape, DType dtype, size_t nbytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto& e : proto.external_data()) {
    try {
      if (e.key() == "location") location = e.value();
      if (e.key() == "offset") offset = std::stoll(e.value());
      if (e.key() == "length") length = std::stoll(e.value());
    } catch (const std::exception&) {
      throw FileError(what + ": external data entry '" + e.key() + "' is not a number: '" +
                      e.value() + "'");
    }
  }
  RCUDA_CHECK(!folder.empty(), FileError, what,
              ": refers to external data, which only a model read from a file can have");
  RCUDA_CHECK(inside_folder(location), FileError, what, ": external data location '", location,
              "' is not a relative path inside the model's folder");
  RCUDA_CHECK(offset >= 0, FileError, what, ": external data offset ", offset, " is negative");
  RCUDA_CHECK(length < 0 || static_cast<size_t>(length) == nbytes, FileError, what,
              ": external data length ", length, " does not match its ", nbytes,
              " bytes of shape and type");
  const std::string path = folder + "/" + location;
  std::ifstream in(path, std::ios::binary);
  RCUDA_CHECK(in.good(), FileError, what, ": cannot open its external data file ", path);
  in.seekg(0, std::ios::end);
  const auto size = static_cast<int64_t>(in.tellg());
  RCUDA_CHECK(offset <= size && nbytes <= static_cast<size_t>(size - offset), FileError, what,
              ": external data file ", path, " has ", size, " bytes, fewer than offset ", offset,
              " + ", nbytes);
  Tensor out = ops::empty(shape, TensorOptions(dtype));
  in.seekg(offset);
  in.read(static_cast<char*>(out.data_ptr()), static_cast<std::streamsize>(nbytes));
  RCUDA_CHECK(static_cast<size_t>(in.gcount()) == nbytes, FileError, what,
              ": cannot read external data file ", path);
  return out;
}

// How many values the typed field of the tensor's type holds.
int64_t typed_count(const onnx::TensorProto& proto) {
  switch (proto.data_type()) {
    case onnx::TensorProto::FLOAT:
      return proto.float_data_size();
    case onnx::TensorProto::DOUBLE:
      return proto.double_data_size();
    case onnx::TensorProto::INT64:
      return proto.int64_data_size();
    default:  // int32, int16, int8, uint8, bool, float16 and bfloat16 sit in int32_data
      return proto.int32_data_size();
  }
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& folder,
                         const std::string& what) {
  const DType dtype = dtype_from_onnx(proto.data_type(), what);
  Shape shape;
  int64_t numel = 1;
  for (int64_t d : proto.dims()) {
    RCUDA_CHECK(d >= 0, FileError, what, ": dim ", d, " is negative");
    RCUDA_CHECK(d == 0 || numel <= std::numeric_limits<int64_t>::max() / d, FileError, what,
                ": its dims overflow");
    numel *= d;
    shape.push_back(d);
  }
  RCUDA_CHECK(!proto.has_segment(), FileError, what, ": segmented tensors are not supported");
  const size_t nbytes = static_cast<size_t>(numel) * element_size(dtype);
  // The data's size is checked before anything is allocated: a corrupt file must not make
  // rcuda ask for more memory than the file could fill.
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    return read_external(proto, folder, what, shape, dtype, nbytes);
  if (proto.has_raw_data()) {
    RCUDA_CHECK(proto.raw_data().size() == nbytes, FileError, what, ": raw_data has ",
                proto.raw_data().size(), " bytes, its shape ", shape_str(shape), " and type ",
                onnx_type_name(proto.data_type()), " need ", nbytes);
    Tensor out = ops::empty(shape, TensorOptions(dtype));
    if (nbytes > 0) std::memcpy(out.data_ptr(), proto.raw_data().data(), nbytes);
    return out;
  }
  const int64_t count = typed_count(proto);
  RCUDA_CHECK(count == numel, FileError, what, ": has ", count, " values, its shape ",
              shape_str(shape), " needs ", numel);
  Tensor out = ops::empty(shape, TensorOptions(dtype));
  switch (proto.data_type()) {
    case onnx::TensorProto::FLOAT:
      copy_field<float>(proto.float_data(), out);
      break;
    case onnx::TensorProto::DOUBLE:
      copy_field<double>(proto.double_data(), out);
      break;
    case onnx::TensorProto::INT64:
      copy_field<int64_t>(proto.int64_data(), out);
      break;
    case onnx::TensorProto::INT32:
      copy_field<int32_t>(proto.int32_data(), out);
      break;
    case onnx::TensorProto::INT16:
      copy_field<int16_t>(proto.int32_data(), out);
      break;
    case onnx::TensorProto::INT8:
      copy_field<int8_t>(proto.int32_data(), out);
      break;
    case onnx::TensorProto::UINT8:
    case 17:  // FLOAT8E4M3FN and FLOAT8E5M2: one byte each, in int32_data
    case 19:
      copy_field<uint8_t>(proto.int32_data(), out);
      break;
    case onnx::TensorProto::BOOL:
      copy_field<bool>(proto.int32_data(), out);
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      copy_bits16(proto.int32_data(), out);
      break;
    default:
      break;
  }
  return out;
}

}  // namespace rcuda::io::onnx_import
