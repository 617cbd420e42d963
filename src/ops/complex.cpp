// Complex tensors as views of real pairs, and the complex ops composed of real ones
// (rcuda/ops/complex.h, Note [Complex tensors]).
#include "rcuda/ops/complex.h"

#include <cmath>

#include "complex_ops.h"
#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"

namespace rcuda::ops {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Rewrites a fresh alias of `t` into another dtype's view of the same bytes.
Tensor retyped_view(const Tensor& t, Shape shape, Strides strides, int64_t offset, DType dtype) {
  Tensor v = t.alias();
  TensorImpl* impl = v.impl();
  impl->shape = std::move(shape);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = dtype;
  impl->is_view = true;
  return v;
}

// A complex operand's parts in `dtype`'s part type; `im` is undefined for a real operand (its
// imaginary part is zero, and leaving it out saves the ops on it).
struct Parts {
  Tensor re, im;
};

Parts parts_of(const Tensor& t, DType dtype) {
  if (!is_complex(t.dtype())) return {cast(t, complex_part_dtype(dtype)), Tensor()};
  const Tensor pairs = view_as_real(cast(t, dtype));
  return {pairs.select(-1, 0), pairs.select(-1, 1)};
}

// a*b + c*d with either product missing where an operand is undefined (a zero part).
Tensor sum_of_products(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d,
                       bool subtract) {
  const bool first = a.defined() && b.defined(), second = c.defined() && d.defined();
  if (first && second) return subtract ? sub(mul(a, b), mul(c, d)) : add(mul(a, b), mul(c, d));
  if (first) return mul(a, b);
  if (second) return subtract ? neg(mul(c, d)) : mul(c, d);
  return Tensor();
}

Tensor from_parts(const Tensor& re, const Tensor& im) {
  return complex(re, im.defined() ? im : zeros_like(re));
}

// (ar + i ai) / (br + i bi) with the divisor scaled by max(|br|, |bi|) first, so that its
// squared modulus neither overflows nor underflows where the quotient itself is finite.
Tensor complex_divide(const Parts& a, const Parts& b) {
  if (!b.im.defined()) return from_parts(div(a.re, b.re), a.im.defined() ? div(a.im, b.re) : a.im);
  const Tensor scale = maximum(abs(b.re), abs(b.im));
  const Tensor br = div(b.re, scale), bi = div(b.im, scale);
  const Tensor denom = mul(add(mul(br, br), mul(bi, bi)), scale);
  const Tensor re = sum_of_products(a.re, br, a.im, bi, /*subtract=*/false);
  const Tensor im = sum_of_products(a.im, br, a.re, bi, /*subtract=*/true);  // a.re, bi defined
  return complex(div(re, denom), div(im, denom));
}

}  // namespace

Tensor view_as_real(const Tensor& z) {
  RCUDA_CHECK(is_complex(z.dtype()), DTypeError,
              "view_as_real: expected a complex tensor, got dtype ", dtype_name(z.dtype()));
  Shape shape = z.shape();
  shape.push_back(2);
  Strides strides;
  for (int64_t s : z.strides()) strides.push_back(s * 2);
  strides.push_back(1);
  return retyped_view(z, std::move(shape), std::move(strides), z.offset() * 2,
                      complex_part_dtype(z.dtype()));
}

Tensor view_as_complex(const Tensor& x) {
  const char* op = "view_as_complex";
  RCUDA_CHECK(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, DTypeError, op,
              ": expected a float32 or float64 tensor, got dtype ", dtype_name(x.dtype()));
  RCUDA_CHECK(!x.requires_grad(), ValueError, op,
              ": complex tensors record no gradients; detach() x first");
  RCUDA_CHECK(x.dim() >= 1 && x.shape().back() == 2, ShapeError, op,
              ": the last dim must have size 2 (the real and imaginary parts), got shape ",
              shape_str(x.shape()));
  RCUDA_CHECK(x.strides().back() == 1, ShapeError, op,
              ": the last dim must have stride 1, got strides ", shape_str(x.strides()),
              " (call contiguous() first)");
  Strides strides(x.strides().begin(), x.strides().end() - 1);
  bool even = x.offset() % 2 == 0;
  for (int64_t s : strides) even = even && s % 2 == 0;
  RCUDA_CHECK(even, ShapeError, op,
              ": every stride but the last and the storage offset must be even, got strides ",
              shape_str(x.strides()), " and offset ", x.offset(), " (call contiguous() first)");
  for (int64_t& s : strides) s /= 2;
  return retyped_view(x, Shape(x.shape().begin(), x.shape().end() - 1), std::move(strides),
                      x.offset() / 2, complex_dtype_for(x.dtype()));
}

Tensor complex(const Tensor& real, const Tensor& imag) {
  const char* op = "complex";
  RCUDA_CHECK(real.dtype() == imag.dtype() &&
                  (real.dtype() == DType::Float32 || real.dtype() == DType::Float64),
              DTypeError, op,
              ": expected real and imag to be both float32 or both float64, got real of dtype ",
              dtype_name(real.dtype()), " and imag of dtype ", dtype_name(imag.dtype()));
  check_same_device(op, {real, imag});
  Shape shape = broadcast_shapes(real.shape(), imag.shape(), op);
  shape.push_back(2);
  const Tensor pairs = empty(shape, {real.dtype(), real.device()});
  copy_(pairs.select(-1, 0), real);
  copy_(pairs.select(-1, 1), imag);
  return view_as_complex(pairs);
}

Tensor real(const Tensor& z) { return is_complex(z.dtype()) ? view_as_real(z).select(-1, 0) : z; }

Tensor imag(const Tensor& z) {
  RCUDA_CHECK(is_complex(z.dtype()), DTypeError,
              "imag: not implemented for tensors with non-complex dtypes (got ",
              dtype_name(z.dtype()), ")");
  return view_as_real(z).select(-1, 1);
}

Tensor complex_abs(const Tensor& z) {
  if (!is_complex(z.dtype())) return abs(z);
  const Parts p = parts_of(z, z.dtype());
  // max * sqrt((re/max)^2 + (im/max)^2): no overflow for |z| near the largest finite value.
  const Tensor a = abs(p.re), b = abs(p.im);
  const Tensor big = maximum(a, b), small = minimum(a, b);
  const Tensor ratio = where(eq(big, Scalar(0)), Scalar(0), div(small, big));
  return mul(big, sqrt(add(mul(ratio, ratio), Scalar(1))));
}

Tensor angle(const Tensor& z) {
  if (is_complex(z.dtype())) {
    const Parts p = parts_of(z, z.dtype());
    return atan2(p.im, p.re);
  }
  // Real x: 0 for x >= 0, pi for x < 0, NaN kept, as torch's.
  const Tensor x = is_floating(z.dtype()) ? z : cast(z, default_float_dtype());
  const Tensor sided = where(lt(x, Scalar(0)), Scalar(kPi), zeros_like(x));
  return where(ne(x, x), x, sided);
}

Tensor conj(const Tensor& z) {
  if (!is_complex(z.dtype())) return z;
  const Tensor out = clone(z);
  const Tensor im = imag(out);
  copy_(im, neg(im));
  return out;
}

Tensor complex_neg(const Tensor& z) {
  const Parts p = parts_of(z, z.dtype());
  return complex(neg(p.re), neg(p.im));
}

Tensor complex_binary(BinaryOp op, const char* name, const Tensor& a, const Tensor& b,
                      DType dtype) {
  check_same_device(name, {a, b});
  RCUDA_CHECK(!a.requires_grad() && !b.requires_grad(), DTypeError, name,
              ": complex tensors record no gradients; detach() the operand that requires grad");
  const Parts x = parts_of(a, dtype), y = parts_of(b, dtype);
  const auto part_or_zero = [](const Tensor& part, const Tensor& like) {
    return part.defined() ? part : zeros_like(like);
  };
  if (op == BinaryOp::Add || op == BinaryOp::Sub) {
    const bool plus = op == BinaryOp::Add;
    const Tensor re = plus ? add(x.re, y.re) : sub(x.re, y.re);
    Tensor im;
    if (x.im.defined() && y.im.defined())
      im = plus ? add(x.im, y.im) : sub(x.im, y.im);
    else if (y.im.defined())
      im = plus ? y.im : neg(y.im);
    else
      im = x.im;
    return from_parts(re, im);  // complex() broadcasts the parts together
  }
  if (op == BinaryOp::Mul) {
    const Tensor re = sum_of_products(x.re, y.re, x.im, y.im, /*subtract=*/true);
    const Tensor im = sum_of_products(x.re, y.im, x.im, y.re, /*subtract=*/false);
    return from_parts(re, im);
  }
  if (op == BinaryOp::Div) return complex_divide(x, y);
  if (op == BinaryOp::Eq || op == BinaryOp::Ne) {
    const Tensor both =
        logical_and(eq(x.re, y.re), eq(part_or_zero(x.im, x.re), part_or_zero(y.im, y.re)));
    return op == BinaryOp::Eq ? both : logical_not(both);
  }
  throw DTypeError(detail::concat(
      name, ": not supported for complex tensors (got ", dtype_name(a.dtype()), " and ",
      dtype_name(b.dtype()),
      "); complex tensors have add, sub, mul, div, eq and ne: split them with view_as_real() "
      "for the rest"));
}

}  // namespace rcuda::ops
