// float8_cast and float8_update_scales (rcuda/ops/float8.h): argument checks, then one backend
// primitive each (Note [Float8 casts with amax] in rcuda/backend/backend.h).
#include "rcuda/ops/float8.h"

#include "ops_util.h"
#include "rcuda/ops/copy.h"

namespace rcuda::ops {
namespace {

void check_one_float32(const char* op, const char* arg, const Tensor& t, const Tensor& like) {
  RCUDA_CHECK(t.defined() && t.dtype() == DType::Float32 && t.numel() == 1, DTypeError, op, ": ",
              arg, " must be a float32 tensor with one element, got ",
              t.defined() ? dtype_name(t.dtype()) : "an undefined tensor",
              t.defined() ? " of shape " + shape_str(t.shape()) : std::string());
  check_same_device(op, {like, t});
}

// The one-element tensor as the 0-dim view the backend reads.
Tensor element(const Tensor& t) { return t.as_strided({}, {}, t.offset()); }

}  // namespace

double float8_max(DType dtype) {
  RCUDA_CHECK(is_float8(dtype), DTypeError, "float8_max: expected a float8 dtype, got ",
              dtype_name(dtype));
  return dtype == DType::Float8E4M3FN ? 448.0 : 57344.0;
}

Float8Cast float8_cast(const Tensor& in, const Tensor& scale, const Tensor& amax, DType dtype,
                       bool rowwise, bool transposed) {
  constexpr const char* kOp = "float8_cast";
  check_floating(kOp, "input", in);
  check_not_float8(kOp, in);
  RCUDA_CHECK(in.dim() == 2, ShapeError, kOp, ": input must be 2-D [M,K], got shape ",
              shape_str(in.shape()));
  RCUDA_CHECK(is_float8(dtype), DTypeError, kOp,
              ": dtype must be float8_e4m3fn or float8_e5m2, got ", dtype_name(dtype));
  RCUDA_CHECK(rowwise || transposed, ValueError, kOp,
              ": asked for neither the row-major nor the transposed result");
  check_one_float32(kOp, "scale", scale, in);
  check_one_float32(kOp, "amax", amax, in);
  const int64_t m = in.size(0), k = in.size(1);
  Float8Cast result;
  if (rowwise) result.data = Tensor::empty({m, k}, dtype, in.device());
  if (transposed) result.data_t = Tensor::empty({k, m}, dtype, in.device());
  if (m == 0 || k == 0) return result;
  backend_of(in).float8_cast(result.data, result.data_t, element(amax), contiguous(in),
                             element(scale));
  amax.storage()->bump_version();
  return result;
}

Float8Scales float8_update_scales(const Tensor& amax_history, const Tensor& scale,
                                  const std::vector<DType>& formats, int margin) {
  constexpr const char* kOp = "float8_update_scales";
  RCUDA_CHECK(amax_history.dtype() == DType::Float32 && amax_history.dim() == 2 &&
                  amax_history.is_contiguous(),
              ValueError, kOp, ": amax_history must be a contiguous 2-D float32 tensor [R,H], got ",
              dtype_name(amax_history.dtype()), " of shape ", shape_str(amax_history.shape()));
  const int64_t rows = amax_history.size(0);
  RCUDA_CHECK(rows <= 8 && amax_history.size(1) >= 1, ShapeError, kOp,
              ": amax_history must have 1 to 8 rows and at least one column, got shape ",
              shape_str(amax_history.shape()));
  RCUDA_CHECK(scale.dtype() == DType::Float32 && scale.dim() == 1 && scale.size(0) == rows,
              ValueError, kOp, ": scale must be a float32 tensor [", rows,
              "] (one per history row), got ", dtype_name(scale.dtype()), " of shape ",
              shape_str(scale.shape()));
  RCUDA_CHECK(static_cast<int64_t>(formats.size()) == rows, ValueError, kOp, ": ", rows,
              " history rows but ", formats.size(), " formats");
  check_same_device(kOp, {amax_history, scale});
  std::vector<double> maxima;
  for (DType f : formats) maxima.push_back(float8_max(f));
  // Each scale on a 16-byte boundary of its own ([R, 4] storage, column 0): cuBLASLt reads
  // fp8 scales only from 16-byte-aligned addresses, and scaled_mm would otherwise copy each one.
  const auto aligned_vector = [&] {
    return Tensor::empty({rows, 4}, DType::Float32, scale.device()).select(1, 0);
  };
  Float8Scales out{aligned_vector(), aligned_vector()};
  backend_of(scale).float8_update_scales(amax_history, scale, out.scale, out.scale_inv, maxima,
                                         margin);
  amax_history.storage()->bump_version();
  return out;
}

}  // namespace rcuda::ops
