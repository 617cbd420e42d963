// floor_divide: the quotient rounded toward minus infinity, as torch.floor_divide, Python's //
// and R's %/%, so that a == floor_divide(a, b) * b + remainder(a, b).
//
// Note [Floor division]
// There is no floor-division kernel: it is composed from the elementwise primitives, in the
// promoted dtype, so every backend has it.
// - floating: round((a - remainder(a, b)) / b). The numerator is a multiple of b up to
//   rounding, so the quotient is within a rounding error of an integer; floor(a / b) instead
//   can be one too high (1 // 0.1 is 9 in torch, Python and R; floor(1 / 0.1) is 10). Division
//   by zero gives a / b (inf or NaN), as torch.
// - integral: a - remainder(a, b) is an exact multiple of b, taken in int64 so that it cannot
//   wrap in a narrower dtype (int8's -128 - 2 is no int8); dividing it in float64 is exact
//   while it stays below 2^53 in magnitude, and the quotient wraps into the dtype as torch's
//   does (int8 -128 // -1 is -128). A zero divisor is a ValueError, checked first (on a GPU
//   that check waits for the divisor).
#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::ops {

Tensor floor_divide(const Tensor& a, const Tensor& b) {
  const DType dtype = ops::result_type({a, b});
  RCUDA_CHECK(dtype != DType::Bool, DTypeError,
              "floor_divide: not supported for bool tensors (convert with to() first)");
  ops::check_not_float8("floor_divide", a);
  ops::check_not_float8("floor_divide", b);
  if (is_floating(dtype)) {
    const Tensor q = round(div(sub(a, remainder(a, b)), b));
    return where(eq(b, Scalar(0.0)), div(a, b), q);
  }
  // An empty result divides nothing, so a zero divisor is no error (as torch); mul gives the
  // result's shape and dtype and checks the devices.
  if (a.numel() == 0 || b.numel() == 0) return mul(a, b);
  RCUDA_CHECK(!item(any(eq(b, Scalar(int64_t{0})))).to_bool(), ValueError,
              "floor_divide: integer division by zero (the divisor, of dtype ",
              dtype_name(b.dtype()), ", holds a 0)");
  const Tensor multiple = sub(ops::cast(a, DType::Int64), ops::cast(remainder(a, b), DType::Int64));
  return ops::cast(div(ops::cast(multiple, DType::Float64), ops::cast(b, DType::Float64)), dtype);
}

Tensor floor_divide(const Tensor& a, const Scalar& b) {
  // A 0-dim tensor of the promoted dtype promotes with `a` exactly as the number does.
  return floor_divide(a, scalar_tensor(b, ops::result_type({a}, {b}), a.device()));
}

}  // namespace rcuda::ops
