// pad's front end (rcuda/ops/resample.h): torch.nn.functional.pad's checks, the output's shape
// and memory format. Constant padding is a fill and one strided copy (the backward is constant
// padding of the gradient by the negated amounts); the other modes call Backend::pad on the
// [N, C, D, H, W] form of the tensors.
#include <algorithm>
#include <string>

#include "layer_layout.h"
#include "ops_util.h"
#include "rcuda/ops/resample.h"

namespace rcuda::ops {
namespace {

constexpr const char* kOp = "pad";

bool parse_mode(const std::string& mode, PadMode& out) {
  if (mode == "reflect")
    out = PadMode::Reflect;
  else if (mode == "replicate")
    out = PadMode::Replicate;
  else if (mode == "circular")
    out = PadMode::Circular;
  else
    return false;
  return true;
}

// The tensor dim that padding pair j (0: the last dim) applies to.
int64_t padded_dim(const Shape& shape, size_t j) {
  return static_cast<int64_t>(shape.size()) - 1 - static_cast<int64_t>(j);
}

void check_modes_shape(const PadPlan& p, const Shape& shape) {
  const size_t k = p.padding.size() / 2;  // spatial dims padded
  const size_t rank = shape.size();
  RCUDA_CHECK(k >= 1 && k <= 3, ValueError, kOp, ": mode '", p.mode,
              "' pads the last 1, 2 or 3 dims (2, 4 or 6 padding values), got ", p.padding.size(),
              " values ", shape_str(p.padding));
  static const char* kForms[] = {"(C, L) or (N, C, L)", "(C, H, W) or (N, C, H, W)",
                                 "(C, D, H, W) or (N, C, D, H, W)"};
  RCUDA_CHECK(rank == k + 1 || rank == k + 2, ShapeError, kOp, ": mode '", p.mode, "' with ",
              p.padding.size(), " padding values expects a ", k + 1, "-D or ", k + 2, "-D ",
              kForms[k - 1], " input, got shape ", shape_str(shape));
  for (size_t d = rank == k + 2 ? 1 : 0; d < rank; ++d)
    RCUDA_CHECK(shape[d] > 0, ShapeError, kOp, ": mode '", p.mode,
                "' expects non-zero sizes but for the batch dim, got shape ", shape_str(shape));
  for (size_t j = 0; j < k; ++j) {
    const int64_t dim = padded_dim(shape, j), size = shape[static_cast<size_t>(dim)];
    const int64_t before = p.padding[2 * j], after = p.padding[2 * j + 1];
    if (p.args.mode == PadMode::Reflect)
      RCUDA_CHECK(before < size && after < size, ValueError, kOp,
                  ": reflect padding must be less than the size of the dim it pads, got padding (",
                  before, ", ", after, ") for dim ", dim, " of size ", size, " (input shape ",
                  shape_str(shape), ")");
    if (p.args.mode == PadMode::Circular) {
      // Negative padding crops first; the rest wraps around what is left (PyTorch's order).
      const int64_t kept = size - std::max<int64_t>(-before, 0) - std::max<int64_t>(-after, 0);
      RCUDA_CHECK(kept >= 1 && before <= kept && after <= kept, ValueError, kOp,
                  ": circular padding must be at most the size of the dim it pads (after "
                  "cropping by its negative part; it would wrap around more than once), got "
                  "padding (",
                  before, ", ", after, ") for dim ", dim, " of size ", size, " (input shape ",
                  shape_str(shape), ")");
    }
  }
}

// Views of t of `shape` (the plan's input or output shape) as [N, C, D, H, W].
Tensor as_five_d(const Tensor& t, size_t spatial) {
  Tensor r = t;
  if (t.dim() == static_cast<int64_t>(spatial) + 1) r = r.unsqueeze(0);
  while (r.dim() < 5) r = r.unsqueeze(2);
  return r;
}

// The [N, C, D, H, W] view the primitive reads (or, backward, writes): circular padding's crops
// taken off.
Tensor primitive_view(const Tensor& t, const PadPlan& p) {
  Tensor r = as_five_d(t, p.padding.size() / 2);
  for (int k = 0; k < 3; ++k)
    if (p.crop_before[k] > 0 || p.crop_after[k] > 0)
      r = r.narrow(k + 2, p.crop_before[k], r.shape()[k + 2] - p.crop_before[k] - p.crop_after[k]);
  return r;
}

bool crops(const PadPlan& p) {
  for (int k = 0; k < 3; ++k)
    if (p.crop_before[k] > 0 || p.crop_after[k] > 0) return true;
  return false;
}

// x padded by `padding` with `value` (constant mode; negative amounts crop), in the format.
Tensor constant_pad(const Tensor& x, const std::vector<int64_t>& padding, double value,
                    const Shape& out_shape, bool channels_last) {
  const Tensor out = empty_in_format(out_shape, x.dtype(), x.device(), channels_last);
  if (out.numel() == 0) return out;
  Tensor src = x, dst = out;
  bool grows = false;
  for (size_t j = 0; j < padding.size() / 2; ++j) {
    const int64_t dim = padded_dim(x.shape(), j);
    const int64_t before = padding[2 * j], after = padding[2 * j + 1];
    const int64_t length = x.shape()[static_cast<size_t>(dim)] + std::min<int64_t>(before, 0) +
                           std::min<int64_t>(after, 0);
    grows = grows || before > 0 || after > 0;
    if (length <= 0) {  // all of this dim is padding
      src = Tensor();
      break;
    }
    src = src.narrow(dim, std::max<int64_t>(-before, 0), length);
    dst = dst.narrow(dim, std::max<int64_t>(before, 0), length);
  }
  if (grows || !src.defined()) backend_of(x).fill(out, Scalar(value));
  if (src.defined() && src.numel() > 0) backend_of(x).copy(dst, src);
  return out;
}

}  // namespace

PadPlan pad_plan(const Tensor& x, const std::vector<int64_t>& padding, const std::string& mode,
                 std::optional<double> value) {
  check_not_float8(kOp, x);
  PadPlan p;
  p.mode = mode;
  p.padding = padding;
  p.input_shape = x.shape();
  p.constant = mode == "constant";
  RCUDA_CHECK(p.constant || parse_mode(mode, p.args.mode), ValueError, kOp,
              ": mode must be 'constant', 'reflect', 'replicate' or 'circular', got '", mode, "'");
  RCUDA_CHECK(padding.size() % 2 == 0, ValueError, kOp,
              ": padding must hold (before, after) pairs, an even count, got ", padding.size(),
              " values ", shape_str(padding));
  RCUDA_CHECK(padding.size() <= 2 * x.shape().size(), ValueError, kOp,
              ": padding may have at most two values per input dim, got ", padding.size(),
              " values ", shape_str(padding), " for a ", x.dim(), "-D input of shape ",
              shape_str(x.shape()));
  if (p.constant) {
    p.value = value.value_or(0.0);
  } else {
    RCUDA_CHECK(!value || *value == 0, ValueError, kOp, ": mode '", mode,
                "' takes no value (only 'constant' fills with one), got ", *value);
    check_modes_shape(p, x.shape());
  }
  p.output_shape = x.shape();
  for (size_t j = 0; j < padding.size() / 2; ++j) {
    const int64_t dim = padded_dim(x.shape(), j);
    const int64_t size = x.shape()[static_cast<size_t>(dim)];
    const int64_t out = size + padding[2 * j] + padding[2 * j + 1];
    RCUDA_CHECK(out >= (p.constant ? 0 : 1), ShapeError, kOp, ": padding (", padding[2 * j], ", ",
                padding[2 * j + 1], ") of dim ", dim, " of size ", size,
                " gives an output size of ", out, p.constant ? ", below 0" : ", below 1",
                " (input shape ", shape_str(x.shape()), ")");
    p.output_shape[static_cast<size_t>(dim)] = out;
    if (!p.constant) {
      const size_t k = 2 - j;  // (D, H, W) slot of the primitive's arguments
      p.args.before[k] = padding[2 * j];
      p.args.after[k] = padding[2 * j + 1];
      if (p.args.mode == PadMode::Circular) {  // the crop is a view of the input
        p.crop_before[k] = std::max<int64_t>(-p.args.before[k], 0);
        p.crop_after[k] = std::max<int64_t>(-p.args.after[k], 0);
        p.args.before[k] += p.crop_before[k];
        p.args.after[k] += p.crop_after[k];
      }
    }
  }
  p.channels_last = x.dim() == 4 && (p.constant || padding.size() == 4) && is_channels_last(x);
  p.args.channels_last = p.channels_last;
  return p;
}

Tensor pad_forward(const Tensor& x, const PadPlan& p) {
  RCUDA_CHECK(x.shape() == p.input_shape, InternalError, kOp, ": planned for shape ",
              shape_str(p.input_shape), ", called with ", shape_str(x.shape()));
  if (p.constant) return constant_pad(x, p.padding, p.value, p.output_shape, p.channels_last);
  const Tensor out = empty_in_format(p.output_shape, x.dtype(), x.device(), p.channels_last);
  if (out.numel() == 0) return out;  // an empty batch
  backend_of(x).pad(p.args, as_five_d(out, p.padding.size() / 2), primitive_view(x, p));
  return out;
}

Tensor pad_backward(const Tensor& grad_out, const PadPlan& p) {
  const std::string op = std::string(kOp) + "_backward";
  check_floating(op.c_str(), "grad_output", grad_out);
  RCUDA_CHECK(grad_out.shape() == p.output_shape, ShapeError, op, ": grad_output has shape ",
              shape_str(grad_out.shape()), ", expected the output's ", shape_str(p.output_shape));
  if (p.constant) {
    std::vector<int64_t> negated(p.padding.size());
    for (size_t i = 0; i < negated.size(); ++i) negated[i] = -p.padding[i];
    return constant_pad(grad_out, negated, 0.0, p.input_shape, p.channels_last);
  }
  const Tensor grad_in =
      empty_in_format(p.input_shape, grad_out.dtype(), grad_out.device(), p.channels_last);
  if (grad_in.numel() == 0) return grad_in;
  if (crops(p)) backend_of(grad_out).fill(grad_in, Scalar(0.0));  // the cropped elements
  backend_of(grad_out).pad_backward(p.args, primitive_view(grad_in, p),
                                    as_five_d(grad_out, p.padding.size() / 2));
  return grad_in;
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& padding, const std::string& mode,
           std::optional<double> value) {
  return pad_forward(x, pad_plan(x, padding, mode, value));
}

}  // namespace rcuda::ops
