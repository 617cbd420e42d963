// ONNX import: Resize (10, 11, 13, 18, 19) and Upsample (7, 9) (ops_nn.h).
//
// Note [Resize as gathers]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Resize is separable: each resized axis maps output position y to a source coordinate x
// (coordinate_transformation_mode), reads n taps around x (1 nearest, 2 linear, 4 cubic, more
// with antialias) clamped to the axis (ONNX's edge padding) and sums them with weights that
// depend on x alone. The taps and weights are computed here on the host, in double, as ONNX's
// reference computes them; the run is an index_select of the taps and, unless nearest, a weighted
// sum over them, with public ops (so it records for autograd and runs on any device). Linear
// resizes that rcuda::interpolate computes alike (torch's bilinear: align_corners, or
// pytorch_half_pixel / half_pixel with outputs longer than 1) call it instead, the call rcuda's
// export wrote them from.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "io/onnx/import/ops_nn.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import::nn {
namespace {

struct ResizeAttributes {
  std::string where;
  std::string mode = "nearest";
  std::string coordinates = "half_pixel";  // coordinate_transformation_mode
  std::string nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false, antialias = false;
  double extrapolation = 0;
  std::vector<int64_t> axes;                               // empty: all
  std::string policy = "stretch";                          // keep_aspect_ratio_policy
  int roi_input = -1, scales_input = 1, sizes_input = -1;  // -1: the version has none
  std::vector<double> fixed_scales;                        // Upsample-7's attribute
};

// What one axis reads: for each output position, `taps` source indices and their weights;
// `outside`: positions whose source lies outside the input (tf_crop_and_resize).
struct AxisPlan {
  int64_t dim = 0, out = 0, taps = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> outside;
  bool any_outside = false;
};

double source_coordinate(const ResizeAttributes& a, double y, double scale, int64_t in, int64_t out,
                         double roi_start, double roi_end) {
  const double length = scale * static_cast<double>(in);  // ONNX's reference: not rounded
  const std::string& m = a.coordinates;
  if (m == "asymmetric") return y / scale;
  if (m == "half_pixel") return (y + 0.5) / scale - 0.5;
  if (m == "pytorch_half_pixel") return length == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (m == "align_corners") return length == 1 ? 0.0 : y * (in - 1) / (length - 1);
  if (m == "tf_half_pixel_for_nn") return (y + 0.5) / scale;
  if (m == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(out) / length;
    return static_cast<double>(in) / 2 * (1 - adjustment) + (y + 0.5) / scale - 0.5;
  }
  // tf_crop_and_resize
  const double x = length == 1 ? (roi_end - roi_start) * (in - 1) / 2
                               : y * (roi_end - roi_start) * (in - 1) / (length - 1);
  return x + roi_start * (in - 1);
}

int64_t nearest_index(const std::string& mode, double x) {
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(std::floor(x + 0.5));
  if (mode == "floor") return static_cast<int64_t>(std::floor(x));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  // round_prefer_floor; an integer x is itself
  return x == std::floor(x) ? static_cast<int64_t>(x) : static_cast<int64_t>(std::ceil(x - 0.5));
}

double cubic(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// The weights of the taps at offsets start + k - ratio from the source (ONNX's reference:
// _linear_coeffs, _cubic_coeffs and their antialiased forms).
std::vector<double> tap_weights(const ResizeAttributes& a, double ratio, double scale) {
  std::vector<double> w;
  if (!a.antialias) {
    if (a.mode == "linear") return {1 - ratio, ratio};
    return {cubic(ratio + 1, a.cubic_a), cubic(ratio, a.cubic_a), cubic(1 - ratio, a.cubic_a),
            cubic(2 - ratio, a.cubic_a)};
  }
  // Antialias stretches the filter by 1 / scale when downscaling.
  scale = std::min(scale, 1.0);
  const double support = a.mode == "linear" ? 1.0 : 2.0;
  const int64_t start = static_cast<int64_t>(std::floor(-support / scale)) + 1;
  double sum = 0;
  for (int64_t i = start; i < 2 - start; ++i) {
    const double x = scale * (static_cast<double>(i) - ratio);
    const double v =
        a.mode == "linear" ? std::clamp(1 - std::abs(x), 0.0, 1.0) : cubic(x, a.cubic_a);
    w.push_back(v);
    sum += v;
  }
  for (double& v : w) v /= sum;
  return w;
}

AxisPlan plan_axis(const ResizeAttributes& a, int64_t dim, int64_t in, int64_t out, double scale,
                   double roi_start, double roi_end) {
  AxisPlan p;
  p.dim = dim;
  p.out = out;
  for (int64_t y = 0; y < out; ++y) {
    const double x =
        source_coordinate(a, static_cast<double>(y), scale, in, out, roi_start, roi_end);
    const bool outside = a.coordinates == "tf_crop_and_resize" && (x < 0 || x > in - 1);
    p.outside.push_back(outside);
    p.any_outside = p.any_outside || outside;
    if (a.mode == "nearest") {
      p.index.push_back(std::clamp<int64_t>(nearest_index(a.nearest_mode, x), 0, in - 1));
      p.weight.push_back(1);
      continue;
    }
    // The reference prefers the pixel left of an integer x: ratio 1 from x - 1.
    const bool whole = x == std::floor(x);
    const double ratio = whole ? 1.0 : x - std::floor(x);
    std::vector<double> w = tap_weights(a, ratio, scale);
    const int64_t n = static_cast<int64_t>(w.size());
    const int64_t start = static_cast<int64_t>(std::floor(x)) - (whole ? n / 2 : n / 2 - 1);
    if (a.exclude_outside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (start + k < 0 || start + k >= in) w[static_cast<size_t>(k)] = 0;
        sum += w[static_cast<size_t>(k)];
      }
      if (sum != 0)
        for (double& v : w) v /= sum;
    }
    p.taps = n;
    for (int64_t k = 0; k < n; ++k) {
      p.index.push_back(std::clamp<int64_t>(start + k, 0, in - 1));
      p.weight.push_back(w[static_cast<size_t>(k)]);
    }
  }
  return p;
}

// x with one axis resized (Note [Resize as gathers]).
Tensor apply_axis(const ResizeAttributes& a, const Tensor& x, const AxisPlan& p) {
  const Device device = x.device();
  const Tensor index = rcuda::from_data(p.index.data(), {static_cast<int64_t>(p.index.size())},
                                        DType::Int64, device);
  Tensor y = rcuda::index_select(x, p.dim, index);
  Shape one_per_dim(static_cast<size_t>(x.dim()), 1);
  if (p.taps > 1 || a.mode != "nearest") {
    Shape taps_shape = x.shape();
    taps_shape[static_cast<size_t>(p.dim)] = p.out;
    taps_shape.insert(taps_shape.begin() + p.dim + 1, p.taps);
    y = rcuda::reshape(y, taps_shape);
    Shape weight_shape(taps_shape.size(), 1);
    weight_shape[static_cast<size_t>(p.dim)] = p.out;
    weight_shape[static_cast<size_t>(p.dim) + 1] = p.taps;
    const Tensor weight = rcuda::to(
        rcuda::from_data(p.weight.data(), weight_shape, DType::Float64, device), x.dtype());
    y = rcuda::sum(rcuda::mul(y, weight), {p.dim + 1});
  }
  if (p.any_outside) {
    std::vector<uint8_t> mask(p.outside.begin(), p.outside.end());
    Shape mask_shape = one_per_dim;
    mask_shape[static_cast<size_t>(p.dim)] = p.out;
    const Tensor outside = rcuda::from_data(mask.data(), mask_shape, DType::Bool, device);
    y = rcuda::where(outside, Scalar(a.extrapolation), y);
  }
  return y;
}

// Integers resized by weights are computed in float64, then rounded and saturated (ONNX's
// reference casts so).
Tensor back_to(const Tensor& y, DType dtype) {
  if (y.dtype() == dtype) return y;
  double low = -std::numeric_limits<double>::infinity(), high = -low;
  if (dtype == DType::UInt8) low = 0, high = 255;
  if (dtype == DType::Int8) low = -128, high = 127;
  if (dtype == DType::Int16) low = -32768, high = 32767;
  if (dtype == DType::Int32) low = -2147483648.0, high = 2147483647.0;
  Tensor r = rcuda::round(y);
  if (std::isfinite(low)) r = rcuda::clamp(r, Scalar(low), Scalar(high));
  return rcuda::to(r, dtype);
}

struct Target {
  std::vector<double> scale;  // per dim of x
  std::vector<int64_t> out;
  std::vector<double> roi_start, roi_end;
};

std::vector<double> doubles_of(const std::vector<Tensor>& in, int i) {
  if (i < 0 || static_cast<size_t>(i) >= in.size() || !in[static_cast<size_t>(i)].defined())
    return {};
  return host_doubles(in[static_cast<size_t>(i)]);
}

// Output sizes and scales of every dim from the scales or sizes given for `axes`.
Target target_of(const ResizeAttributes& a, const Tensor& x, const std::vector<Tensor>& in) {
  const int64_t rank = x.dim();
  std::vector<int64_t> axes = a.axes;
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  for (int64_t& d : axes) d = normalize_axis(d, rank, "Resize's axes");
  std::vector<double> scales =
      a.fixed_scales.empty() ? doubles_of(in, a.scales_input) : a.fixed_scales;
  const std::vector<double> sizes = doubles_of(in, a.sizes_input);
  const std::vector<double> roi = doubles_of(in, a.roi_input);
  if (scales.empty() == sizes.empty())
    fail_at_run(a.where, "exactly one of scales and sizes must be given (non-empty)");
  const size_t n = axes.size();
  if ((!scales.empty() && scales.size() != n) || (!sizes.empty() && sizes.size() != n))
    fail_at_run(a.where, "scales or sizes has " +
                             std::to_string(std::max(scales.size(), sizes.size())) +
                             " values for " + std::to_string(n) + " axes");
  Target t;
  t.scale.assign(static_cast<size_t>(rank), 1.0);
  t.out.assign(x.shape().begin(), x.shape().end());
  t.roi_start.assign(static_cast<size_t>(rank), 0.0);
  t.roi_end.assign(static_cast<size_t>(rank), 1.0);
  const bool crop = a.coordinates == "tf_crop_and_resize";
  if (crop && roi.size() == 2 * n)
    for (size_t i = 0; i < n; ++i) {
      t.roi_start[static_cast<size_t>(axes[i])] = roi[i];
      t.roi_end[static_cast<size_t>(axes[i])] = roi[n + i];
    }
  else if (crop)
    fail_at_run(a.where, "tf_crop_and_resize needs roi with " + std::to_string(2 * n) + " values");
  for (size_t i = 0; i < n; ++i) {
    const size_t d = static_cast<size_t>(axes[i]);
    const double in_size = static_cast<double>(x.size(axes[i]));
    if (!scales.empty()) {
      if (scales[i] <= 0) fail_at_run(a.where, "scales must be positive");
      t.scale[d] = scales[i];
      // The spec's size counts the roi's share, but ONNX's reference and ONNX Runtime take
      // floor(in * scale) alone; models are checked against those.
      t.out[d] = static_cast<int64_t>(std::floor(in_size * scales[i]));
    } else {
      t.out[d] = static_cast<int64_t>(sizes[i]);
      t.scale[d] = static_cast<double>(t.out[d]) / in_size;
    }
  }
  if (!sizes.empty() && a.policy != "stretch") {
    double s = a.policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t d : axes)
      s = a.policy == "not_larger" ? std::min(s, t.scale[static_cast<size_t>(d)])
                                   : std::max(s, t.scale[static_cast<size_t>(d)]);
    for (int64_t d : axes) {
      t.scale[static_cast<size_t>(d)] = s;
      t.out[static_cast<size_t>(d)] =
          static_cast<int64_t>(std::floor(s * static_cast<double>(x.size(d)) + 0.5));
    }
  }
  return t;
}

// rcuda::interpolate computes this resize as ONNX does (Note [Resize as gathers]).
bool interpolate_fits(const ResizeAttributes& a, const Tensor& x, const Target& t, bool by_sizes) {
  if (a.mode != "linear" || a.antialias || !is_floating(x.dtype()) ||
      (x.dim() != 3 && x.dim() != 4))
    return false;
  if (a.coordinates != "align_corners" && a.coordinates != "pytorch_half_pixel" &&
      a.coordinates != "half_pixel")
    return false;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const size_t i = static_cast<size_t>(d);
    const bool same = t.out[i] == x.size(d) && t.scale[i] == 1.0;
    if (d < 2 && !same) return false;
    if (d >= 2 && !same) {
      if (t.out[i] <= 1) return false;
      // keep_aspect_ratio_policy may give a scale other than out / in
      if (by_sizes && t.scale[i] != static_cast<double>(t.out[i]) / static_cast<double>(x.size(d)))
        return false;
      if (!by_sizes && t.out[i] == x.size(d)) return false;  // interpolate would copy
      if (!by_sizes && a.coordinates == "align_corners" &&
          t.scale[i] * static_cast<double>(x.size(d)) != static_cast<double>(t.out[i]))
        return false;
    }
  }
  return true;
}

Kernel resize_kernel(const ResizeAttributes& a) {
  return [a](const std::vector<Tensor>& in, const RunContext&) {
    const Tensor& x = in[0];
    const Target t = target_of(a, x, in);
    const bool by_sizes = a.fixed_scales.empty() && doubles_of(in, a.scales_input).empty();
    if (interpolate_fits(a, x, t, by_sizes)) {
      const std::vector<int64_t> size(t.out.begin() + 2, t.out.end());
      const std::vector<double> factors(t.scale.begin() + 2, t.scale.end());
      const char* mode = x.dim() == 3 ? "linear" : "bilinear";
      const bool align = a.coordinates == "align_corners";
      return std::vector<Tensor>{by_sizes ? rcuda::interpolate(x, size, {}, mode, align)
                                          : rcuda::interpolate(x, {}, factors, mode, align)};
    }
    const bool weighted = a.mode != "nearest" && !is_floating(x.dtype());
    Tensor y = weighted ? rcuda::to(x, DType::Float64) : x;
    for (int64_t d = 0; d < x.dim(); ++d) {
      const size_t i = static_cast<size_t>(d);
      const bool identity = t.out[i] == x.size(d) && std::abs(t.scale[i] - 1.0) < 1e-9 &&
                            t.roi_start[i] == 0 && t.roi_end[i] == 1;
      if (identity) continue;
      y = apply_axis(
          a, y, plan_axis(a, d, x.size(d), t.out[i], t.scale[i], t.roi_start[i], t.roi_end[i]));
    }
    return std::vector<Tensor>{back_to(y, x.dtype())};
  };
}

void check_choice(NodeReader& node, const char* name, const std::string& value,
                  const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
  std::string list;
  for (const std::string& s : allowed) list += (list.empty() ? "" : ", ") + s;
  node.fail(std::string(name) + " must be one of " + list + ", got \"" + value + "\"");
}

}  // namespace

Kernel make_resize(NodeReader& node) {
  ResizeAttributes a;
  a.where = node.where();
  a.mode = node.s("mode", "nearest");
  check_choice(node, "mode", a.mode, {"nearest", "linear", "cubic"});
  if (node.version() < 11) {
    // Resize-10 maps coordinates as Upsample: asymmetric, nearest rounding down.
    if (a.mode == "cubic") node.fail("mode \"cubic\" needs Resize-11 or later");
    a.coordinates = "asymmetric";
    a.nearest_mode = "floor";
    node.host_input(1);
  } else {
    a.coordinates = node.s("coordinate_transformation_mode", "half_pixel");
    check_choice(node, "coordinate_transformation_mode", a.coordinates,
                 {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                  "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"});
    a.nearest_mode = node.s("nearest_mode", "round_prefer_floor");
    check_choice(node, "nearest_mode", a.nearest_mode,
                 {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
    a.cubic_a = node.f("cubic_coeff_a", -0.75);
    a.exclude_outside = node.i("exclude_outside", 0) != 0;
    a.extrapolation = node.f("extrapolation_value", 0.0);
    a.roi_input = 1, a.scales_input = 2, a.sizes_input = 3;
    for (size_t i = 1; i < 4; ++i) node.host_input(i);
  }
  if (node.version() >= 18) {
    a.antialias = node.i("antialias", 0) != 0 && a.mode != "nearest";
    a.axes = node.ints("axes", {});
    a.policy = node.s("keep_aspect_ratio_policy", "stretch");
    check_choice(node, "keep_aspect_ratio_policy", a.policy,
                 {"stretch", "not_larger", "not_smaller"});
  }
  return resize_kernel(a);
}

// Upsample: Resize with asymmetric coordinates, scales of every dim (an attribute in 7, an input
// from 9), nearest rounding down.
Kernel make_upsample(NodeReader& node) {
  ResizeAttributes a;
  a.where = node.where();
  a.mode = node.s("mode", "nearest");
  if (a.mode == "bilinear") a.mode = "linear";
  check_choice(node, "mode", a.mode, {"nearest", "linear"});
  a.coordinates = "asymmetric";
  a.nearest_mode = "floor";
  if (node.version() < 9) {
    a.fixed_scales = node.floats("scales");
    a.scales_input = -1;
  } else {
    node.host_input(1);
  }
  return resize_kernel(a);
}

}  // namespace rcuda::io::onnx_import::nn
