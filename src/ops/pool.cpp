// Pooling front ends (rcuda/ops/pool.h): argument checks with torch's rules, output sizes, the
// memory format (Note [Channels-last layers]), and the 4-D form the primitives take: a 1-D pool
// is a 2-D pool of height 1, a batch-less input a batch of one.
#include "rcuda/ops/pool.h"

#include <string>

#include "layer_layout.h"
#include "ops_util.h"

namespace rcuda::ops {
namespace {

const char* spatial_name(int spatial_dims, size_t i) {
  if (spatial_dims == 1) return "length";
  return i == 0 ? "height" : "width";
}

// One value for every spatial dim, or one per dim.
std::vector<int64_t> per_dim(const char* op, const char* arg, const std::vector<int64_t>& v,
                             int spatial_dims) {
  RCUDA_CHECK(v.size() == 1 || static_cast<int>(v.size()) == spatial_dims, ValueError, op, ": ",
              arg, " must have 1 or ", spatial_dims, " values, got ", v.size(), " ", shape_str(v));
  return v.size() == 1 ? std::vector<int64_t>(static_cast<size_t>(spatial_dims), v[0]) : v;
}

void check_all(const char* op, const char* arg, const std::vector<int64_t>& v, int64_t minimum) {
  for (int64_t x : v)
    RCUDA_CHECK(x >= minimum, ValueError, op, ": ", arg, " must be ",
                minimum == 0 ? "non-negative" : "greater than zero", ", got ", shape_str(v));
}

void fill_window(PoolOptions& o, const std::vector<int64_t>& kernel_size,
                 const std::vector<int64_t>& stride, const std::vector<int64_t>& padding) {
  o.kernel = per_dim(o.name, "kernel_size", kernel_size, o.spatial_dims);
  check_all(o.name, "kernel_size", o.kernel, 1);
  o.stride = stride.empty() ? o.kernel : per_dim(o.name, "stride", stride, o.spatial_dims);
  check_all(o.name, "stride", o.stride, 1);
  o.padding = per_dim(o.name, "padding", padding, o.spatial_dims);
  check_all(o.name, "padding", o.padding, 0);
  for (size_t i = 0; i < o.kernel.size(); ++i)
    RCUDA_CHECK(o.padding[i] <= o.kernel[i] / 2, ValueError, o.name,
                ": padding should be at most half of kernel_size, got padding ",
                shape_str(o.padding), " for kernel_size ", shape_str(o.kernel));
}

void check_spatial_dims(int spatial_dims, const char* op) {
  RCUDA_CHECK(spatial_dims == 1 || spatial_dims == 2, InternalError, op,
              ": pools have 1 or 2 spatial dims, got ", spatial_dims);
}

// The 4-D [N, C, H, W] shape of a pool input or output of `shape` (validated), and the dims
// of that 4-D form the user's shape lacks.
struct FourD {
  Shape shape;
  std::vector<int64_t> missing;
};

FourD four_d(const Shape& shape, int spatial_dims) {
  const bool batched = static_cast<int>(shape.size()) == spatial_dims + 2;
  FourD f;
  f.shape = {batched ? shape[0] : 1, shape[batched ? 1 : 0],
             spatial_dims == 2 ? shape[shape.size() - 2] : 1, shape.back()};
  if (!batched) f.missing.push_back(0);
  if (spatial_dims == 1) f.missing.push_back(2);
  return f;
}

Tensor as_four_d(const Tensor& t, const FourD& f) {
  Tensor r = t;
  for (int64_t d : f.missing) r = r.unsqueeze(d);
  return r;
}

PoolArgs primitive_args(const PoolOptions& o, bool channels_last) {
  PoolArgs a;
  a.op = o.op;
  a.adaptive = o.adaptive;
  a.count_include_pad = o.count_include_pad;
  a.divisor_override = o.divisor_override;
  a.channels_last = channels_last;
  if (o.adaptive) return a;
  const size_t w = o.kernel.size() - 1;  // the last spatial dim; a 1-D pool has height 1
  a.kernel_w = o.kernel[w];
  a.stride_w = o.stride[w];
  a.pad_w = o.padding[w];
  a.dilation_w = o.dilation[w];
  if (o.spatial_dims == 2) {
    a.kernel_h = o.kernel[0];
    a.stride_h = o.stride[0];
    a.pad_h = o.padding[0];
    a.dilation_h = o.dilation[0];
  }
  return a;
}

Shape output_shape(const PoolOptions& o, const Shape& input_shape) {
  const std::vector<int64_t> spatial = pool_output_size(o, input_shape);
  Shape s = input_shape;
  for (size_t i = 0; i < spatial.size(); ++i) s[s.size() - spatial.size() + i] = spatial[i];
  return s;
}

void check_input(const PoolOptions& o, const Tensor& x) {
  check_not_float8(o.name, x);
  check_floating(o.name, "input", x);
}

}  // namespace

PoolOptions max_pool_options(int spatial_dims, const std::vector<int64_t>& kernel_size,
                             const std::vector<int64_t>& stride,
                             const std::vector<int64_t>& padding,
                             const std::vector<int64_t>& dilation, bool ceil_mode) {
  PoolOptions o;
  o.name = spatial_dims == 1 ? "max_pool1d" : "max_pool2d";
  check_spatial_dims(spatial_dims, o.name);
  o.spatial_dims = spatial_dims;
  o.op = PoolOp::Max;
  fill_window(o, kernel_size, stride, padding);
  o.dilation = per_dim(o.name, "dilation", dilation, spatial_dims);
  check_all(o.name, "dilation", o.dilation, 1);
  o.ceil_mode = ceil_mode;
  return o;
}

PoolOptions avg_pool_options(int spatial_dims, const std::vector<int64_t>& kernel_size,
                             const std::vector<int64_t>& stride,
                             const std::vector<int64_t>& padding, bool ceil_mode,
                             bool count_include_pad, std::optional<int64_t> divisor_override) {
  PoolOptions o;
  o.name = spatial_dims == 1 ? "avg_pool1d" : "avg_pool2d";
  check_spatial_dims(spatial_dims, o.name);
  o.spatial_dims = spatial_dims;
  o.op = PoolOp::Avg;
  fill_window(o, kernel_size, stride, padding);
  o.dilation.assign(static_cast<size_t>(spatial_dims), 1);
  o.ceil_mode = ceil_mode;
  o.count_include_pad = count_include_pad;
  if (divisor_override) {
    RCUDA_CHECK(*divisor_override != 0, ValueError, o.name, ": divisor_override must not be zero");
    o.divisor_override = *divisor_override;
  }
  return o;
}

PoolOptions adaptive_pool_options(PoolOp op, const std::vector<int64_t>& output_size) {
  PoolOptions o;
  o.name = op == PoolOp::Max ? "adaptive_max_pool2d" : "adaptive_avg_pool2d";
  o.op = op;
  o.adaptive = true;
  o.output_size = per_dim(o.name, "output_size", output_size, 2);
  check_all(o.name, "output_size", o.output_size, 1);
  return o;
}

std::vector<int64_t> pool_output_size(const PoolOptions& o, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  bool ok = rank == o.spatial_dims + 1 || rank == o.spatial_dims + 2;
  for (int64_t d = rank == o.spatial_dims + 2 ? 1 : 0; ok && d < rank; ++d) ok = shape[d] > 0;
  RCUDA_CHECK(ok, ShapeError, o.name, ": expected a ", o.spatial_dims + 1, "-D ",
              o.spatial_dims == 2 ? "(C, H, W)" : "(C, L)", " or ", o.spatial_dims + 2, "-D ",
              o.spatial_dims == 2 ? "(N, C, H, W)" : "(N, C, L)",
              " input with non-zero sizes but for N, got shape ", shape_str(shape));
  if (o.adaptive) return o.output_size;
  std::vector<int64_t> out(static_cast<size_t>(o.spatial_dims));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t in = shape[shape.size() - out.size() + i];
    const int64_t k = o.kernel[i], s = o.stride[i], p = o.padding[i], d = o.dilation[i];
    const int64_t extent = d * (k - 1) + 1;
    RCUDA_CHECK(extent <= in + 2 * p, ShapeError, o.name, ": kernel_size ", k,
                d > 1 ? " dilated to " + std::to_string(extent) : std::string(),
                " is larger than the padded input ", spatial_name(o.spatial_dims, i), " ", in,
                " + 2 * ", p, " (input shape ", shape_str(shape), ")");
    int64_t size = (in + 2 * p - extent + (o.ceil_mode ? s - 1 : 0)) / s + 1;
    // ceil_mode: the last window must start inside the input or its left padding (as torch).
    if (o.ceil_mode && (size - 1) * s >= in + p) --size;
    RCUDA_CHECK(size >= 1, ShapeError, o.name, ": input shape ", shape_str(shape),
                " gives an output ", spatial_name(o.spatial_dims, i), " of ", size,
                ", too small (at least 1)");
    out[i] = size;
  }
  return out;
}

PoolForward pool_forward(const Tensor& x, const PoolOptions& o, bool with_indices) {
  check_input(o, x);
  const Shape out_shape = output_shape(o, x.shape());
  const FourD in4 = four_d(x.shape(), o.spatial_dims), out4 = four_d(out_shape, o.spatial_dims);
  const Tensor x4 = as_four_d(x, in4);
  PoolForward r;
  r.channels_last = is_channels_last(x4);
  const Tensor out = empty_in_format(out4.shape, x.dtype(), x.device(), r.channels_last);
  r.out = without_unit_dims(out, out4.missing);
  Tensor indices;
  if (with_indices && o.op == PoolOp::Max) {
    indices = empty_in_format(out4.shape, DType::Int64, x.device(), r.channels_last);
    r.indices = without_unit_dims(indices, out4.missing);
  }
  if (out.numel() == 0) return r;  // an empty batch
  backend_of(x).pool2d(primitive_args(o, r.channels_last), out, indices,
                       in_format(x4, r.channels_last));
  return r;
}

Tensor pool_backward(const Tensor& grad_out, const Shape& input_shape, bool channels_last,
                     const Tensor& indices, const PoolOptions& o) {
  const std::string op = std::string(o.name) + "_backward";
  check_not_float8(op.c_str(), grad_out);
  check_floating(op.c_str(), "grad_output", grad_out);
  const Shape out_shape = output_shape(o, input_shape);
  RCUDA_CHECK(grad_out.shape() == out_shape, ShapeError, op, ": grad_output has shape ",
              shape_str(grad_out.shape()), ", expected the output's ", shape_str(out_shape));
  const FourD in4 = four_d(input_shape, o.spatial_dims), out4 = four_d(out_shape, o.spatial_dims);
  Tensor idx4;
  if (o.op == PoolOp::Max) {
    RCUDA_CHECK(
        indices.defined() && indices.dtype() == DType::Int64 && indices.shape() == out_shape,
        ShapeError, op, ": indices must be the forward's int64 indices of shape ",
        shape_str(out_shape));
    check_same_device(op.c_str(), {grad_out, indices});
    idx4 = in_format(as_four_d(indices, out4), channels_last);
  }
  const Tensor grad_in =
      empty_in_format(in4.shape, grad_out.dtype(), grad_out.device(), channels_last);
  if (grad_in.numel() == 0) return without_unit_dims(grad_in, in4.missing);
  backend_of(grad_out).pool2d_backward(primitive_args(o, channels_last), grad_in,
                                       in_format(as_four_d(grad_out, out4), channels_last), idx4);
  return without_unit_dims(grad_in, in4.missing);
}

PoolWithIndices max_pool2d_with_indices(const Tensor& x, const std::vector<int64_t>& kernel_size,
                                        const std::vector<int64_t>& stride,
                                        const std::vector<int64_t>& padding,
                                        const std::vector<int64_t>& dilation, bool ceil_mode) {
  const PoolForward f =
      pool_forward(x, max_pool_options(2, kernel_size, stride, padding, dilation, ceil_mode), true);
  return {f.out, f.indices};
}

Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  const std::vector<int64_t>& dilation, bool ceil_mode) {
  return pool_forward(x, max_pool_options(2, kernel_size, stride, padding, dilation, ceil_mode),
                      false)
      .out;
}

namespace {
std::vector<int64_t> optional_stride(std::optional<int64_t> stride) {
  return stride ? std::vector<int64_t>{*stride} : std::vector<int64_t>{};
}
}  // namespace

PoolWithIndices max_pool1d_with_indices(const Tensor& x, int64_t kernel_size,
                                        std::optional<int64_t> stride, int64_t padding,
                                        int64_t dilation, bool ceil_mode) {
  const PoolForward f = pool_forward(
      x,
      max_pool_options(1, {kernel_size}, optional_stride(stride), {padding}, {dilation}, ceil_mode),
      true);
  return {f.out, f.indices};
}

Tensor max_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, int64_t dilation, bool ceil_mode) {
  return pool_forward(x,
                      max_pool_options(1, {kernel_size}, optional_stride(stride), {padding},
                                       {dilation}, ceil_mode),
                      false)
      .out;
}

Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  return pool_forward(x,
                      avg_pool_options(2, kernel_size, stride, padding, ceil_mode,
                                       count_include_pad, divisor_override),
                      false)
      .out;
}

Tensor avg_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                  int64_t padding, bool ceil_mode, bool count_include_pad) {
  return pool_forward(x,
                      avg_pool_options(1, {kernel_size}, optional_stride(stride), {padding},
                                       ceil_mode, count_include_pad, std::nullopt),
                      false)
      .out;
}

Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size) {
  return pool_forward(x, adaptive_pool_options(PoolOp::Avg, output_size), false).out;
}

PoolWithIndices adaptive_max_pool2d(const Tensor& x, const std::vector<int64_t>& output_size) {
  const PoolForward f = pool_forward(x, adaptive_pool_options(PoolOp::Max, output_size), true);
  return {f.out, f.indices};
}

}  // namespace rcuda::ops
