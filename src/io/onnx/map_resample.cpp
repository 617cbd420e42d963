// pad (Pad) and interpolate (Resize).
#include "io/onnx/mappings.h"
#include "rcuda/ops/creation.h"

namespace rcuda::io::onnx_export {

// rcuda's (and torch's) pad lists (before, after) pairs from the last dim backwards; ONNX's
// pads are every dim's start, then every dim's end. Negative constant padding crops in both.
void pad(Builder& b) {
  const std::vector<int64_t>& padding = b.attr<std::vector<int64_t>>("padding");
  const int64_t rank = b.in_rank(0);
  if (padding.size() % 2 != 0 || static_cast<int64_t>(padding.size()) > 2 * rank)
    b.fail("padding has ", padding.size(), " values for an input of ", rank, " dims");
  std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0);
  for (size_t i = 0; i < padding.size() / 2; ++i) {
    const size_t dim = static_cast<size_t>(rank) - 1 - i;
    pads[dim] = padding[2 * i];
    pads[dim + static_cast<size_t>(rank)] = padding[2 * i + 1];
  }
  const std::string mode = b.attr_or<std::string>("mode", "constant");
  std::vector<std::string> inputs = {b.in(0), b.ints(pads)};
  std::string onnx_mode;
  if (mode == "constant") {
    onnx_mode = "constant";
    const Scalar value = b.has_attr("value") ? b.scalar_attr("value") : Scalar(0.0);
    inputs.push_back(b.number(value, b.in_value(0).dtype));
  } else if (mode == "reflect") {
    onnx_mode = "reflect";
  } else if (mode == "replicate") {
    onnx_mode = "edge";
  } else if (mode == "circular") {
    if (b.opset() < 19)
      b.fail("mode \"circular\" is Pad's \"wrap\", which needs opset 19 or later");
    onnx_mode = "wrap";
  } else {
    b.fail("unknown mode \"", mode, "\"");
  }
  set_attr(b.add("Pad", inputs, {b.out()}), "mode", onnx_mode);
}

// The coordinate maps are torch's: "nearest" floors dst / scale (asymmetric, floor);
// "nearest-exact" floors (dst + 0.5) / scale (half_pixel, round_prefer_ceil); linear modes use
// half_pixel (pytorch_half_pixel: torch's rule for an output of size 1) or align_corners.
void interpolate(Builder& b) {
  const std::string mode = b.attr_or<std::string>("mode", "nearest");
  const bool align = b.attr_or<bool>("align_corners", false);
  std::string onnx_mode, coordinates, nearest_mode;
  if (mode == "nearest") {
    onnx_mode = "nearest", coordinates = "asymmetric", nearest_mode = "floor";
  } else if (mode == "nearest-exact") {
    onnx_mode = "nearest", coordinates = "half_pixel", nearest_mode = "round_prefer_ceil";
  } else if (mode == "linear" || mode == "bilinear") {
    onnx_mode = "linear", coordinates = align ? "align_corners" : "pytorch_half_pixel";
  } else {
    b.fail("mode \"", mode, "\" has no ONNX form (Resize has nearest, linear and cubic)");
  }
  const int64_t spatial = b.in_rank(0) - 2;
  if (spatial < 1) b.fail("needs an input of at least 3 dims [N, C, ...]");
  std::string scales, sizes;
  if (b.has_attr("size") && !b.attr<std::vector<int64_t>>("size").empty()) {
    std::vector<int64_t> size = b.attr<std::vector<int64_t>>("size");
    if (size.size() == 1) size.assign(static_cast<size_t>(spatial), size[0]);
    // N and C are read at run time, so the batch may change.
    const std::string nc = b.add1("Slice", {b.add1("Shape", {b.in(0)}), b.ints({0}), b.ints({2})});
    onnx::NodeProto* concat = b.add("Concat", {nc, b.ints(size)}, {});
    set_attr(concat, "axis", 0);
    sizes = concat->output(0);
  } else {
    std::vector<double> factors = b.attr<std::vector<double>>("scale_factor");
    if (factors.size() == 1) factors.assign(static_cast<size_t>(spatial), factors[0]);
    if (static_cast<int64_t>(factors.size()) != spatial)
      b.fail("scale_factor has ", factors.size(), " values for ", spatial, " spatial dims");
    std::vector<float> all = {1.0f, 1.0f};
    for (double f : factors) all.push_back(static_cast<float>(f));
    scales = b.tensor(
        ops::from_data(all.data(), {static_cast<int64_t>(all.size())}, DType::Float32), "scales");
  }
  onnx::NodeProto* n = b.add("Resize", {b.in(0), "", scales, sizes}, {b.out()});
  set_attr(n, "mode", onnx_mode);
  set_attr(n, "coordinate_transformation_mode", coordinates);
  if (!nearest_mode.empty()) set_attr(n, "nearest_mode", nearest_mode);
}

}  // namespace rcuda::io::onnx_export
