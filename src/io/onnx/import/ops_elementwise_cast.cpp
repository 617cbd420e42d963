// ONNX import: Cast, CastLike and Dropout (ops_elementwise.h).
#include <limits>
#include <optional>
#include <string>

#include "io/onnx/import/ops_elementwise.h"
#include "rcuda/autograd/api.h"
#include "rcuda/nn/layers.h"

namespace rcuda::io::onnx_import {
namespace {

// ---- Cast ----------------------------------------------------------------------------------

// Note [Casts to float8]
// rcuda's conversions give ONNX's results for every dtype it has, save for float8 overflow:
// to e4m3fn, values past 448 saturate to ±448 (ONNX's saturate = 1, its default), and to e5m2
// they round to infinity (ONNX's saturate = 0). So e5m2 with saturate clamps first, to ±57344
// (infinities included, as ONNX's table says), and e4m3fn without saturate first turns into NaN
// what would round past 448: magnitudes above 464, the midpoint to the next step (480, which is
// NaN's pattern), where rounding to even gives 448. saturate means nothing for other targets.
constexpr double kFloat8E5M2Max = 57344.0;
constexpr double kFloat8E4M3FNRoundsToMax = 464.0;

Tensor cast_to(const Tensor& x, DType dtype, bool saturate) {
  if (x.dtype() == dtype) return x;
  const bool from_number = !is_float8(x.dtype()) && x.dtype() != DType::Bool;
  if (dtype == DType::Float8E5M2 && saturate && from_number)
    return to(clamp(x, Scalar(-kFloat8E5M2Max), Scalar(kFloat8E5M2Max)), dtype);
  if (dtype == DType::Float8E4M3FN && !saturate && from_number) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return to(where(gt(abs(x), kFloat8E4M3FNRoundsToMax), Scalar(nan), x), dtype);
  }
  return to(x, dtype);
}

// The attribute `to`: an INT (TensorProto's DataType) or, in version 1, the type's name.
int32_t cast_target(NodeReader& node) {
  for (const onnx::AttributeProto& a : node.proto().attribute()) {
    if (a.name() != "to" || a.type() != onnx::AttributeProto::STRING) continue;
    onnx::TensorProto_DataType type;
    if (!onnx::TensorProto_DataType_Parse(a.s(), &type))
      node.fail("attribute to names no ONNX type: \"" + a.s() + "\"");
    return type;
  }
  return static_cast<int32_t>(node.i("to"));
}

bool read_saturate(NodeReader& node) {
  const int64_t saturate = node.version() >= 19 ? node.i("saturate", 1) : 1;
  if (saturate != 0 && saturate != 1)
    node.fail("attribute saturate must be 0 or 1, got " + std::to_string(saturate));
  return saturate == 1;
}

Kernel make_cast(NodeReader& node) {
  const int32_t target = cast_target(node);
  const DType dtype = dtype_from_onnx(target, node.where() + ": attribute to");
  const bool saturate = read_saturate(node);
  return
      [dtype, saturate](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
        return {cast_to(in[0], dtype, saturate)};
      };
}

Kernel make_cast_like(NodeReader& node) {
  const bool saturate = read_saturate(node);
  return [saturate](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    return {cast_to(in[0], in[1].dtype(), saturate)};
  };
}

// ---- Dropout -------------------------------------------------------------------------------

// The outputs of a dropout that drops nothing: x itself and, when asked for, an all-true mask.
std::vector<Tensor> keep_all(const Tensor& x, size_t num_outputs, bool want_mask) {
  std::vector<Tensor> out(num_outputs);
  out[0] = x;
  if (want_mask) out[1] = ones(x.shape(), TensorOptions(DType::Bool, x.device()));
  return out;
}

// x * mask / (1 - ratio) with a random mask from rcuda's default generator (so a seed set with
// rcuda's manual_seed repeats it). nn::dropout when the mask is not an output; otherwise the mask
// is drawn alone and applied with recording ops, so that the output still differentiates.
std::vector<Tensor> drop(const Tensor& x, double ratio, size_t num_outputs, bool want_mask) {
  if (!(ratio >= 0 && ratio < 1))
    throw ValueError("ratio must be in [0, 1), got " + std::to_string(ratio));
  if (ratio == 0) return keep_all(x, num_outputs, want_mask);
  std::vector<Tensor> out(num_outputs);
  if (!want_mask) {
    out[0] = nn::dropout(x, ratio, /*training=*/true);
    return out;
  }
  const Tensor mask = ops::dropout(x, ratio, /*training=*/true).second;
  out[0] = mul(mul(x, mask), 1.0 / (1.0 - ratio));
  out[1] = mask;
  return out;
}

// Versions 1 and 6 drop at random unless is_test is 1; 7 and 10 only ever pass x through
// (their ratio is for training elsewhere).
Kernel make_dropout_attributes(NodeReader& node) {
  const bool training = node.version() < 7 && node.i("is_test", 0) == 0;
  const double ratio = node.f("ratio", 0.5);
  const size_t num_outputs = node.num_outputs();
  const bool want_mask = node.has_output(1);
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    return training ? drop(in[0], ratio, num_outputs, want_mask)
                    : keep_all(in[0], num_outputs, want_mask);
  };
}

// From version 12, inputs ratio (default 0.5) and training_mode (default false), read on the
// host. A seed asks for ONNX's own random stream, which rcuda's generator cannot repeat: with
// training on and a ratio above 0 such a node is refused rather than run with another mask.
Kernel make_dropout(NodeReader& node) {
  if (node.version() < 12) return make_dropout_attributes(node);
  if (node.has_input(1)) node.host_input(1);
  if (node.has_input(2)) node.host_input(2);
  const bool has_seed = node.has("seed");
  const Tensor* training_constant = node.has_input(2) ? node.constant_input(2) : nullptr;
  if (has_seed && training_constant != nullptr &&
      host_scalar(*training_constant, "input training_mode") != 0) {
    const Tensor* ratio_constant = node.has_input(1) ? node.constant_input(1) : nullptr;
    if (ratio_constant == nullptr || host_scalar(*ratio_constant, "input ratio") != 0)
      node.unsupported("Dropout in training mode with attribute seed");
  }
  const size_t num_outputs = node.num_outputs();
  const bool want_mask = node.has_output(1);
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const bool training =
        in.size() > 2 && in[2].defined() && host_scalar(in[2], "input training_mode") != 0;
    if (!training) return keep_all(in[0], num_outputs, want_mask);
    const double ratio = in.size() > 1 && in[1].defined() ? host_scalar(in[1], "input ratio") : 0.5;
    if (has_seed && ratio != 0)
      throw ValueError(
          "Dropout in training mode with attribute seed is not supported by rcuda's ONNX import "
          "(rcuda's generator cannot repeat ONNX's random mask)");
    return drop(in[0], ratio, num_outputs, want_mask);
  };
}

}  // namespace

std::vector<ImportOp> elementwise_cast_ops() {
  return {
      {"Cast", make_cast},
      {"CastLike", make_cast_like, 15},
      {"Dropout", make_dropout},
  };
}

}  // namespace rcuda::io::onnx_import
