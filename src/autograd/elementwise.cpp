// Entry points of the elementwise family: run the no-grad op, then record its node when an
// input requires grad (Note [Recording] in rcuda/autograd/record.h).
#include <string>

#include "grads/elementwise.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
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
using autograd::UnaryBackward;

using autograd::OpCall;

// A unary op's node, when the call records (Note [The funnel] in rcuda/autograd/funnel.h).
template <typename Forward>
Tensor record_unary(OpId id, UnaryOp op, const Tensor& x, const UnaryArgs& args, Forward forward) {
  if (!OpCall::records(x)) return forward();
  Tensor out = below_autograd(forward);
  if (!is_floating(out.dtype())) return out;
  auto node = make_node<UnaryBackward>(id, x);
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

// The funnel for a one-tensor op: autocast's cast, the node, the report to observers. `attrs`
// makes the call's attributes, only when an observer asks.
template <typename Forward, typename MakeAttrs>
Tensor unary_call(OpId id, UnaryOp kernel, const Tensor& x, const UnaryArgs& args, Forward forward,
                  MakeAttrs attrs) {
  OpCall call(id, x);
  if (call.autocasts()) return unary_call(id, kernel, call.cast(x), args, forward, attrs);
  Tensor out = record_unary(id, kernel, x, args, [&] { return forward(x); });
  if (call.reported()) call.report({x}, attrs(), {out});
  return out;
}

Attributes no_attributes() { return {}; }

Tensor unary(OpId id, UnaryOp kernel, const Tensor& x, Tensor (*forward)(const Tensor&)) {
  return unary_call(id, kernel, x, {}, forward, no_attributes);
}

template <typename Forward>
Tensor record_binary(OpId id, BinaryOp op, const Tensor& a, const Tensor& b, double alpha,
                     Forward forward) {
  if (!OpCall::records(a, b)) return forward();
  Tensor out = below_autograd(forward);
  auto node = make_node<BinaryBackward>(id, a, b);
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

// Two tensors: autocast (pow's float32), the node (none for comparisons), the report.
Tensor binary_call(OpId id, BinaryOp kernel, const Tensor& a, const Tensor& b,
                   const Scalar& alpha = 1) {
  OpCall call(id, a);
  if (call.autocasts()) return binary_call(id, kernel, call.cast(a), call.cast(b), alpha);
  const auto forward = [&] {
    if (id == OpId::Add) return ops::add(a, b, alpha);
    if (id == OpId::Sub) return ops::sub(a, b, alpha);
    return ops::binary_op(kernel, a, b);
  };
  Tensor out = is_comparison_or_logical(kernel)
                   ? forward()
                   : record_binary(id, kernel, a, b, alpha.to_double(), forward);
  if (call.reported()) {
    Attributes attrs;
    if (alpha.to_double() != 1) attrs.set("alpha", alpha.to_double());
    call.report({a, b}, attrs, {out});
  }
  return out;
}

// A tensor and a plain number: only the tensor has an edge.
template <typename Forward>
Tensor record_with_number(OpId id, BinaryOp op, const Tensor& t, double number, bool number_first,
                          Forward forward) {
  if (!OpCall::records(t)) return forward();
  Tensor out = below_autograd(forward);
  auto node = make_node<BinaryBackward>(id, t);
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

// The attributes of a call with a number operand: the number (as the Scalar's kind: an integer
// stays an integer, so that replay promotes as the call did) and its side.
Attributes number_attributes(const Scalar& number, bool number_first) {
  Attributes attrs;
  if (number.kind() == Scalar::Kind::Float)
    attrs.set("other", number.to_double());
  else if (number.kind() == Scalar::Kind::Int)
    attrs.set("other", number.to_int());
  else
    attrs.set("other", number.to_bool());
  if (number_first) attrs.set("number_first", true);
  return attrs;
}

Tensor number_call(OpId id, BinaryOp kernel, const Tensor& t, const Scalar& number,
                   bool number_first) {
  OpCall call(id, t);
  if (call.autocasts()) return number_call(id, kernel, call.cast(t), number, number_first);
  const auto forward = [&] {
    return number_first ? ops::binary_op(kernel, number, t) : ops::binary_op(kernel, t, number);
  };
  Tensor out = is_comparison_or_logical(kernel)
                   ? forward()
                   : record_with_number(id, kernel, t, number.to_double(), number_first, forward);
  if (call.reported()) call.report({t}, number_attributes(number, number_first), {out});
  return out;
}

// The kernel of a binary OpId (floor_divide has none: it is composed).
BinaryOp binary_kernel(OpId id) {
  switch (id) {
    case OpId::Add:
      return BinaryOp::Add;
    case OpId::Sub:
      return BinaryOp::Sub;
    case OpId::Mul:
      return BinaryOp::Mul;
    case OpId::Div:
      return BinaryOp::Div;
    case OpId::Remainder:
      return BinaryOp::Remainder;
    case OpId::Pow:
      return BinaryOp::Pow;
    case OpId::Maximum:
      return BinaryOp::Maximum;
    case OpId::Minimum:
      return BinaryOp::Minimum;
    case OpId::Atan2:
      return BinaryOp::Atan2;
    case OpId::Eq:
      return BinaryOp::Eq;
    case OpId::Ne:
      return BinaryOp::Ne;
    case OpId::Lt:
      return BinaryOp::Lt;
    case OpId::Le:
      return BinaryOp::Le;
    case OpId::Gt:
      return BinaryOp::Gt;
    case OpId::Ge:
      return BinaryOp::Ge;
    case OpId::LogicalAnd:
      return BinaryOp::LogicalAnd;
    case OpId::LogicalOr:
      return BinaryOp::LogicalOr;
    case OpId::LogicalXor:
      return BinaryOp::LogicalXor;
    default:
      throw ValueError(std::string("binary_op: \"") + op_name(id) +
                       "\" is not an elementwise op of two operands");
  }
}

}  // namespace

Tensor neg(const Tensor& x) { return unary(OpId::Neg, UnaryOp::Neg, x, ops::neg); }
Tensor abs(const Tensor& x) { return unary(OpId::Abs, UnaryOp::Abs, x, ops::abs); }
Tensor sign(const Tensor& x) { return unary(OpId::Sign, UnaryOp::Sign, x, ops::sign); }
Tensor exp(const Tensor& x) { return unary(OpId::Exp, UnaryOp::Exp, x, ops::exp); }
Tensor expm1(const Tensor& x) { return unary(OpId::Expm1, UnaryOp::Expm1, x, ops::expm1); }
Tensor log(const Tensor& x) { return unary(OpId::Log, UnaryOp::Log, x, ops::log); }
Tensor log1p(const Tensor& x) { return unary(OpId::Log1p, UnaryOp::Log1p, x, ops::log1p); }
Tensor sqrt(const Tensor& x) { return unary(OpId::Sqrt, UnaryOp::Sqrt, x, ops::sqrt); }
Tensor rsqrt(const Tensor& x) { return unary(OpId::Rsqrt, UnaryOp::Rsqrt, x, ops::rsqrt); }
Tensor sin(const Tensor& x) { return unary(OpId::Sin, UnaryOp::Sin, x, ops::sin); }
Tensor cos(const Tensor& x) { return unary(OpId::Cos, UnaryOp::Cos, x, ops::cos); }
Tensor tanh(const Tensor& x) { return unary(OpId::Tanh, UnaryOp::Tanh, x, ops::tanh); }
Tensor sigmoid(const Tensor& x) { return unary(OpId::Sigmoid, UnaryOp::Sigmoid, x, ops::sigmoid); }
Tensor relu(const Tensor& x) { return unary(OpId::Relu, UnaryOp::Relu, x, ops::relu); }
Tensor silu(const Tensor& x) { return unary(OpId::Silu, UnaryOp::Silu, x, ops::silu); }
Tensor floor(const Tensor& x) { return unary(OpId::Floor, UnaryOp::Floor, x, ops::floor); }
Tensor ceil(const Tensor& x) { return unary(OpId::Ceil, UnaryOp::Ceil, x, ops::ceil); }
Tensor round(const Tensor& x) { return unary(OpId::Round, UnaryOp::Round, x, ops::round); }
Tensor tan(const Tensor& x) { return unary(OpId::Tan, UnaryOp::Tan, x, ops::tan); }
Tensor asin(const Tensor& x) { return unary(OpId::Asin, UnaryOp::Asin, x, ops::asin); }
Tensor acos(const Tensor& x) { return unary(OpId::Acos, UnaryOp::Acos, x, ops::acos); }
Tensor atan(const Tensor& x) { return unary(OpId::Atan, UnaryOp::Atan, x, ops::atan); }
Tensor sinh(const Tensor& x) { return unary(OpId::Sinh, UnaryOp::Sinh, x, ops::sinh); }
Tensor cosh(const Tensor& x) { return unary(OpId::Cosh, UnaryOp::Cosh, x, ops::cosh); }
Tensor asinh(const Tensor& x) { return unary(OpId::Asinh, UnaryOp::Asinh, x, ops::asinh); }
Tensor acosh(const Tensor& x) { return unary(OpId::Acosh, UnaryOp::Acosh, x, ops::acosh); }
Tensor atanh(const Tensor& x) { return unary(OpId::Atanh, UnaryOp::Atanh, x, ops::atanh); }
Tensor trunc(const Tensor& x) { return unary(OpId::Trunc, UnaryOp::Trunc, x, ops::trunc); }
Tensor erf(const Tensor& x) { return unary(OpId::Erf, UnaryOp::Erf, x, ops::erf); }
Tensor erfc(const Tensor& x) { return unary(OpId::Erfc, UnaryOp::Erfc, x, ops::erfc); }
Tensor erfinv(const Tensor& x) { return unary(OpId::Erfinv, UnaryOp::Erfinv, x, ops::erfinv); }
Tensor lgamma(const Tensor& x) { return unary(OpId::Lgamma, UnaryOp::Lgamma, x, ops::lgamma); }
Tensor digamma(const Tensor& x) { return unary(OpId::Digamma, UnaryOp::Digamma, x, ops::digamma); }
Tensor log2(const Tensor& x) { return unary(OpId::Log2, UnaryOp::Log2, x, ops::log2); }
Tensor log10(const Tensor& x) { return unary(OpId::Log10, UnaryOp::Log10, x, ops::log10); }
Tensor exp2(const Tensor& x) { return unary(OpId::Exp2, UnaryOp::Exp2, x, ops::exp2); }
Tensor reciprocal(const Tensor& x) {
  return unary(OpId::Reciprocal, UnaryOp::Reciprocal, x, ops::reciprocal);
}
// Bool results: nothing records, but a trace sees the call.
Tensor logical_not(const Tensor& x) {
  return unary(OpId::LogicalNot, UnaryOp::LogicalNot, x, ops::logical_not);
}

Tensor gelu(const Tensor& x, const std::string& approximate) {
  const UnaryOp kernel = approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::Gelu;
  return unary_call(
      OpId::Gelu, kernel, x, {}, [&](const Tensor& t) { return ops::gelu(t, approximate); },
      [&] {
        return Attributes{{"approximate", approximate}};
      });
}

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  UnaryArgs args;
  args.has_min = min.has_value();
  args.has_max = max.has_value();
  args.min = min ? min->to_double() : 0.0;
  args.max = max ? max->to_double() : 0.0;
  return unary_call(
      OpId::Clamp, UnaryOp::Clamp, x, args,
      [&](const Tensor& t) { return ops::clamp(t, min, max); },
      [&] {
        Attributes attrs;
        if (min) attrs.set("min", min->to_double());
        if (max) attrs.set("max", max->to_double());
        return attrs;
      });
}

Tensor pow(const Tensor& x, const Scalar& exponent) {
  UnaryArgs args;
  args.exponent = exponent.to_double();
  return unary_call(
      OpId::Pow, UnaryOp::PowScalar, x, args,
      [&](const Tensor& t) { return ops::pow(t, exponent); },
      [&] { return number_attributes(exponent, false); });
}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  UnaryArgs args;
  args.negative_slope = negative_slope;
  return unary_call(
      OpId::LeakyRelu, UnaryOp::LeakyRelu, x, args,
      [&](const Tensor& t) { return ops::leaky_relu(t, negative_slope); },
      [&] {
        return Attributes{{"negative_slope", negative_slope}};
      });
}

Tensor elu(const Tensor& x, double alpha) {
  UnaryArgs args;
  args.alpha = alpha;
  return unary_call(
      OpId::Elu, UnaryOp::Elu, x, args, [&](const Tensor& t) { return ops::elu(t, alpha); },
      [&] {
        return Attributes{{"alpha", alpha}};
      });
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  UnaryArgs args;
  args.beta = beta;
  args.threshold = threshold;
  return unary_call(
      OpId::Softplus, UnaryOp::Softplus, x, args,
      [&](const Tensor& t) { return ops::softplus(t, beta, threshold); },
      [&] {
        return Attributes{{"beta", beta}, {"threshold", threshold}};
      });
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  UnaryArgs args;
  args.min = min_val;
  args.max = max_val;
  return unary_call(
      OpId::Hardtanh, UnaryOp::Hardtanh, x, args,
      [&](const Tensor& t) { return ops::hardtanh(t, min_val, max_val); },
      [&] {
        return Attributes{{"min_val", min_val}, {"max_val", max_val}};
      });
}

// By name (R's torch_exp, $log(), the Math group): the public entry point of the named op, so
// that autocast and observers see the call as any other.
Tensor unary_op(const char* name, const Tensor& x) {
  return unary_op(op_from_name_or_throw(name, "unary_op"), x);
}

Tensor unary_op(OpId id, const Tensor& x) {
  switch (id) {
    case OpId::Neg:
      return neg(x);
    case OpId::Abs:
      return abs(x);
    case OpId::Sign:
      return sign(x);
    case OpId::Exp:
      return exp(x);
    case OpId::Expm1:
      return expm1(x);
    case OpId::Log:
      return log(x);
    case OpId::Log1p:
      return log1p(x);
    case OpId::Sqrt:
      return sqrt(x);
    case OpId::Rsqrt:
      return rsqrt(x);
    case OpId::Sin:
      return sin(x);
    case OpId::Cos:
      return cos(x);
    case OpId::Tanh:
      return tanh(x);
    case OpId::Sigmoid:
      return sigmoid(x);
    case OpId::Relu:
      return relu(x);
    case OpId::Gelu:
      return gelu(x);
    case OpId::Silu:
      return silu(x);
    case OpId::Floor:
      return floor(x);
    case OpId::Ceil:
      return ceil(x);
    case OpId::Round:
      return round(x);
    case OpId::Tan:
      return tan(x);
    case OpId::Asin:
      return asin(x);
    case OpId::Acos:
      return acos(x);
    case OpId::Atan:
      return atan(x);
    case OpId::Sinh:
      return sinh(x);
    case OpId::Cosh:
      return cosh(x);
    case OpId::Asinh:
      return asinh(x);
    case OpId::Acosh:
      return acosh(x);
    case OpId::Atanh:
      return atanh(x);
    case OpId::Trunc:
      return trunc(x);
    case OpId::Erf:
      return erf(x);
    case OpId::Erfc:
      return erfc(x);
    case OpId::Erfinv:
      return erfinv(x);
    case OpId::Lgamma:
      return lgamma(x);
    case OpId::Digamma:
      return digamma(x);
    case OpId::Log2:
      return log2(x);
    case OpId::Log10:
      return log10(x);
    case OpId::Exp2:
      return exp2(x);
    case OpId::Reciprocal:
      return reciprocal(x);
    case OpId::LogicalNot:
      return logical_not(x);
    default:
      throw ValueError(std::string("unary_op: \"") + op_name(id) +
                       "\" is not an elementwise op of one tensor without arguments");
  }
}

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary_call(OpId::Add, BinaryOp::Add, a, b, alpha);
}
Tensor add(const Tensor& a, const Scalar& b) {
  return number_call(OpId::Add, BinaryOp::Add, a, b, false);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary_call(OpId::Sub, BinaryOp::Sub, a, b, alpha);
}
Tensor sub(const Tensor& a, const Scalar& b) {
  return number_call(OpId::Sub, BinaryOp::Sub, a, b, false);
}
Tensor mul(const Tensor& a, const Tensor& b) { return binary_call(OpId::Mul, BinaryOp::Mul, a, b); }
Tensor mul(const Tensor& a, const Scalar& b) {
  return number_call(OpId::Mul, BinaryOp::Mul, a, b, false);
}
Tensor div(const Tensor& a, const Tensor& b) { return binary_call(OpId::Div, BinaryOp::Div, a, b); }
Tensor div(const Tensor& a, const Scalar& b) {
  return number_call(OpId::Div, BinaryOp::Div, a, b, false);
}
Tensor remainder(const Tensor& a, const Tensor& b) {
  return binary_call(OpId::Remainder, BinaryOp::Remainder, a, b);
}
Tensor remainder(const Tensor& a, const Scalar& b) {
  return number_call(OpId::Remainder, BinaryOp::Remainder, a, b, false);
}
Tensor pow(const Tensor& a, const Tensor& b) { return binary_call(OpId::Pow, BinaryOp::Pow, a, b); }
Tensor pow(const Scalar& a, const Tensor& b) {
  return number_call(OpId::Pow, BinaryOp::Pow, b, a, true);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary_call(OpId::Maximum, BinaryOp::Maximum, a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary_call(OpId::Minimum, BinaryOp::Minimum, a, b);
}
Tensor atan2(const Tensor& a, const Tensor& b) {
  return binary_call(OpId::Atan2, BinaryOp::Atan2, a, b);
}

// Comparisons and logical ops: bool results record nothing; a trace sees them.
Tensor eq(const Tensor& a, const Tensor& b) { return binary_call(OpId::Eq, BinaryOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary_call(OpId::Ne, BinaryOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary_call(OpId::Lt, BinaryOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary_call(OpId::Le, BinaryOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary_call(OpId::Gt, BinaryOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary_call(OpId::Ge, BinaryOp::Ge, a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) {
  return binary_call(OpId::LogicalAnd, BinaryOp::LogicalAnd, a, b);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return binary_call(OpId::LogicalOr, BinaryOp::LogicalOr, a, b);
}
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  return binary_call(OpId::LogicalXor, BinaryOp::LogicalXor, a, b);
}

// floor_divide is piecewise constant: no gradient, as torch.
Tensor floor_divide(const Tensor& a, const Tensor& b) {
  OpCall call(OpId::FloorDivide, a);
  Tensor out = ops::floor_divide(a, b);
  if (call.reported()) call.report({a, b}, {}, {out});
  return out;
}

Tensor index_from_one_based(const Tensor& t) {
  OpCall call(OpId::Sub, t);
  Tensor out = ops::sub(t, Scalar(int64_t{1}));
  if (call.reported()) {
    Attributes attrs = number_attributes(Scalar(int64_t{1}), false);
    attrs.set("one_based_index", true);
    call.report({t}, attrs, {out});
  }
  return out;
}

Tensor binary_op(const char* name, const Tensor& a, const Tensor& b) {
  return binary_op(op_from_name_or_throw(name, "binary_op"), a, b);
}

Tensor binary_op(OpId id, const Tensor& a, const Tensor& b) {
  if (id == OpId::FloorDivide) return floor_divide(a, b);
  return binary_call(id, binary_kernel(id), a, b);
}

// A tensor and a number: the ops whose formulas take a number record it as one, a power goes to
// pow(x, exponent); maximum, minimum and atan2 take it as a 0-dim tensor (their formulas read
// both operands).
Tensor binary_op_with_number(OpId id, const Tensor& t, const Scalar& number, bool number_first) {
  if (id == OpId::FloorDivide) {
    OpCall call(id, t);
    Tensor out = number_first
                     ? ops::floor_divide(
                           ops::scalar_tensor(number, ops::result_type(t, number), t.device()), t)
                     : ops::floor_divide(t, number);
    if (call.reported()) call.report({t}, number_attributes(number, number_first), {out});
    return out;
  }
  const BinaryOp kernel = binary_kernel(id);
  if (kernel == BinaryOp::Pow && number_first) return pow(number, t);
  // torch's x ** 2: one unary kernel (bool ** number computes in float, as the tensor form).
  if (kernel == BinaryOp::Pow && t.dtype() != DType::Bool) return pow(t, number);
  if (kernel == BinaryOp::Pow || kernel == BinaryOp::Maximum || kernel == BinaryOp::Minimum ||
      kernel == BinaryOp::Atan2) {
    const Tensor n = ops::scalar_tensor(number, ops::result_type(t, number), t.device());
    return number_first ? binary_op(id, n, t) : binary_op(id, t, n);
  }
  // add, sub, mul, div, remainder and the comparisons take the number by value.
  return number_call(id, kernel, t, number, number_first);
}

Tensor binary_op(const char* name, const Tensor& a, const Scalar& b) {
  return binary_op_with_number(op_from_name_or_throw(name, "binary_op"), a, b,
                               /*number_first=*/false);
}
Tensor binary_op(const char* name, const Scalar& a, const Tensor& b) {
  return binary_op_with_number(op_from_name_or_throw(name, "binary_op"), b, a,
                               /*number_first=*/true);
}
Tensor binary_op(OpId id, const Tensor& a, const Scalar& b) {
  return binary_op_with_number(id, a, b, /*number_first=*/false);
}
Tensor binary_op(OpId id, const Scalar& a, const Tensor& b) {
  return binary_op_with_number(id, b, a, /*number_first=*/true);
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  OpCall call(OpId::Where, a);
  Tensor out;
  if (!OpCall::records(a, b)) {
    out = ops::where(condition, a, b);
  } else {
    out = below_autograd([&] { return ops::where(condition, a, b); });
    auto node = make_node<autograd::WhereBackward>(call.op(), a, b);
    node->condition = SavedTensor(condition, SavedTensor::kInput);
    set_history(out, std::move(node));
  }
  if (call.reported()) call.report({condition, a, b}, {}, {out});
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
}  // namespace rcuda
