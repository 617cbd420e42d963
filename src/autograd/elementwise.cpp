// Entry points of the elementwise family: run the no-grad op, then record its node when an
// input requires grad (Note [Recording] in rcuda/autograd/record.h).
#include <cstring>

#include "grads/elementwise.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/autocast.h"
#include "rcuda/autograd/record.h"
#include "rcuda/core/error.h"
#include "rcuda/ops/nn.h"

namespace rcuda {
namespace {

using autograd::below_autograd;
using autograd::BinaryBackward;
using autograd::make_node;
using autograd::SavedTensor;
using autograd::set_history;
using autograd::should_record;
using autograd::UnaryBackward;

template <typename Forward>
Tensor record_unary(UnaryOp op, const Tensor& x, const UnaryArgs& args, Forward forward) {
  if (!should_record(x)) return forward();
  Tensor out = below_autograd(forward);
  if (!is_floating(out.dtype())) return out;
  auto node = make_node<UnaryBackward>(x);
  node->op = op;
  node->args = args;
  // Only what the fused formula reads (ops::unary_grad_saves), as torch saves.
  switch (ops::unary_grad_saves(op)) {
    case ops::UnaryGradSaves::Input:
      node->x = SavedTensor(x, SavedTensor::kInput);
      break;
    case ops::UnaryGradSaves::Output:
      node->out = SavedTensor(out);
      break;
    case ops::UnaryGradSaves::Nothing:
      break;
  }
  set_history(out, std::move(node));
  return out;
}

Tensor unary(UnaryOp op, const Tensor& x, Tensor (*forward)(const Tensor&)) {
  return record_unary(op, x, {}, [&] { return forward(x); });
}

template <typename Forward>
Tensor record_binary(BinaryOp op, const Tensor& a, const Tensor& b, double alpha, Forward forward) {
  if (!should_record(a, b)) return forward();
  Tensor out = below_autograd(forward);
  auto node = make_node<BinaryBackward>(a, b);
  node->op = op;
  node->alpha = alpha;
  // What each formula reads (grads/binary.cpp).
  const bool saves_inputs = op != BinaryOp::Add && op != BinaryOp::Sub;
  if (saves_inputs) {
    node->a = SavedTensor(a, SavedTensor::kInput);
    node->b = SavedTensor(b, SavedTensor::kInput);
  }
  if (op == BinaryOp::Div || op == BinaryOp::Pow) node->out = SavedTensor(out);
  set_history(out, std::move(node));
  return out;
}

// A tensor and a plain number: only the tensor has an edge.
template <typename Forward>
Tensor record_with_number(BinaryOp op, const Tensor& t, double number, bool number_first,
                          Forward forward) {
  if (!should_record(t)) return forward();
  Tensor out = below_autograd(forward);
  auto node = make_node<BinaryBackward>(t);
  node->op = op;
  node->number = number;
  node->a_is_number = number_first;
  node->b_is_number = !number_first;
  // What the number-first formulas read (grads/binary.cpp): number / t and number ** t their
  // output, number / t and number % t the tensor.
  if (number_first && (op == BinaryOp::Div || op == BinaryOp::Pow)) node->out = SavedTensor(out);
  if (number_first && (op == BinaryOp::Div || op == BinaryOp::Remainder))
    node->b = SavedTensor(t, SavedTensor::kInput);
  set_history(out, std::move(node));
  return out;
}

}  // namespace

Tensor neg(const Tensor& x) { return unary(UnaryOp::Neg, x, ops::neg); }
Tensor abs(const Tensor& x) { return unary(UnaryOp::Abs, x, ops::abs); }
Tensor sign(const Tensor& x) { return unary(UnaryOp::Sign, x, ops::sign); }
Tensor exp(const Tensor& x) {
  if (autocast::Region cast{"exp", x}) return exp(cast(x));
  return unary(UnaryOp::Exp, x, ops::exp);
}
Tensor expm1(const Tensor& x) {
  if (autocast::Region cast{"expm1", x}) return expm1(cast(x));
  return unary(UnaryOp::Expm1, x, ops::expm1);
}
Tensor log(const Tensor& x) {
  if (autocast::Region cast{"log", x}) return log(cast(x));
  return unary(UnaryOp::Log, x, ops::log);
}
Tensor log1p(const Tensor& x) {
  if (autocast::Region cast{"log1p", x}) return log1p(cast(x));
  return unary(UnaryOp::Log1p, x, ops::log1p);
}
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::Sqrt, x, ops::sqrt); }
Tensor rsqrt(const Tensor& x) {
  if (autocast::Region cast{"rsqrt", x}) return rsqrt(cast(x));
  return unary(UnaryOp::Rsqrt, x, ops::rsqrt);
}
Tensor sin(const Tensor& x) { return unary(UnaryOp::Sin, x, ops::sin); }
Tensor cos(const Tensor& x) { return unary(UnaryOp::Cos, x, ops::cos); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::Tanh, x, ops::tanh); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::Sigmoid, x, ops::sigmoid); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::Relu, x, ops::relu); }
Tensor silu(const Tensor& x) { return unary(UnaryOp::Silu, x, ops::silu); }
Tensor floor(const Tensor& x) { return unary(UnaryOp::Floor, x, ops::floor); }
Tensor ceil(const Tensor& x) { return unary(UnaryOp::Ceil, x, ops::ceil); }
Tensor round(const Tensor& x) { return unary(UnaryOp::Round, x, ops::round); }
Tensor tan(const Tensor& x) { return unary(UnaryOp::Tan, x, ops::tan); }
Tensor asin(const Tensor& x) { return unary(UnaryOp::Asin, x, ops::asin); }
Tensor acos(const Tensor& x) { return unary(UnaryOp::Acos, x, ops::acos); }
Tensor atan(const Tensor& x) { return unary(UnaryOp::Atan, x, ops::atan); }
Tensor sinh(const Tensor& x) { return unary(UnaryOp::Sinh, x, ops::sinh); }
Tensor cosh(const Tensor& x) { return unary(UnaryOp::Cosh, x, ops::cosh); }
Tensor asinh(const Tensor& x) { return unary(UnaryOp::Asinh, x, ops::asinh); }
Tensor acosh(const Tensor& x) { return unary(UnaryOp::Acosh, x, ops::acosh); }
Tensor atanh(const Tensor& x) { return unary(UnaryOp::Atanh, x, ops::atanh); }
Tensor trunc(const Tensor& x) { return unary(UnaryOp::Trunc, x, ops::trunc); }
Tensor erf(const Tensor& x) { return unary(UnaryOp::Erf, x, ops::erf); }
Tensor erfc(const Tensor& x) { return unary(UnaryOp::Erfc, x, ops::erfc); }
Tensor erfinv(const Tensor& x) { return unary(UnaryOp::Erfinv, x, ops::erfinv); }
Tensor lgamma(const Tensor& x) { return unary(UnaryOp::Lgamma, x, ops::lgamma); }
Tensor digamma(const Tensor& x) { return unary(UnaryOp::Digamma, x, ops::digamma); }
Tensor log2(const Tensor& x) { return unary(UnaryOp::Log2, x, ops::log2); }
Tensor log10(const Tensor& x) { return unary(UnaryOp::Log10, x, ops::log10); }
Tensor exp2(const Tensor& x) { return unary(UnaryOp::Exp2, x, ops::exp2); }
Tensor reciprocal(const Tensor& x) { return unary(UnaryOp::Reciprocal, x, ops::reciprocal); }

Tensor gelu(const Tensor& x, const std::string& approximate) {
  const UnaryOp op = approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::Gelu;
  return record_unary(op, x, {}, [&] { return ops::gelu(x, approximate); });
}

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  UnaryArgs args;
  args.has_min = min.has_value();
  args.has_max = max.has_value();
  args.min = min ? min->to_double() : 0.0;
  args.max = max ? max->to_double() : 0.0;
  return record_unary(UnaryOp::Clamp, x, args, [&] { return ops::clamp(x, min, max); });
}

Tensor pow(const Tensor& x, const Scalar& exponent) {
  if (autocast::Region cast{"pow", x}) return pow(cast(x), exponent);
  UnaryArgs args;
  args.exponent = exponent.to_double();
  return record_unary(UnaryOp::PowScalar, x, args, [&] { return ops::pow(x, exponent); });
}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  UnaryArgs args;
  args.negative_slope = negative_slope;
  return record_unary(UnaryOp::LeakyRelu, x, args,
                      [&] { return ops::leaky_relu(x, negative_slope); });
}

Tensor elu(const Tensor& x, double alpha) {
  UnaryArgs args;
  args.alpha = alpha;
  return record_unary(UnaryOp::Elu, x, args, [&] { return ops::elu(x, alpha); });
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  if (autocast::Region cast{"softplus", x}) return softplus(cast(x), beta, threshold);
  UnaryArgs args;
  args.beta = beta;
  args.threshold = threshold;
  return record_unary(UnaryOp::Softplus, x, args,
                      [&] { return ops::softplus(x, beta, threshold); });
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  UnaryArgs args;
  args.min = min_val;
  args.max = max_val;
  return record_unary(UnaryOp::Hardtanh, x, args,
                      [&] { return ops::hardtanh(x, min_val, max_val); });
}

Tensor unary_op(const char* name, const Tensor& x) {
  const UnaryOp op = ops::unary_op_from_name(name);
  return record_unary(op, x, {}, [&] { return ops::unary_op(name, x); });
}

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return record_binary(BinaryOp::Add, a, b, alpha.to_double(),
                       [&] { return ops::add(a, b, alpha); });
}
Tensor add(const Tensor& a, const Scalar& b) {
  return record_with_number(BinaryOp::Add, a, b.to_double(), false, [&] { return ops::add(a, b); });
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return record_binary(BinaryOp::Sub, a, b, alpha.to_double(),
                       [&] { return ops::sub(a, b, alpha); });
}
Tensor sub(const Tensor& a, const Scalar& b) {
  return record_with_number(BinaryOp::Sub, a, b.to_double(), false, [&] { return ops::sub(a, b); });
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return record_binary(BinaryOp::Mul, a, b, 1, [&] { return ops::mul(a, b); });
}
Tensor mul(const Tensor& a, const Scalar& b) {
  return record_with_number(BinaryOp::Mul, a, b.to_double(), false, [&] { return ops::mul(a, b); });
}
Tensor div(const Tensor& a, const Tensor& b) {
  return record_binary(BinaryOp::Div, a, b, 1, [&] { return ops::div(a, b); });
}
Tensor div(const Tensor& a, const Scalar& b) {
  return record_with_number(BinaryOp::Div, a, b.to_double(), false, [&] { return ops::div(a, b); });
}
Tensor remainder(const Tensor& a, const Tensor& b) {
  return record_binary(BinaryOp::Remainder, a, b, 1, [&] { return ops::remainder(a, b); });
}
Tensor remainder(const Tensor& a, const Scalar& b) {
  return record_with_number(BinaryOp::Remainder, a, b.to_double(), false,
                            [&] { return ops::remainder(a, b); });
}
Tensor pow(const Tensor& a, const Tensor& b) {
  if (autocast::Region cast{"pow", a}) return pow(cast(a), cast(b));
  return record_binary(BinaryOp::Pow, a, b, 1, [&] { return ops::pow(a, b); });
}
Tensor pow(const Scalar& a, const Tensor& b) {
  if (autocast::Region cast{"pow", b}) return pow(a, cast(b));
  return record_with_number(BinaryOp::Pow, b, a.to_double(), true, [&] { return ops::pow(a, b); });
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return record_binary(BinaryOp::Maximum, a, b, 1, [&] { return ops::maximum(a, b); });
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return record_binary(BinaryOp::Minimum, a, b, 1, [&] { return ops::minimum(a, b); });
}

Tensor atan2(const Tensor& a, const Tensor& b) {
  return record_binary(BinaryOp::Atan2, a, b, 1, [&] { return ops::atan2(a, b); });
}

Tensor binary_op(const char* name, const Tensor& a, const Tensor& b) {
  // floor_divide is piecewise constant: no gradient, as torch.
  if (std::strcmp(name, "floor_divide") == 0) return ops::floor_divide(a, b);
  const BinaryOp op = ops::binary_op_from_name(name);
  if (is_comparison_or_logical(op)) return ops::binary_op(op, a, b);
  return record_binary(op, a, b, 1, [&] { return ops::binary_op(op, a, b); });
}

// A tensor and a number: the ops whose formulas take a number record it as one, a power goes to
// pow(x, exponent); maximum, minimum and atan2 take it as a 0-dim tensor (their formulas read
// both operands).
Tensor binary_op_with_number(const char* name, const Tensor& t, const Scalar& number,
                             bool number_first) {
  // floor_divide is piecewise constant (no gradient), bool results record nothing.
  if (std::strcmp(name, "floor_divide") == 0)
    return number_first ? ops::binary_op(name, number, t) : ops::binary_op(name, t, number);
  const BinaryOp op = ops::binary_op_from_name(name);
  const auto forward = [&] {
    return number_first ? ops::binary_op(op, number, t) : ops::binary_op(op, t, number);
  };
  if (is_comparison_or_logical(op)) return forward();
  if (op == BinaryOp::Pow && number_first) return pow(number, t);
  // torch's x ** 2: one unary kernel (bool ** number computes in float, as the tensor form).
  if (op == BinaryOp::Pow && t.dtype() != DType::Bool) return pow(t, number);
  if (op == BinaryOp::Pow || op == BinaryOp::Maximum || op == BinaryOp::Minimum ||
      op == BinaryOp::Atan2) {
    const Tensor n = ops::scalar_tensor(number, ops::result_type(t, number), t.device());
    return number_first ? binary_op(name, n, t) : binary_op(name, t, n);
  }
  // add, sub, mul, div, remainder: their formulas take the number (grads/binary.cpp).
  return record_with_number(op, t, number.to_double(), number_first, forward);
}

Tensor binary_op(const char* name, const Tensor& a, const Scalar& b) {
  return binary_op_with_number(name, a, b, /*number_first=*/false);
}
Tensor binary_op(const char* name, const Scalar& a, const Tensor& b) {
  return binary_op_with_number(name, b, a, /*number_first=*/true);
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  if (!autograd::should_record(a, b)) return ops::where(condition, a, b);
  Tensor out = below_autograd([&] { return ops::where(condition, a, b); });
  auto node = make_node<autograd::WhereBackward>(a, b);
  node->condition = SavedTensor(condition, SavedTensor::kInput);
  set_history(out, std::move(node));
  return out;
}
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b) {
  const Tensor at = ops::scalar_tensor(a, ops::result_type(b, a), b.device());
  return where(condition, at, b);
}
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b) {
  const Tensor bt = ops::scalar_tensor(b, ops::result_type(a, b), a.device());
  return where(condition, a, bt);
}

// ---- in place ------------------------------------------------------------------------------

namespace {

// Runs an in-place op and, when it must record, makes `node` the new grad_fn of self (its old
// history becomes the node's first input). Note [In-place ops] in docs/autograd.md.
template <typename Forward, typename Configure>
const Tensor& record_inplace(const char* op, BinaryOp kind, const Tensor& self, const Tensor& other,
                             Forward forward, Configure configure) {
  autograd::check_inplace(op, self);
  if (!should_record(self, other)) return forward();
  autograd::check_not_view(op, self);
  auto node = make_node<BinaryBackward>(self, other);
  node->op = kind;
  configure(*node);
  below_autograd(forward);
  set_history(self, node);
  return self;
}

}  // namespace

const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return record_inplace(
      "add_", BinaryOp::Add, self, other,
      [&]() -> const Tensor& { return ops::add_(self, other, alpha); },
      [&](BinaryBackward& n) { n.alpha = alpha.to_double(); });
}

const Tensor& mul_(const Tensor& self, const Tensor& other) {
  // self's old value is needed for other's gradient: saved as a copy before the write.
  return record_inplace(
      "mul_", BinaryOp::Mul, self, other, [&]() -> const Tensor& { return ops::mul_(self, other); },
      [&](BinaryBackward& n) {
        n.a = SavedTensor(below_autograd([&] { return ops::clone(self); }));
        n.b = SavedTensor(other);  // an alias: other may be self
      });
}

}  // namespace rcuda
