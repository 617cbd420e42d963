#include "ops_util.h"

#include <cmath>

#include "rcuda/ops/copy.h"
#include "rcuda/tensor/memory_format.h"

namespace rcuda::ops {
namespace {

enum Category { kBool = 0, kIntegral = 1, kFloating = 2, kComplex = 3 };
Category category(DType d) {
  return d == DType::Bool ? kBool
         : is_floating(d) ? kFloating
         : is_complex(d)  ? kComplex
                          : kIntegral;
}

struct Group {
  bool defined = false;
  DType dtype = DType::Bool;
  void add(DType d) {
    dtype = defined ? promote_types(dtype, d) : d;
    defined = true;
  }
};

// torch's combine_categories: `lower` matters only when its category is higher.
Group combine(Group higher, Group lower) {
  if (!higher.defined) return lower;
  if (!lower.defined) return higher;
  if (category(lower.dtype) > category(higher.dtype)) {
    higher.dtype = promote_types(higher.dtype, lower.dtype);
  }
  return higher;
}

}  // namespace

DType result_type(TensorRefs tensors, std::initializer_list<Scalar> scalars) {
  Group dimensioned, zero_dim, numbers;
  for (const Tensor& t : tensors) (t.dim() > 0 ? dimensioned : zero_dim).add(t.dtype());
  for (const Scalar& s : scalars) numbers.add(s.natural_dtype());
  return combine(dimensioned, combine(zero_dim, numbers)).dtype;
}

bool can_cast(DType from, DType to) {
  if (is_complex(to)) return true;
  if (is_complex(from)) return false;
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

void check_same_device(const char* op, TensorRefs tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (first == nullptr) {
      first = &t;
      continue;
    }
    RCUDA_CHECK(t.device() == first->device(), DeviceError, op,
                ": expected all tensors on one device, got ", first->device().str(), " and ",
                t.device().str());
  }
}

void check_floating(const char* op, const char* arg, const Tensor& t) {
  RCUDA_CHECK(is_floating(t.dtype()), DTypeError, op, ": expected a floating dtype for ", arg,
              ", got ", dtype_name(t.dtype()), " (convert with to(float32))");
}

double clip_to_integer_range(double value, DType dtype) {
  double low = -9.2e18, high = 9.2e18;  // int64: 2^63 - 1 is no double
  switch (dtype) {
    case DType::Bool:
      low = 0, high = 1;
      break;
    case DType::UInt8:
      low = 0, high = 255;
      break;
    case DType::Int8:
      low = -128, high = 127;
      break;
    case DType::Int16:
      low = -32768, high = 32767;
      break;
    case DType::Int32:
      low = -2147483648.0, high = 2147483647.0;
      break;
    default:
      break;
  }
  return std::fmax(low, std::fmin(value, high));
}

void check_not_float8(const char* op, const Tensor& t) {
  RCUDA_CHECK(!is_float8(t.dtype()), DTypeError, op, ": not supported for ", dtype_name(t.dtype()),
              " tensors (float8 is a storage type for scaled_mm); "
              "convert with to(float32) first");
}

void check_not_complex(const char* op, const Tensor& t) {
  RCUDA_CHECK(!is_complex(t.dtype()), DTypeError, op, ": not supported for ", dtype_name(t.dtype()),
              " tensors (complex tensors have add, sub, mul, div, neg, abs, angle, conj, eq and "
              "ne: docs/complex.md); split them with view_as_real() first");
}

Tensor cast(const Tensor& t, DType dtype) { return to(t, dtype); }

}  // namespace rcuda::ops

namespace rcuda::ops {

Tensor empty_like_operands(Shape shape, DType dtype, Device device, TensorRefs operands) {
  if (shape.size() == 4)
    for (const Tensor& t : operands)
      if (t.defined() && t.shape() == shape &&
          suggest_memory_format(t) == MemoryFormat::ChannelsLast)
        return empty_with_format(shape, dtype, device, MemoryFormat::ChannelsLast);
  return Tensor::empty(std::move(shape), dtype, device);
}

}  // namespace rcuda::ops
