// Creating tensors.
#include "rcuda/ops/creation.h"

#include <cmath>
#include <cstring>

#include "ops_util.h"
#include "rcuda/ops/complex.h"
#include "rcuda/ops/copy.h"

namespace rcuda::ops {

Tensor empty(const Shape& shape, TensorOptions o) {
  return Tensor::empty(shape, o.dtype, o.device);
}

Tensor full(const Shape& shape, const Scalar& value, TensorOptions o) {
  Tensor t = Tensor::empty(shape, o.dtype, o.device);
  fill_(t, value);
  return t;
}
Tensor zeros(const Shape& shape, TensorOptions o) { return full(shape, 0, o); }
Tensor ones(const Shape& shape, TensorOptions o) { return full(shape, 1, o); }
Tensor empty_like(const Tensor& t) { return Tensor::empty(t.shape(), t.dtype(), t.device()); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), {t.dtype(), t.device()}); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), {t.dtype(), t.device()}); }
Tensor full_like(const Tensor& t, const Scalar& v) {
  return full(t.shape(), v, {t.dtype(), t.device()});
}

const Tensor& fill_(const Tensor& t, const Scalar& value) {
  if (t.numel() == 0) return t;
  t.storage()->bump_version();  // Note [Version counter] in rcuda/tensor/storage.h
  if (is_complex(t.dtype())) {
    // Numbers are real: the real part takes the value (Note [Complex tensors]).
    const Tensor pairs = view_as_real(t);
    ops::backend_of(t).fill(pairs.select(-1, 0), value);
    ops::backend_of(t).fill(pairs.select(-1, 1), Scalar(0.0));
    return t;
  }
  ops::backend_of(t).fill(t, value);
  return t;
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              std::optional<DType> dtype, Device device) {
  const bool integral = !start.is_floating() && !end.is_floating() && !step.is_floating();
  const DType out_dtype = dtype.value_or(integral ? DType::Int64 : default_float_dtype());
  const double s = start.to_double(), e = end.to_double(), d = step.to_double();
  RCUDA_CHECK(d != 0, ValueError, "arange: step must be nonzero");
  RCUDA_CHECK(std::isfinite(s) && std::isfinite(e), ValueError, "arange: start (", s, ") and end (",
              e, ") must be finite");
  RCUDA_CHECK((d > 0 && e >= s) || (d < 0 && e <= s), ValueError, "arange: upper bound (", e,
              ") and lower bound (", s, ") inconsistent with step sign (", d, ")");
  const double count =
      integral
          ? static_cast<double>((end.to_int() - start.to_int() + step.to_int() - (d > 0 ? 1 : -1)) /
                                step.to_int())
          : std::ceil((e - s) / d);
  RCUDA_CHECK(count < 9.2e18, ValueError, "arange: ", count, " elements are too many");
  Tensor out = Tensor::empty({static_cast<int64_t>(count)}, out_dtype, device);
  if (out.numel() > 0) ops::backend_of(out).arange(out, start, step);
  return out;
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions o) {
  RCUDA_CHECK(steps >= 0, ValueError, "linspace: number of steps must be non-negative, got ",
              steps);
  Tensor out = Tensor::empty({steps}, o.dtype, o.device);
  if (steps > 0) ops::backend_of(out).linspace(out, start, end);
  return out;
}

Tensor eye(int64_t n, int64_t m, TensorOptions o) {
  if (m < 0) m = n;
  RCUDA_CHECK(n >= 0, ValueError, "eye: n must be non-negative, got ", n);
  Tensor out = zeros({n, m}, o);
  fill_(out.diagonal(), 1);
  return out;
}

Tensor from_data(const void* data, const Shape& shape, DType dtype, Device device) {
  Tensor host = Tensor::empty(shape, dtype, Device(DeviceType::CPU));
  const size_t nbytes = static_cast<size_t>(host.numel()) * host.element_size();
  if (nbytes > 0) std::memcpy(host.data_ptr(), data, nbytes);
  return device.is_cpu() ? host : to(host, device);
}

Tensor scalar_tensor(const Scalar& value, DType dtype, Device device) {
  return full({}, value, {dtype, device});
}

}  // namespace rcuda::ops
