// rcuda tensors as ONNX TensorProtos: the dtype codes and the raw little-endian bytes.
#include "io/onnx/builder.h"
#include "rcuda/ops/copy.h"

namespace rcuda::io::onnx_export {

// Bytes are copied as they lie in memory; ONNX's raw_data is little-endian.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "ONNX export assumes a little-endian host");

int onnx_dtype(DType dtype, const std::string& what) {
  switch (dtype) {
    case DType::Float32:
      return onnx::TensorProto::FLOAT;
    case DType::Float16:
      return onnx::TensorProto::FLOAT16;
    case DType::BFloat16:
      return onnx::TensorProto::BFLOAT16;
    case DType::Float64:
      return onnx::TensorProto::DOUBLE;
    case DType::Int64:
      return onnx::TensorProto::INT64;
    case DType::Int32:
      return onnx::TensorProto::INT32;
    case DType::Int16:
      return onnx::TensorProto::INT16;
    case DType::Int8:
      return onnx::TensorProto::INT8;
    case DType::UInt8:
      return onnx::TensorProto::UINT8;
    case DType::Bool:
      return onnx::TensorProto::BOOL;
    default:
      // float8 types came with IR version 9 (ONNX 1.14), after the library rcuda builds
      // against; ONNX Runtime runs almost no op on complex tensors.
      throw DTypeError(detail::concat(kOp, ": ", what, " has dtype ", dtype_name(dtype),
                                      ", which rcuda does not export to ONNX (supported: float32, "
                                      "float16, bfloat16, float64, int64, int32, int16, int8, "
                                      "uint8, bool)"));
  }
}

void fill_tensor_proto(const Tensor& t, const std::string& name, onnx::TensorProto* proto) {
  proto->set_name(name);
  proto->set_data_type(onnx_dtype(t.dtype(), "tensor \"" + name + "\""));
  for (int64_t d : t.shape()) proto->add_dims(d);
  Tensor host = t.device().is_cpu() ? t : ops::to(t, Device());
  host = ops::contiguous(host);
  const size_t nbytes = static_cast<size_t>(host.numel()) * host.element_size();
  if (nbytes > 0) proto->set_raw_data(host.data_ptr(), nbytes);
}

}  // namespace rcuda::io::onnx_export
