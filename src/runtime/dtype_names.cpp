// Triton's data_type names and KServe v2's datatype names of rcuda's dtypes
// (rcuda/runtime/config.h). KServe's are Triton's without the "TYPE_" prefix. rcuda has no
// unsigned integers wider than 8 bits and no strings, so UINT16/32/64 and BYTES have no dtype.
#include <string>

#include "rcuda/core/error.h"
#include "rcuda/runtime/config.h"

namespace rcuda::runtime {
namespace {

struct DTypeName {
  DType dtype;
  const char* kserve;
};

constexpr DTypeName kNames[] = {
    {DType::Bool, "BOOL"},    {DType::UInt8, "UINT8"},   {DType::Int8, "INT8"},
    {DType::Int16, "INT16"},  {DType::Int32, "INT32"},   {DType::Int64, "INT64"},
    {DType::Float16, "FP16"}, {DType::BFloat16, "BF16"}, {DType::Float32, "FP32"},
    {DType::Float64, "FP64"},
};

std::string known_names(const char* prefix) {
  std::string out;
  for (const DTypeName& n : kNames)
    out += (out.empty() ? "" : ", ") + std::string(prefix) + n.kserve;
  return out;
}

const char* kserve_name_or_throw(DType dtype, const char* what) {
  for (const DTypeName& n : kNames)
    if (n.dtype == dtype) return n.kserve;
  throw DTypeError(std::string(what) + ": dtype " + dtype_name(dtype) +
                   " has no Triton/KServe name (served dtypes: " + known_names("") + ")");
}

}  // namespace

std::string triton_type_name(DType dtype) {
  return std::string("TYPE_") + kserve_name_or_throw(dtype, "triton_type_name");
}

std::string kserve_datatype(DType dtype) { return kserve_name_or_throw(dtype, "kserve_datatype"); }

DType dtype_from_triton_type(const std::string& name) {
  if (name.rfind("TYPE_", 0) == 0)
    for (const DTypeName& n : kNames)
      if (name.compare(5, std::string::npos, n.kserve) == 0) return n.dtype;
  throw ValueError("data_type '" + name + "' has no rcuda dtype (known: " + known_names("TYPE_") +
                   ")");
}

DType dtype_from_kserve(const std::string& datatype) {
  for (const DTypeName& n : kNames)
    if (datatype == n.kserve) return n.dtype;
  throw ValueError("datatype '" + datatype + "' has no rcuda dtype (known: " + known_names("") +
                   ")");
}

}  // namespace rcuda::runtime
