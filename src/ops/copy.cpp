// Copies between dtypes, layouts and devices.
#include "rcuda/ops/copy.h"

#include "ops_util.h"
#include "rcuda/ops/complex.h"
#include "rcuda/ops/creation.h"

namespace rcuda::ops {
namespace {

// Note [Complex conversions]
// Backends copy real dtypes only; a copy that involves a complex tensor runs on real views
// (Note [Complex tensors] in rcuda/ops/complex.h). complex -> complex copies the real pairs
// (complex64 <-> complex128 converts them); real -> complex writes the real part and zeroes
// the imaginary part. complex -> real is a DTypeError where torch warns and drops the
// imaginary part: ops that convert their inputs would otherwise compute on the real parts of
// complex tensors and return silently wrong results. real(), abs() or angle() say which real
// tensor is wanted.
void copy_values(Backend& backend, const Tensor& dst, const Tensor& src) {
  if (!is_complex(dst.dtype()) && !is_complex(src.dtype())) return backend.copy(dst, src);
  RCUDA_CHECK(is_complex(dst.dtype()), DTypeError, "to: converting ", dtype_name(src.dtype()),
              " to ", dtype_name(dst.dtype()),
              " would discard the imaginary part; take real(), abs() or angle() first");
  const Tensor pairs = view_as_real(dst);
  if (is_complex(src.dtype())) return backend.copy(pairs, view_as_real(src));
  backend.copy(pairs.select(-1, 0), src);
  backend_of(pairs).fill(pairs.select(-1, 1), Scalar(0.0));
}

}  // namespace

const Tensor& copy_(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return dst;
  dst.storage()->bump_version();  // Note [Version counter] in rcuda/tensor/storage.h
  Tensor from = src.shape() == dst.shape() ? src : src.expand(dst.shape());
  if (dst.storage() == from.storage() && dst.dtype() == from.dtype() &&
      dst.offset() == from.offset() && dst.strides() == from.strides())
    return dst;  // the very same view
  // Reading and writing shared bytes in one pass would read half-updated values: read first.
  if (dst.storage() == from.storage()) from = clone(from);
  // A copy that crosses devices runs on the non-CPU side's backend (it knows host memory).
  Backend& backend = dst.device().is_cpu() ? ops::backend_of(from) : ops::backend_of(dst);
  copy_values(backend, dst, from);
  return dst;
}

Tensor to(const Tensor& t, DType dtype) { return to(t, t.device(), dtype); }
Tensor to(const Tensor& t, Device device) { return to(t, device, t.dtype()); }

Tensor to(const Tensor& t, Device device, DType dtype) {
  if (t.dtype() == dtype && t.device() == device) return t;
  // A dtype change on the device keeps a channels-last layout, as torch's preserve_format;
  // copies between devices are contiguous.
  Tensor out = t.device() == device ? empty_like_operands(t.shape(), dtype, device, {t})
                                    : Tensor::empty(t.shape(), dtype, device);
  copy_(out, t);
  return out;
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone(t); }

Tensor contiguous(const Tensor& t, MemoryFormat f) {
  if (f == MemoryFormat::Contiguous) return contiguous(t);
  RCUDA_CHECK(t.dim() == 4, ShapeError,
              "contiguous: the channels-last memory format needs a 4-D tensor, got shape ",
              shape_str(t.shape()));
  if (t.strides() == memory_format_strides(t.shape(), f)) return t;
  Tensor out = empty_with_format(t.shape(), t.dtype(), t.device(), f);
  if (t.numel() > 0) copy_values(ops::backend_of(t), out, t);
  return out;
}

Tensor clone(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
  if (t.numel() > 0) copy_values(ops::backend_of(t), out, t);
  return out;
}

Tensor reshape(const Tensor& t, const Shape& shape) {
  const Shape target = infer_size(shape, t.numel(), "reshape");
  Strides strides;
  if (compute_view_strides(t.shape(), t.strides(), target, &strides))
    return t.as_strided(target, strides, t.offset());
  return clone(t).view(target);
}

Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  if (t.dim() == 0) return reshape(t, {1});
  const int64_t start = wrap_dim(start_dim, t.dim(), "flatten");
  const int64_t end = wrap_dim(end_dim, t.dim(), "flatten");
  RCUDA_CHECK(start <= end, ValueError, "flatten: start_dim ", start_dim,
              " must not come after end_dim ", end_dim);
  Shape shape(t.shape().begin(), t.shape().begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= t.shape()[d];
  shape.push_back(merged);
  shape.insert(shape.end(), t.shape().begin() + end + 1, t.shape().end());
  return reshape(t, shape);
}

Scalar item(const Tensor& t) {
  RCUDA_CHECK(t.numel() == 1, ValueError, "item: a tensor with ", t.numel(),
              " elements cannot be converted to a scalar (it needs exactly one)");
  RCUDA_CHECK(!is_complex(t.dtype()), DTypeError, "item: a ", dtype_name(t.dtype()),
              " value is no real number; read real() and imag(), or view_as_real()");
  const Tensor host = contiguous(to(t, Device(DeviceType::CPU)));
  switch (host.dtype()) {
    case DType::Bool:
      return Scalar(*host.data<bool>());
    case DType::UInt8:
      return Scalar(static_cast<int64_t>(*host.data<uint8_t>()));
    case DType::Int8:
      return Scalar(static_cast<int64_t>(*host.data<int8_t>()));
    case DType::Int16:
      return Scalar(static_cast<int64_t>(*host.data<int16_t>()));
    case DType::Int32:
      return Scalar(static_cast<int64_t>(*host.data<int32_t>()));
    case DType::Int64:
      return Scalar(*host.data<int64_t>());
    case DType::Float64:
      return Scalar(*host.data<double>());
    default:
      return Scalar(*to(host, DType::Float64).data<double>());
  }
}

}  // namespace rcuda::ops
