// The operation enums and argument structs of the Backend interface (rcuda/backend/backend.h,
// which includes this header): which elementwise, reduction, pooling, padding and interpolation
// a primitive computes, and the settings each takes. Kept apart so that the interface itself
// reads as the list of primitives; the structs used by one family of primitives only (ConvArgs,
// RnnArgs, the optimizer steps) stay inside Backend, beside their contracts.
#pragma once

#include <array>
#include <cstdint>

namespace rcuda {

enum class UnaryOp : uint8_t {
  Neg,
  Abs,
  Sign,
  Exp,
  Expm1,
  Log,
  Log1p,
  Sqrt,
  Rsqrt,
  Sin,
  Cos,
  Tanh,
  Sigmoid,
  Relu,
  Gelu,
  GeluTanh,
  Silu,
  Floor,
  Ceil,
  Round,
  PowScalar,
  Clamp,
  LeakyRelu,
  Elu,
  Softplus,
  Hardtanh,
  // The Math group (floating results; trunc is the identity on integers)
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Trunc,
  Erf,
  Erfc,
  Erfinv,
  Lgamma,
  Digamma,
  Log2,
  Log10,
  Exp2,
  Reciprocal,
  LogicalNot  // stays last: kUnaryOpCount in src/backend/unary_math.h
};

struct UnaryArgs {
  double exponent = 1.0;                  // PowScalar
  bool has_min = false, has_max = false;  // Clamp
  double min = 0.0, max = 0.0;            // Clamp (when has_min/has_max); Hardtanh (always)
  double negative_slope = 0.01;           // LeakyRelu
  double alpha = 1.0;                     // Elu
  double beta = 1.0, threshold = 20.0;    // Softplus, as torch
};

enum class BinaryOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Remainder,
  Pow,
  Maximum,
  Minimum,
  Atan2,  // floating; out dtype == input dtype
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  LogicalAnd,
  LogicalOr,
  LogicalXor  // out dtype == Bool
};

inline bool is_comparison_or_logical(BinaryOp op) { return op >= BinaryOp::Eq; }

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min, All, Any, Norm };

// ---- pooling (Backend::pool2d; docs/pooling-normalization.md) ----
enum class PoolOp : uint8_t { Max, Avg };

// One 2-D pooling window rule (src/backend/pool_window.h has the formulas). Fixed windows:
// output (oh, ow) covers rows oh * stride_h - pad_h + k * dilation_h, k < kernel_h (and
// likewise columns); adaptive windows: rows [floor(oh * H / OH), ceil((oh + 1) * H / OH)),
// the kernel, stride, padding and dilation fields unused. Average pooling's divisor:
// divisor_override unless 0, else the window clipped to the padded input (count_include_pad)
// or to the input.
struct PoolArgs {
  PoolOp op = PoolOp::Max;
  bool adaptive = false;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  bool count_include_pad = true;
  int64_t divisor_override = 0;
  // Every tensor of the call is channels-last-contiguous (NHWC memory order of an NCHW shape)
  // rather than contiguous (Note [Channels-last layers] in src/ops/layer_layout.h).
  bool channels_last = false;
};

// ---- resampling: pad and interpolate (Backend::pad, Backend::interpolate; docs/resample-pad.md)
// -- Note [Resampling primitives] in rcuda/backend/backend.h says what each computes.
enum class PadMode : uint8_t { Reflect, Replicate, Circular };

// Elements added before and after each of the three spatial dims (D, H, W) of a [N, C, D, H, W]
// call; negative values crop. Ops guarantee for each dim of size S: Reflect before, after < S
// (one reflection reaches every position), Circular 0 <= before, after <= S (one wrap; ops crop
// negative circular padding off the input first, as PyTorch), and the output size
// S + before + after >= 1.
struct PadArgs {
  PadMode mode = PadMode::Reflect;
  std::array<int64_t, 3> before{0, 0, 0}, after{0, 0, 0};
  // The output is channels-last ([N, D, H, W, C] memory order): kernels walk it in that order so
  // that writes stay sequential. The input may have any strides either way.
  bool channels_last = false;
};

enum class InterpolateMode : uint8_t { Nearest, NearestExact, Linear };

struct InterpolateArgs {
  InterpolateMode mode = InterpolateMode::Nearest;
  bool align_corners = false;  // Linear only
  // The scale_factor the caller gave for (height, width), or 0 for none; PyTorch passes the
  // factor to its kernels unless recompute_scale_factor is true, and so do ops.
  double scale_h = 0, scale_w = 0;
  // Every tensor of the call is channels-last-contiguous rather than contiguous.
  bool channels_last = false;
};

}  // namespace rcuda
