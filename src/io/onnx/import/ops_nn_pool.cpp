// ONNX import: MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool (ops_nn.h).
//
// Note [ONNX pools on rcuda's]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// rcuda's pools are torch's: 1-D and 2-D, symmetric padding of at most half the kernel, ceil_mode
// keeping a last window that starts inside the input or its left padding (ONNX's rule too).
// ONNX's pads may be asymmetric or larger. Those cases pad explicitly first (-inf for max, 0 for
// average) and pool the padded tensor without padding; ceil_mode may then keep windows that
// start in the right padding, which ONNX drops, so the output is cut to ONNX's size. An average
// that excludes the padding divides by the average of a padded mask of ones, pooled alike.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "io/onnx/import/ops_nn.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import::nn {
namespace {

struct PoolAttributes {
  Window window;
  bool ceil_mode = false;
  bool count_include_pad = false;  // AveragePool
  int64_t storage_order = 0;       // MaxPool's indices: 0 row-major, 1 column-major
};

PoolAttributes read_pool(NodeReader& node) {
  PoolAttributes p;
  p.window = Window::read(node);
  if (p.window.kernel.empty()) node.fail("attribute 'kernel_shape' is missing");
  const size_t dims = p.window.kernel.size();
  if (dims != 1 && dims != 2)
    node.unsupported(std::to_string(dims) + "-D " + node.op_type() +
                     " (rcuda has 1-D and 2-D pools)");
  p.ceil_mode = node.i("ceil_mode", 0) != 0;
  return p;
}

// The output size of each spatial dim, as ONNX computes it.
std::vector<int64_t> onnx_output_size(const ResolvedWindow& r, const std::vector<int64_t>& in,
                                      bool ceil_mode) {
  std::vector<int64_t> out(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t span = in[d] + r.begin[d] + r.end[d] - ((r.kernel[d] - 1) * r.dilation[d] + 1);
    out[d] = (ceil_mode ? (span + r.stride[d] - 1) / r.stride[d] : span / r.stride[d]) + 1;
    if (span < 0) out[d] = 0;
    if (ceil_mode && (out[d] - 1) * r.stride[d] >= in[d] + r.begin[d]) --out[d];
  }
  return out;
}

// rcuda takes the padding itself: symmetric and at most half the kernel.
bool rcuda_pads(const ResolvedWindow& r) {
  for (size_t d = 0; d < r.begin.size(); ++d)
    if (r.begin[d] != r.end[d] || r.begin[d] > r.kernel[d] / 2) return false;
  return true;
}

Tensor pad_spatial(const Tensor& x, const ResolvedWindow& r, double value) {
  std::vector<int64_t> list;
  for (size_t d = r.begin.size(); d-- > 0;) {
    list.push_back(r.begin[d]);
    list.push_back(r.end[d]);
  }
  return rcuda::pad(x, list, "constant", value);
}

Tensor cut_to(Tensor y, const std::vector<int64_t>& out) {
  for (size_t d = 0; d < out.size(); ++d) {
    const int64_t dim = static_cast<int64_t>(d) + 2;
    if (y.size(dim) != out[d]) y = y.slice(dim, 0, out[d]);
  }
  return y;
}

std::vector<int64_t> spatial_of(const Tensor& x) {
  return std::vector<int64_t>(x.shape().begin() + 2, x.shape().end());
}

void check_rank(const PoolAttributes& p, const Tensor& x) {
  if (x.dim() != static_cast<int64_t>(p.window.kernel.size()) + 2)
    fail_at_run(p.window.where, "input has " + std::to_string(x.dim()) +
                                    " dims; kernel_shape has " +
                                    std::to_string(p.window.kernel.size()) +
                                    " values (expected [N, C] and one dim per kernel value)");
}

// ---- MaxPool --------------------------------------------------------------------------------

struct MaxPoolResult {
  Tensor out, indices;  // indices: rcuda's, within each (n, c) plane of the pooled tensor
};

// With want_indices false, the pools without indices: their backends' fastest kernels (oneDNN
// on the CPU, cuDNN on CUDA) do not make indices.
MaxPoolResult rcuda_max_pool(const Tensor& x, const ResolvedWindow& r, bool padded, bool ceil_mode,
                             bool want_indices) {
  std::vector<int64_t> padding = padded ? r.begin : std::vector<int64_t>(r.begin.size(), 0);
  if (!want_indices) {
    if (r.kernel.size() == 1)
      return {rcuda::max_pool1d(x, r.kernel[0], r.stride[0], padding[0], r.dilation[0], ceil_mode),
              Tensor()};
    return {rcuda::max_pool2d(x, r.kernel, r.stride, padding, r.dilation, ceil_mode), Tensor()};
  }
  if (r.kernel.size() == 1) {
    auto [out, indices] = rcuda::max_pool1d_with_indices(x, r.kernel[0], r.stride[0], padding[0],
                                                         r.dilation[0], ceil_mode);
    return {out, indices};
  }
  auto [out, indices] =
      rcuda::max_pool2d_with_indices(x, r.kernel, r.stride, padding, r.dilation, ceil_mode);
  return {out, indices};
}

// ONNX's indices count over the whole input, [N, C, H, W] (storage_order 1: [N, C, W, H]).
// rcuda's count within the plane that was pooled, which `lead` elements of padding widened.
Tensor onnx_indices(const Tensor& plane_index, const Tensor& x, const std::vector<int64_t>& lead,
                    const std::vector<int64_t>& pooled_plane, int64_t storage_order) {
  const std::vector<int64_t> plane = spatial_of(x);
  int64_t plane_numel = 1;
  for (int64_t s : plane) plane_numel *= s;
  Tensor index;
  if (plane.size() == 1) {
    index = rcuda::sub(plane_index, Scalar(lead[0]));
  } else {
    const Scalar width(pooled_plane[1]);
    const Tensor h = rcuda::sub(rcuda::floor_divide(plane_index, width), Scalar(lead[0]));
    const Tensor w = rcuda::sub(rcuda::remainder(plane_index, width), Scalar(lead[1]));
    index = storage_order == 0 ? rcuda::add(rcuda::mul(h, Scalar(plane[1])), w)
                               : rcuda::add(rcuda::mul(w, Scalar(plane[0])), h);
  }
  const int64_t planes = x.size(0) * x.size(1);
  Shape base_shape = {x.size(0), x.size(1)};
  base_shape.resize(static_cast<size_t>(x.dim()), 1);
  const Tensor base = rcuda::arange(Scalar(int64_t{0}), Scalar(planes * plane_numel),
                                    Scalar(plane_numel), DType::Int64, index.device())
                          .view(base_shape);
  return rcuda::add(index, base);
}

Kernel make_max_pool_impl(NodeReader& node) {
  PoolAttributes p = read_pool(node);
  p.storage_order = node.i("storage_order", 0);
  if (p.storage_order != 0 && p.storage_order != 1)
    node.fail("storage_order must be 0 or 1, got " + std::to_string(p.storage_order));
  const bool want_indices = node.has_output(1);
  return [p, want_indices](const std::vector<Tensor>& in, const RunContext&) {
    Tensor x = in[0];
    check_rank(p, x);
    const DType dtype = x.dtype();
    // 8-bit integers pool exactly as float32 (MaxPool-12 takes int8 and uint8).
    const bool integer = !is_floating(dtype);
    if (integer) x = rcuda::to(x, DType::Float32);
    const std::vector<int64_t> sizes = spatial_of(x);
    const ResolvedWindow r = p.window.resolve(sizes, p.window.kernel);
    const std::vector<int64_t> out = onnx_output_size(r, sizes, p.ceil_mode);
    const bool direct = rcuda_pads(r);
    const Tensor pooled_input =
        direct ? x : pad_spatial(x, r, -std::numeric_limits<double>::infinity());
    MaxPoolResult m = rcuda_max_pool(pooled_input, r, direct, p.ceil_mode, want_indices);
    Tensor y = cut_to(m.out, out);
    if (integer) y = rcuda::to(y, dtype);
    if (!want_indices) return std::vector<Tensor>{y, Tensor()};
    const std::vector<int64_t> lead = direct ? std::vector<int64_t>(sizes.size(), 0) : r.begin;
    return std::vector<Tensor>{y, onnx_indices(cut_to(m.indices, out), x, lead,
                                               spatial_of(pooled_input), p.storage_order)};
  };
}

// ---- AveragePool ----------------------------------------------------------------------------

Tensor rcuda_avg_pool(const Tensor& x, const ResolvedWindow& r, bool padded, bool ceil_mode,
                      bool count_include_pad) {
  std::vector<int64_t> padding = padded ? r.begin : std::vector<int64_t>(r.begin.size(), 0);
  if (r.kernel.size() == 1)
    return rcuda::avg_pool1d(x, r.kernel[0], r.stride[0], padding[0], ceil_mode, count_include_pad);
  return rcuda::avg_pool2d(x, r.kernel, r.stride, padding, ceil_mode, count_include_pad);
}

Kernel make_average_pool_impl(NodeReader& node) {
  PoolAttributes p = read_pool(node);
  p.count_include_pad = node.i("count_include_pad", 0) != 0;
  for (int64_t d : p.window.dilations)
    if (d != 1)
      node.unsupported("AveragePool with dilations other than 1 (rcuda's average pools have none)");
  return [p](const std::vector<Tensor>& in, const RunContext&) {
    const Tensor& x = in[0];
    check_rank(p, x);
    const std::vector<int64_t> sizes = spatial_of(x);
    const ResolvedWindow r = p.window.resolve(sizes, p.window.kernel);
    const std::vector<int64_t> out = onnx_output_size(r, sizes, p.ceil_mode);
    if (rcuda_pads(r))
      return std::vector<Tensor>{
          cut_to(rcuda_avg_pool(x, r, true, p.ceil_mode, p.count_include_pad), out)};
    // Note [ONNX pools on rcuda's]: the padded zeros count, and are taken out again by the mask.
    Tensor y = cut_to(rcuda_avg_pool(pad_spatial(x, r, 0.0), r, false, p.ceil_mode, true), out);
    if (!p.count_include_pad) {
      Shape mask_shape = {1, 1};
      mask_shape.insert(mask_shape.end(), sizes.begin(), sizes.end());
      const Tensor mask = rcuda::ones(mask_shape, TensorOptions(x.dtype(), x.device()));
      y = rcuda::div(
          y, cut_to(rcuda_avg_pool(pad_spatial(mask, r, 0.0), r, false, p.ceil_mode, true), out));
    }
    return std::vector<Tensor>{y};
  };
}

Shape global_shape(const Tensor& x) {
  Shape shape = {x.size(0), x.size(1)};
  shape.resize(static_cast<size_t>(x.dim()), 1);
  return shape;
}

}  // namespace

Kernel make_max_pool(NodeReader& node) { return make_max_pool_impl(node); }
Kernel make_average_pool(NodeReader& node) { return make_average_pool_impl(node); }

// 4-D inputs take adaptive pooling to 1 x 1, the call rcuda's export wrote GlobalAveragePool
// and GlobalMaxPool from; other ranks reduce over the spatial dims.
Kernel make_global_average_pool(NodeReader&) {
  return [](const std::vector<Tensor>& in, const RunContext&) {
    const Tensor& x = in[0];
    if (x.dim() == 4) return std::vector<Tensor>{rcuda::adaptive_avg_pool2d(x, {1, 1})};
    Dims dims;
    for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
    return std::vector<Tensor>{rcuda::mean(x, dims, true)};
  };
}

Kernel make_global_max_pool(NodeReader&) {
  return [](const std::vector<Tensor>& in, const RunContext&) {
    const Tensor& x = in[0];
    if (x.dim() == 4) return std::vector<Tensor>{rcuda::adaptive_max_pool2d(x, {1, 1}).first};
    const Tensor values = rcuda::max(rcuda::flatten(x, 2), -1, true).first;
    return std::vector<Tensor>{rcuda::reshape(values, global_shape(x))};
  };
}

}  // namespace rcuda::io::onnx_import::nn
