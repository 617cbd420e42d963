// interpolate's front end (rcuda/ops/resample.h): torch.nn.functional.interpolate's checks, the
// output size from size or scale_factor, the memory format (Note [Channels-last layers]) and
// the 4-D form Backend::interpolate takes (a 1-D interpolation is a 2-D one of height 1).
// "area" is adaptive average pooling to the output size, as in PyTorch.
#include <cmath>
#include <sstream>
#include <string>

#include "layer_layout.h"
#include "ops_util.h"
#include "rcuda/ops/pool.h"
#include "rcuda/ops/resample.h"
#include "rcuda/tensor/autograd_meta.h"

namespace rcuda::ops {
namespace {

constexpr const char* kOp = "interpolate";

std::string values_str(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    std::ostringstream one;
    one << v[i];
    s += (i ? ", " : "") + one.str();
  }
  return s + "]";
}

// The modes and the input ranks they take.
void parse_mode(InterpolatePlan& p, const std::string& mode, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (mode == "nearest" || mode == "nearest-exact" || mode == "area") {
    p.args.mode =
        mode == "nearest-exact" ? InterpolateMode::NearestExact : InterpolateMode::Nearest;
    p.area = mode == "area";
    RCUDA_CHECK(rank == 3 || rank == 4, ShapeError, kOp, ": mode '", mode,
                "' expects a 3-D (N, C, L) or 4-D (N, C, H, W) input, got shape ",
                shape_str(shape));
  } else if (mode == "linear" || mode == "bilinear") {
    p.args.mode = InterpolateMode::Linear;
    const bool one_d = mode == "linear";
    RCUDA_CHECK(rank == (one_d ? 3 : 4), ShapeError, kOp, ": mode '", mode, "' expects a ",
                one_d ? "3-D (N, C, L)" : "4-D (N, C, H, W)", " input, got shape ",
                shape_str(shape),
                one_d ? " (use 'bilinear' for 4-D input)" : " (use 'linear' for 3-D input)");
  } else {
    RCUDA_CHECK(false, ValueError, kOp,
                ": mode must be 'nearest', 'nearest-exact', 'linear', 'bilinear' or 'area', got '",
                mode, "' (bicubic and trilinear are not supported)");
  }
  p.mode = mode;
}

}  // namespace

InterpolatePlan interpolate_plan(const Tensor& x, const std::vector<int64_t>& size,
                                 const std::vector<double>& scale_factor, const std::string& mode,
                                 std::optional<bool> align_corners,
                                 std::optional<bool> recompute_scale_factor) {
  check_not_float8(kOp, x);
  check_floating(kOp, "input", x);
  InterpolatePlan p;
  parse_mode(p, mode, x.shape());
  const Shape& shape = x.shape();
  for (size_t d = 1; d < shape.size(); ++d)
    RCUDA_CHECK(shape[d] > 0, ShapeError, kOp,
                ": expected an input with non-zero sizes but for N, got shape ", shape_str(shape));
  const bool linear = p.args.mode == InterpolateMode::Linear;
  RCUDA_CHECK(!align_corners || linear, ValueError, kOp,
              ": align_corners can only be set with the interpolating modes 'linear' and "
              "'bilinear', not '",
              mode, "'");
  p.args.align_corners = align_corners.value_or(false);
  p.spatial_dims = static_cast<int>(shape.size()) - 2;
  const size_t dims = static_cast<size_t>(p.spatial_dims);
  RCUDA_CHECK(!size.empty() || !scale_factor.empty(), ValueError, kOp,
              ": either size or scale_factor should be given");
  RCUDA_CHECK(size.empty() || scale_factor.empty(), ValueError, kOp,
              ": only one of size and scale_factor should be given, got size ", shape_str(size),
              " and scale_factor ", values_str(scale_factor));
  p.input_shape = shape;
  p.output_shape = shape;
  std::vector<double> scales(dims, 0.0);  // the primitive's: 0 for none
  if (!size.empty()) {
    RCUDA_CHECK(!recompute_scale_factor.value_or(false), ValueError, kOp,
                ": recompute_scale_factor is not meaningful with an explicit size");
    RCUDA_CHECK(size.size() == 1 || size.size() == dims, ValueError, kOp, ": size must have ",
                dims == 1 ? "1 value" : "1 or 2 values", " (one per spatial dim of the ",
                shape.size(), "-D input), got ", size.size(), " ", shape_str(size));
    for (size_t i = 0; i < dims; ++i) {
      const int64_t s = size[size.size() == 1 ? 0 : i];
      RCUDA_CHECK(s >= 1, ValueError, kOp, ": size must be at least 1, got ", shape_str(size));
      p.output_shape[2 + i] = s;
    }
  } else {
    RCUDA_CHECK(scale_factor.size() == 1 || scale_factor.size() == dims, ValueError, kOp,
                ": scale_factor must have ", dims == 1 ? "1 value" : "1 or 2 values",
                " (one per spatial dim of the ", shape.size(), "-D input), got ",
                scale_factor.size(), " ", values_str(scale_factor));
    for (size_t i = 0; i < dims; ++i) {
      const double f = scale_factor[scale_factor.size() == 1 ? 0 : i];
      RCUDA_CHECK(f > 0 && std::isfinite(f), ValueError, kOp,
                  ": scale_factor must be positive and finite, got ", values_str(scale_factor));
      const double out = std::floor(static_cast<double>(shape[2 + i]) * f);
      RCUDA_CHECK(out >= 1, ShapeError, kOp, ": scale_factor ", f, " makes spatial dim ", i,
                  " of size ", shape[2 + i], " an output of size ", out,
                  " (at least 1 needed; input shape ", shape_str(shape), ")");
      RCUDA_CHECK(out < 9.2e18, ShapeError, kOp, ": scale_factor ", f,
                  " gives an output size too large to hold, for input shape ", shape_str(shape));
      p.output_shape[2 + i] = static_cast<int64_t>(out);
      if (!recompute_scale_factor.value_or(false)) scales[i] = f;
    }
  }
  p.args.scale_w = scales.back();
  if (dims == 2) p.args.scale_h = scales[0];
  NoGradGuard no_grad;  // the height-1 view below only inspects strides
  const Tensor x4 = dims == 1 ? x.unsqueeze(2) : x;
  p.args.channels_last = is_channels_last(x4);
  return p;
}

Tensor interpolate_forward(const Tensor& x, const InterpolatePlan& p) {
  RCUDA_CHECK(x.shape() == p.input_shape, InternalError, kOp, ": planned for shape ",
              shape_str(p.input_shape), ", called with ", shape_str(x.shape()));
  const bool one_d = p.spatial_dims == 1;
  if (p.area) {
    const Shape& o = p.output_shape;
    if (!one_d) return adaptive_avg_pool2d(x, {o[2], o[3]});
    return adaptive_avg_pool2d(x.unsqueeze(2), {1, o[2]}).squeeze(2);
  }
  const Tensor x4 = one_d ? x.unsqueeze(2) : x;
  Shape out4 = p.output_shape;
  if (one_d) out4.insert(out4.begin() + 2, 1);
  const bool cl = p.args.channels_last;
  const Tensor out = empty_in_format(out4, x.dtype(), x.device(), cl);
  if (out.numel() > 0) backend_of(x).interpolate(p.args, out, in_format(x4, cl));
  return one_d ? without_unit_dims(out, {2}) : out;
}

Tensor interpolate_backward(const Tensor& grad_out, const InterpolatePlan& p) {
  const std::string op = std::string(kOp) + "_backward";
  RCUDA_CHECK(!p.area, InternalError, op, ": mode 'area' differentiates as adaptive_avg_pool2d");
  check_not_float8(op.c_str(), grad_out);
  check_floating(op.c_str(), "grad_output", grad_out);
  RCUDA_CHECK(grad_out.shape() == p.output_shape, ShapeError, op, ": grad_output has shape ",
              shape_str(grad_out.shape()), ", expected the output's ", shape_str(p.output_shape));
  const bool one_d = p.spatial_dims == 1, cl = p.args.channels_last;
  Shape in4 = p.input_shape;
  if (one_d) in4.insert(in4.begin() + 2, 1);
  const Tensor grad_in = empty_in_format(in4, grad_out.dtype(), grad_out.device(), cl);
  if (grad_in.numel() > 0) {
    const Tensor g4 = one_d ? grad_out.unsqueeze(2) : grad_out;
    backend_of(grad_out).interpolate_backward(p.args, grad_in, in_format(g4, cl));
  }
  return one_d ? without_unit_dims(grad_in, {2}) : grad_in;
}

Tensor interpolate(const Tensor& x, const std::vector<int64_t>& size,
                   const std::vector<double>& scale_factor, const std::string& mode,
                   std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor) {
  return interpolate_forward(
      x, interpolate_plan(x, size, scale_factor, mode, align_corners, recompute_scale_factor));
}

}  // namespace rcuda::ops
