// fp8_linear (rcuda/nn/fp8_linear.h): one node whose forward is two casts and one scaled product,
// and whose backward is one cast and two scaled products.
//
// Note [Delayed scaling]
// ~~~~~~~~~~~~~~~~~~~~~~
// A float8 value has 2 or 3 mantissa bits and a narrow range (e4m3fn: +-448; e5m2: +-57344), so
// each tensor is multiplied by a scale before the cast and the product is divided by both scales
// after (scaled_mm's scale_a and scale_b are the inverses). Computing the scale from the tensor
// itself would need its amax before the cast: a second pass, or a host read. Delayed scaling, as
// Transformer Engine's DelayedScaling recipe, takes it from history instead: every cast raises
// the current column of its row of amax_history [3, H] (input, weight, grad_output) on the
// device, and each forward starts with one launch that sets scale = fp8_max / max(row) / 2^margin
// per row and rolls the rows (so the step's own amax joins the history its successor reads).
// Nothing synchronises, so a step with fp8 layers can be captured in a CUDA graph. A row with no
// finite positive amax (the first step, or a NaN that a cast saw) keeps its scale: the first
// step casts with scale 1, saturating what lies past the format's range. Inputs are cast to
// e4m3fn (precision), the output gradient to e5m2 (range), as Transformer Engine's HYBRID format.
//
// Layouts: cuBLASLt's fp8 products read both operands K-major (Note [fp8 operand layouts] in
// src/ops/linalg.cpp). The forward x [M,K] @ w^T takes x and w row-major; the input gradient
// g [M,N] @ w needs w^T row-major, and the weight gradient g^T @ x needs g^T and x^T row-major.
// Each cast writes what the later products need, row-major and transposed, in its one pass;
// the backward keeps the float8 copies (a quarter of a float32 activation), not x itself.
#include "rcuda/nn/fp8_linear.h"

#include "nn_util.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/autograd/record.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/float8.h"
#include "rcuda/ops/linalg.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::nn {

using autograd::OpCall;
using autograd::SavedTensor;

namespace {

constexpr DType kForwardFormat = DType::Float8E4M3FN;
constexpr DType kGradFormat = DType::Float8E5M2;
enum Row : int64_t { kInputRow = 0, kWeightRow = 1, kGradRow = 2 };

// Row r's current amax slot and its scale, as the one-element tensors the ops take.
Tensor amax_slot(const Tensor& history, int64_t row) {
  return history.select(0, row).slice(0, 0, 1);
}
Tensor entry(const Tensor& t, int64_t row) { return t.slice(0, row, row + 1); }

// Inputs (x, weight, bias). Saved: the float8 transposes the products read, the scales the
// forward used (fresh tensors each step, Note [Delayed scaling]), and x itself where the weight
// gradient cannot be a float8 product (rows not a multiple of 16).
struct Fp8LinearBackward final : autograd::Node {
  Tensor amax_history;
  SavedTensor weight_t8, input_t8, input, scale, scale_inv;
  DType input_dtype = DType::Float32, weight_dtype = DType::Float32;
  const char* name() const override { return "Fp8LinearBackward"; }

  autograd::TensorList apply(autograd::TensorList&& grads) override {
    const Tensor& g = grads[0];
    const bool want_x = needs_input_grad(0), want_w = needs_input_grad(1);
    const Tensor s = scale.unpack(*this), s_inv = scale_inv.unpack(*this);
    const Tensor x_t8 = input_t8.unpack(*this);
    const bool w_fp8 = want_w && x_t8.defined();
    Tensor gx, gw, gb;
    if (want_x || w_fp8) {
      const ops::Float8Cast gc = ops::float8_cast(
          g, entry(s, kGradRow), amax_slot(amax_history, kGradRow), kGradFormat, want_x, w_fp8);
      if (want_x)
        gx = ops::scaled_mm(gc.data, weight_t8.unpack(*this).t(), entry(s_inv, kGradRow),
                            entry(s_inv, kWeightRow), input_dtype);
      if (w_fp8)
        gw = ops::scaled_mm(gc.data_t, x_t8.t(), entry(s_inv, kGradRow), entry(s_inv, kInputRow),
                            weight_dtype);
    }
    if (want_w && !w_fp8) gw = ops::to(ops::mm(g.t(), input.unpack(*this)), weight_dtype);
    if (needs_input_grad(2)) gb = ops::sum(g, {0});
    return {gx, gw, gb};
  }
  void release_saved() override {
    for (SavedTensor* t : {&weight_t8, &input_t8, &input, &scale, &scale_inv}) t->release();
  }
};

void check_fp8_operand(const char* arg, const Tensor& t) {
  RCUDA_CHECK(
      t.dtype() == DType::Float32 || t.dtype() == DType::Float16 || t.dtype() == DType::BFloat16,
      DTypeError, "fp8_linear: ", arg, " must be float32, float16 or bfloat16, got ",
      dtype_name(t.dtype()));
}

// fp8_linear of checked arguments with x 2-D: one step of the state, the float8 product, and
// its node when the call records.
Tensor fp8_linear_2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                     Fp8LinearState& state) {
  const bool record = OpCall::records(x, weight, bias);
  const bool want_x = record && autograd::needs_grad(x);
  const bool want_w = record && autograd::needs_grad(weight);
  const bool w_fp8 = want_w && x.size(0) % 16 == 0;
  state.advance();
  const Tensor& history = state.amax_history();
  const Tensor s = state.scale(), s_inv = state.scale_inv();
  ops::Float8Cast xc, wc;
  const Tensor out = autograd::below_autograd([&] {
    xc = ops::float8_cast(x, entry(s, kInputRow), amax_slot(history, kInputRow), kForwardFormat,
                          true, w_fp8);
    wc = ops::float8_cast(weight, entry(s, kWeightRow), amax_slot(history, kWeightRow),
                          kForwardFormat, true, want_x);
    // The bias goes into the product's epilogue: one rounding, no second pass over y.
    return ops::scaled_mm(xc.data, wc.data.t(), entry(s_inv, kInputRow), entry(s_inv, kWeightRow),
                          x.dtype(), bias);
  });
  if (!record) return out;
  auto node = autograd::make_node<Fp8LinearBackward>(OpId::Fp8Linear, x, weight, bias);
  node->amax_history = history;
  node->input_dtype = x.dtype();
  node->weight_dtype = weight.dtype();
  node->scale = SavedTensor(s, SavedTensor::kInput);
  node->scale_inv = SavedTensor(s_inv, SavedTensor::kInput);
  if (want_x) node->weight_t8 = SavedTensor(wc.data_t, SavedTensor::kInput);
  if (w_fp8) node->input_t8 = SavedTensor(xc.data_t, SavedTensor::kInput);
  if (want_w && !w_fp8) node->input = SavedTensor(x, SavedTensor::kInput);
  autograd::set_history(out, node);
  return out;
}

}  // namespace

Fp8LinearState::Fp8LinearState(Device device, Fp8Recipe recipe) : recipe_(recipe) {
  RCUDA_CHECK(recipe.amax_history_len >= 1, ValueError,
              "Fp8LinearState: amax_history_len must be at least 1, got ", recipe.amax_history_len);
  RCUDA_CHECK(recipe.margin >= 0, ValueError, "Fp8LinearState: margin must be >= 0, got ",
              recipe.margin);
  amax_history_ = ops::zeros({3, recipe.amax_history_len}, {DType::Float32, device});
  scale_ = ops::ones({3}, {DType::Float32, device});
  scale_inv_ = ops::ones({3}, {DType::Float32, device});
}

Fp8LinearState::Fp8LinearState(const Tensor& amax_history, const Tensor& scale, int margin)
    : recipe_{amax_history.defined() && amax_history.dim() == 2 ? amax_history.size(1) : 0, margin},
      amax_history_(amax_history),
      scale_(scale) {
  RCUDA_CHECK(amax_history.defined() && scale.defined() && amax_history.dim() == 2 &&
                  amax_history.size(0) == 3 && amax_history.size(1) >= 1 && scale.dim() == 1 &&
                  scale.size(0) == 3,
              ShapeError, "Fp8LinearState: expected amax_history [3, H] and scale [3], got ",
              amax_history.defined() ? shape_str(amax_history.shape()) : "undefined", " and ",
              scale.defined() ? shape_str(scale.shape()) : "undefined");
  RCUDA_CHECK(amax_history.dtype() == DType::Float32 && scale.dtype() == DType::Float32, DTypeError,
              "Fp8LinearState: amax_history and scale must be float32, got ",
              dtype_name(amax_history.dtype()), " and ", dtype_name(scale.dtype()));
  RCUDA_CHECK(amax_history.is_contiguous(), ValueError,
              "Fp8LinearState: amax_history must be contiguous (it is updated in place)");
  RCUDA_CHECK(amax_history.device() == scale.device(), DeviceError,
              "Fp8LinearState: amax_history is on ", amax_history.device().str(),
              " but scale is on ", scale.device().str());
  RCUDA_CHECK(margin >= 0, ValueError, "Fp8LinearState: margin must be >= 0, got ", margin);
}

void Fp8LinearState::load(const Tensor& amax_history, const Tensor& scale) {
  RCUDA_CHECK(amax_history.dim() == 2 && amax_history.size(0) == 3 && amax_history.size(1) >= 1 &&
                  scale.dim() == 1 && scale.size(0) == 3,
              ShapeError, "Fp8LinearState::load: expected amax_history [3, H] and scale [3], got ",
              shape_str(amax_history.shape()), " and ", shape_str(scale.shape()));
  NoGradGuard no_grad;
  const Device on = device();
  amax_history_ = ops::contiguous(ops::to(amax_history, on, DType::Float32));
  scale_ = ops::contiguous(ops::to(scale, on, DType::Float32));
  scale_inv_ = ops::div(ops::ones({3}, {DType::Float32, on}), scale_);
  recipe_.amax_history_len = amax_history_.size(1);
}

void Fp8LinearState::advance() {
  ops::Float8Scales next = ops::float8_update_scales(
      amax_history_, scale_, {kForwardFormat, kForwardFormat, kGradFormat}, recipe_.margin);
  scale_ = next.scale;
  scale_inv_ = next.scale_inv;
}

Tensor fp8_linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  Fp8LinearState& state) {
  OpCall call(OpId::Fp8Linear, x);
  if (call.autocasts()) return fp8_linear(call.cast(x), call.cast(weight), call.cast(bias), state);
  constexpr const char* kOp = "fp8_linear";
  check_fp8_operand("input", x);
  check_fp8_operand("weight", weight);
  RCUDA_CHECK(weight.dim() == 2, ShapeError,
              "fp8_linear: weight must be 2-D [out_features, in_features], got shape ",
              shape_str(weight.shape()));
  RCUDA_CHECK(x.dim() >= 1, ShapeError, "fp8_linear: input must have at least 1 dim, got 0-dim");
  const int64_t in_features = weight.size(1), out_features = weight.size(0);
  RCUDA_CHECK(x.size(-1) == in_features, ShapeError, "fp8_linear: input of shape ",
              shape_str(x.shape()), " has ", x.size(-1),
              " features in its last dim but weight of shape ", shape_str(weight.shape()),
              " expects ", in_features, " (in_features)");
  RCUDA_CHECK(in_features % 16 == 0 && out_features % 16 == 0, ShapeError,
              "fp8_linear: in_features and out_features must be multiples of 16 (cuBLASLt's fp8 "
              "kernels), got weight of shape ",
              shape_str(weight.shape()));
  detail::check_same_device(kOp, "weight", weight, "input", x);
  RCUDA_CHECK(state.device() == x.device(), DeviceError, "fp8_linear: the state is on ",
              state.device().str(), " but input is on ", x.device().str());
  if (bias.defined()) {
    check_fp8_operand("bias", bias);
    RCUDA_CHECK(bias.dim() == 1 && bias.size(0) == out_features, ShapeError,
                "fp8_linear: bias must have shape [out_features] = [", out_features, "], got ",
                shape_str(bias.shape()));
    detail::check_same_device(kOp, "bias", bias, "input", x);
  }
  // The state as the call found it: each step replaces its scale.
  const Tensor scale_in = call.reported() ? state.scale() : Tensor();
  Tensor out;
  if (x.dim() != 2) {
    Shape out_shape = x.shape();
    out_shape.back() = out_features;
    out = rcuda::reshape(fp8_linear(rcuda::reshape(x, {-1, in_features}), weight, bias, state),
                         out_shape);
  } else {
    out = fp8_linear_2d(x, weight, bias, state);
  }
  // The state's tensors are inputs too, so that a replay steps the same history.
  if (call.reported())
    call.report({x, weight, bias, state.amax_history(), scale_in},
                {{"margin", static_cast<int64_t>(state.recipe().margin)}}, {out});
  return out;
}

}  // namespace rcuda::nn
