// ONNX import: the activations with parameters, and Clip (ops_elementwise.h). Each is composed
// of public ops that keep the input's dtype, so float16 and float64 models stay in theirs.
#include <optional>
#include <utility>

#include "io/onnx/import/ops_elementwise.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io::onnx_import {
namespace {

// A kernel of one input and one output from f(x).
template <typename F>
Kernel one_input(F f) {
  return [f = std::move(f)](const std::vector<Tensor>& in,
                            const RunContext&) -> std::vector<Tensor> { return {f(in[0])}; };
}

Kernel make_elu(NodeReader& node) {
  const double alpha = node.f("alpha", 1.0);
  return one_input([alpha](const Tensor& x) { return elu(x, alpha); });
}

// alpha * elu(x / alpha): x where x > 0, alpha * (exp(x / alpha) - 1) elsewhere.
Kernel make_celu(NodeReader& node) {
  const double alpha = node.f("alpha", 1.0);
  if (alpha == 0) node.fail("attribute alpha must not be 0");
  return one_input([alpha](const Tensor& x) { return mul(elu(div(x, alpha)), alpha); });
}

Kernel make_selu(NodeReader& node) {
  const double alpha = node.f("alpha", 1.67326319217681884765625);
  const double gamma = node.f("gamma", 1.05070102214813232421875);
  return one_input([alpha, gamma](const Tensor& x) { return mul(elu(x, alpha), gamma); });
}

Kernel make_leaky_relu(NodeReader& node) {
  const double alpha = node.f("alpha", 0.01);
  return one_input([alpha](const Tensor& x) { return leaky_relu(x, alpha); });
}

// ONNX's HardSigmoid: max(0, min(1, alpha * x + beta)).
Tensor hard_sigmoid(const Tensor& x, double alpha, double beta) {
  return clamp(add(mul(x, alpha), beta), Scalar(0.0), Scalar(1.0));
}

Kernel make_hard_sigmoid(NodeReader& node) {
  const double alpha = node.f("alpha", 0.2);
  const double beta = node.f("beta", 0.5);
  return one_input([alpha, beta](const Tensor& x) { return hard_sigmoid(x, alpha, beta); });
}

Kernel make_hard_swish(NodeReader& /*node*/) {
  return one_input([](const Tensor& x) { return mul(x, hard_sigmoid(x, 1.0 / 6.0, 0.5)); });
}

// log(1 + exp(x)); rcuda's softplus returns x itself past x = 20, where the two agree to
// float64's precision.
Kernel make_softplus(NodeReader& /*node*/) {
  return one_input([](const Tensor& x) { return softplus(x); });
}

Kernel make_softsign(NodeReader& /*node*/) {
  return one_input([](const Tensor& x) { return div(x, add(abs(x), 1.0)); });
}

Kernel make_thresholded_relu(NodeReader& node) {
  const double alpha = node.f("alpha", 1.0);
  return one_input([alpha](const Tensor& x) { return where(gt(x, alpha), x, Scalar(0.0)); });
}

// x + bias below -lambd, x - bias above lambd, 0 between. ONNX also lists integer inputs: they
// compute in float64 and truncate back, as the reference does.
Kernel make_shrink(NodeReader& node) {
  const double bias = node.f("bias", 0.0);
  const double lambd = node.f("lambd", 0.5);
  return one_input([bias, lambd](const Tensor& input) {
    const Tensor x = is_floating(input.dtype()) ? input : to(input, DType::Float64);
    const Tensor y =
        where(lt(x, -lambd), add(x, bias), where(gt(x, lambd), add(x, -bias), Scalar(0.0)));
    return y.dtype() == input.dtype() ? y : to(y, input.dtype());
  });
}

Kernel make_mish(NodeReader& /*node*/) {
  return one_input([](const Tensor& x) { return mul(x, tanh(softplus(x))); });
}

Kernel make_gelu(NodeReader& node) {
  const std::string approximate = node.s("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    node.fail("attribute approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  return one_input([approximate](const Tensor& x) { return gelu(x, approximate); });
}

// x where x > 0, x * slope elsewhere; slope broadcasts to x (unidirectionally, from version 7).
// Before version 7 a 1-D slope of several values is one per channel (dim 1), as Caffe2's PRelu.
Kernel make_prelu(NodeReader& node) {
  const bool per_channel = node.version() < 7;
  // Errors at run need not name the node: the runner prefixes it.
  return [per_channel](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in[0];
    Tensor slope = in[1];
    if (per_channel && slope.dim() == 1 && slope.numel() != 1 && x.dim() >= 2) {
      if (slope.size(0) != x.size(1))
        throw ValueError("slope has " + std::to_string(slope.size(0)) + " values for " +
                         std::to_string(x.size(1)) + " channels");
      Shape shape(static_cast<size_t>(x.dim()), 1);
      shape[1] = slope.size(0);
      slope = reshape(slope, shape);
    }
    return {where(gt(x, Scalar(0)), x, mul(x, slope))};
  };
}

// ---- Clip ----------------------------------------------------------------------------------

// A bound of Clip (11+) known at load, as a number of the bound's kind (an integer for integer
// tensors, whose clamp would otherwise turn float32).
std::optional<Scalar> constant_bound(NodeReader& node, size_t i) {
  const Tensor* bound = node.constant_input(i);
  if (bound == nullptr) return std::nullopt;
  const std::string what = i == 1 ? "input min" : "input max";
  if (bound->numel() != 1) node.fail(what + " must be a scalar");
  if (is_integral(bound->dtype(), /*include_bool=*/false)) return Scalar(host_ints(*bound)[0]);
  return Scalar(host_scalar(*bound, what));
}

// Before version 11 the bounds are attributes (floats only).
Kernel make_clip_attributes(NodeReader& node) {
  std::optional<Scalar> lo, hi;
  if (node.has("min")) lo = Scalar(node.f("min"));
  if (node.has("max")) hi = Scalar(node.f("max"));
  return one_input([lo, hi](const Tensor& x) { return lo || hi ? clamp(x, lo, hi) : x; });
}

// min(max(x, min), max): where min > max every value becomes max, as ONNX says. Bounds known at
// load clamp in one op; others are 0-D tensors of x's dtype, read on the device.
Kernel make_clip(NodeReader& node) {
  if (node.version() < 11) return make_clip_attributes(node);
  const bool has_min = node.has_input(1), has_max = node.has_input(2);
  const std::optional<Scalar> lo = has_min ? constant_bound(node, 1) : std::nullopt;
  const std::optional<Scalar> hi = has_max ? constant_bound(node, 2) : std::nullopt;
  return [=](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    if (lo && hi) return {clamp(in[0], lo, hi)};
    Tensor y = in[0];
    if (has_min) y = lo ? clamp(y, lo, std::nullopt) : maximum(y, in[1]);
    if (has_max) y = hi ? clamp(y, std::nullopt, hi) : minimum(y, in[2]);
    return {y};
  };
}

}  // namespace

std::vector<ImportOp> elementwise_activation_ops() {
  return {
      {"Elu", make_elu},
      {"Celu", make_celu, 12},
      {"Selu", make_selu},
      {"LeakyRelu", make_leaky_relu},
      {"PRelu", make_prelu},
      {"HardSigmoid", make_hard_sigmoid},
      {"HardSwish", make_hard_swish, 14},
      {"Softplus", make_softplus},
      {"Softsign", make_softsign},
      {"ThresholdedRelu", make_thresholded_relu, 10},
      {"Shrink", make_shrink, 9},
      {"Mish", make_mish, 18},
      {"Gelu", make_gelu, 20},
      {"Clip", make_clip},
  };
}

}  // namespace rcuda::io::onnx_import
