// OpId's names (Note [The op as a value] in rcuda/core/op.h) and call attributes.
#include "rcuda/core/op.h"

#include <array>
#include <sstream>
#include <unordered_map>

#include "rcuda/core/error.h"

namespace rcuda {
namespace {

struct Named {
  OpId op;
  const char* name;
};

// Each entry names its op, so that a misplaced line fails the static_assert below instead of
// naming a neighbour.
constexpr Named kNames[] = {
    {OpId::Neg, "neg"},
    {OpId::Abs, "abs"},
    {OpId::Sign, "sign"},
    {OpId::Exp, "exp"},
    {OpId::Expm1, "expm1"},
    {OpId::Log, "log"},
    {OpId::Log1p, "log1p"},
    {OpId::Sqrt, "sqrt"},
    {OpId::Rsqrt, "rsqrt"},
    {OpId::Sin, "sin"},
    {OpId::Cos, "cos"},
    {OpId::Tanh, "tanh"},
    {OpId::Sigmoid, "sigmoid"},
    {OpId::Relu, "relu"},
    {OpId::Gelu, "gelu"},
    {OpId::Silu, "silu"},
    {OpId::Floor, "floor"},
    {OpId::Ceil, "ceil"},
    {OpId::Round, "round"},
    {OpId::Tan, "tan"},
    {OpId::Asin, "asin"},
    {OpId::Acos, "acos"},
    {OpId::Atan, "atan"},
    {OpId::Sinh, "sinh"},
    {OpId::Cosh, "cosh"},
    {OpId::Asinh, "asinh"},
    {OpId::Acosh, "acosh"},
    {OpId::Atanh, "atanh"},
    {OpId::Trunc, "trunc"},
    {OpId::Erf, "erf"},
    {OpId::Erfc, "erfc"},
    {OpId::Erfinv, "erfinv"},
    {OpId::Lgamma, "lgamma"},
    {OpId::Digamma, "digamma"},
    {OpId::Log2, "log2"},
    {OpId::Log10, "log10"},
    {OpId::Exp2, "exp2"},
    {OpId::Reciprocal, "reciprocal"},
    {OpId::Clamp, "clamp"},
    {OpId::LeakyRelu, "leaky_relu"},
    {OpId::Elu, "elu"},
    {OpId::Softplus, "softplus"},
    {OpId::Hardtanh, "hardtanh"},
    {OpId::LogicalNot, "logical_not"},
    {OpId::Add, "add"},
    {OpId::Sub, "sub"},
    {OpId::Mul, "mul"},
    {OpId::Div, "div"},
    {OpId::Remainder, "remainder"},
    {OpId::Pow, "pow"},
    {OpId::Maximum, "maximum"},
    {OpId::Minimum, "minimum"},
    {OpId::Atan2, "atan2"},
    {OpId::FloorDivide, "floor_divide"},
    {OpId::Eq, "eq"},
    {OpId::Ne, "ne"},
    {OpId::Lt, "lt"},
    {OpId::Le, "le"},
    {OpId::Gt, "gt"},
    {OpId::Ge, "ge"},
    {OpId::LogicalAnd, "logical_and"},
    {OpId::LogicalOr, "logical_or"},
    {OpId::LogicalXor, "logical_xor"},
    {OpId::Where, "where"},
    {OpId::AddInplace, "add_"},
    {OpId::MulInplace, "mul_"},
    {OpId::CopyInplace, "copy_"},
    {OpId::FillInplace, "fill_"},
    {OpId::UniformInplace, "uniform_"},
    {OpId::NormalInplace, "normal_"},
    {OpId::IndexPut, "index_put_"},
    {OpId::To, "to"},
    {OpId::Contiguous, "contiguous"},
    {OpId::Clone, "clone"},
    {OpId::Reshape, "reshape"},
    {OpId::Flatten, "flatten"},
    {OpId::View, "view"},
    {OpId::Permute, "permute"},
    {OpId::Transpose, "transpose"},
    {OpId::Slice, "slice"},
    {OpId::Select, "select"},
    {OpId::Expand, "expand"},
    {OpId::Diagonal, "diagonal"},
    {OpId::AsStrided, "as_strided"},
    {OpId::Zeros, "zeros"},
    {OpId::Ones, "ones"},
    {OpId::Full, "full"},
    {OpId::Empty, "empty"},
    {OpId::Arange, "arange"},
    {OpId::Linspace, "linspace"},
    {OpId::Eye, "eye"},
    {OpId::FromData, "from_data"},
    {OpId::Rand, "rand"},
    {OpId::Randn, "randn"},
    {OpId::Randint, "randint"},
    {OpId::Normal, "normal"},
    {OpId::Sum, "sum"},
    {OpId::Mean, "mean"},
    {OpId::Prod, "prod"},
    {OpId::Max, "max"},
    {OpId::Min, "min"},
    {OpId::Var, "var"},
    {OpId::Std, "std"},
    {OpId::Norm, "norm"},
    {OpId::Logsumexp, "logsumexp"},
    {OpId::Softmax, "softmax"},
    {OpId::LogSoftmax, "log_softmax"},
    {OpId::Cumsum, "cumsum"},
    {OpId::All, "all"},
    {OpId::Any, "any"},
    {OpId::Argmax, "argmax"},
    {OpId::Argmin, "argmin"},
    {OpId::Sort, "sort"},
    {OpId::Topk, "topk"},
    {OpId::Kthvalue, "kthvalue"},
    {OpId::Median, "median"},
    {OpId::Mode, "mode"},
    {OpId::Cummax, "cummax"},
    {OpId::Cummin, "cummin"},
    {OpId::Cumprod, "cumprod"},
    {OpId::Logcumsumexp, "logcumsumexp"},
    {OpId::Quantile, "quantile"},
    {OpId::Argsort, "argsort"},
    {OpId::Matmul, "matmul"},
    {OpId::Mm, "mm"},
    {OpId::Bmm, "bmm"},
    {OpId::Addmm, "addmm"},
    {OpId::ScaledMm, "scaled_mm"},
    {OpId::LinalgSolve, "linalg_solve"},
    {OpId::LinalgInv, "linalg_inv"},
    {OpId::LinalgDet, "linalg_det"},
    {OpId::LinalgSlogdet, "linalg_slogdet"},
    {OpId::LinalgCholesky, "linalg_cholesky"},
    {OpId::LinalgQr, "linalg_qr"},
    {OpId::LinalgSvd, "linalg_svd"},
    {OpId::LinalgSvdvals, "linalg_svdvals"},
    {OpId::LinalgEigh, "linalg_eigh"},
    {OpId::LinalgEigvalsh, "linalg_eigvalsh"},
    {OpId::LinalgTensorinv, "linalg_tensorinv"},
    {OpId::LinalgTensorsolve, "linalg_tensorsolve"},
    {OpId::LinalgPinv, "linalg_pinv"},
    {OpId::LinalgCond, "linalg_cond"},
    {OpId::Cat, "cat"},
    {OpId::Stack, "stack"},
    {OpId::IndexSelect, "index_select"},
    {OpId::Gather, "gather"},
    {OpId::Scatter, "scatter"},
    {OpId::ScatterAdd, "scatter_add"},
    {OpId::MaskedFill, "masked_fill"},
    {OpId::MaskedSelect, "masked_select"},
    {OpId::Nonzero, "nonzero"},
    {OpId::OneHot, "one_hot"},
    {OpId::Linear, "linear"},
    {OpId::Dropout, "dropout"},
    {OpId::LayerNorm, "layer_norm"},
    {OpId::Embedding, "embedding"},
    {OpId::Fp8Linear, "fp8_linear"},
    {OpId::Conv1d, "conv1d"},
    {OpId::Conv2d, "conv2d"},
    {OpId::ConvTranspose2d, "conv_transpose2d"},
    {OpId::MaxPool1d, "max_pool1d"},
    {OpId::MaxPool2d, "max_pool2d"},
    {OpId::AvgPool1d, "avg_pool1d"},
    {OpId::AvgPool2d, "avg_pool2d"},
    {OpId::AdaptiveAvgPool2d, "adaptive_avg_pool2d"},
    {OpId::AdaptiveMaxPool2d, "adaptive_max_pool2d"},
    {OpId::BatchNorm, "batch_norm"},
    {OpId::GroupNorm, "group_norm"},
    {OpId::InstanceNorm, "instance_norm"},
    {OpId::Pad, "pad"},
    {OpId::Interpolate, "interpolate"},
    {OpId::Rnn, "rnn"},
    {OpId::Lstm, "lstm"},
    {OpId::Gru, "gru"},
    {OpId::MseLoss, "mse_loss"},
    {OpId::L1Loss, "l1_loss"},
    {OpId::SmoothL1Loss, "smooth_l1_loss"},
    {OpId::HuberLoss, "huber_loss"},
    {OpId::NllLoss, "nll_loss"},
    {OpId::CrossEntropy, "cross_entropy"},
    {OpId::BinaryCrossEntropy, "binary_cross_entropy"},
    {OpId::BinaryCrossEntropyWithLogits, "binary_cross_entropy_with_logits"},
    {OpId::KlDiv, "kl_div"},
};
static_assert(std::size(kNames) == kOpCount, "every OpId needs a name in kNames");

constexpr bool names_in_order() {
  for (std::size_t i = 0; i < std::size(kNames); ++i)
    if (op_index(kNames[i].op) != i) return false;
  return true;
}
static_assert(names_in_order(), "kNames must list the ops in OpId's order");

const std::unordered_map<std::string_view, OpId>& by_name() {
  static const auto* map = [] {
    auto* m = new std::unordered_map<std::string_view, OpId>();
    for (const Named& n : kNames) m->emplace(n.name, n.op);
    return m;
  }();
  return *map;
}

struct Printer {
  std::ostringstream& os;
  void operator()(bool v) const { os << (v ? "true" : "false"); }
  void operator()(int64_t v) const { os << v; }
  void operator()(double v) const { os << v; }
  void operator()(const std::string& v) const { os << '"' << v << '"'; }
  template <typename T>
  void operator()(const std::vector<T>& v) const {
    os << '[';
    for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
    os << ']';
  }
};

const char* type_name(const AttributeValue& v) {
  static constexpr const char* kTypes[] = {"a bool",   "an integer",         "a number",
                                           "a string", "a list of integers", "a list of numbers"};
  return kTypes[v.index()];
}

}  // namespace

const char* op_name(OpId op) {
  RCUDA_CHECK(op_index(op) < kOpCount, InternalError, "op_name: OpId ", op_index(op),
              " is out of range (", kOpCount, " ops)");
  return kNames[op_index(op)].name;
}

std::optional<OpId> op_from_name(std::string_view name) {
  const auto& map = by_name();
  auto it = map.find(name);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

OpId op_from_name_or_throw(std::string_view name, const char* context) {
  std::optional<OpId> op = op_from_name(name);
  RCUDA_CHECK(op.has_value(), ValueError, context, ": unknown op \"", std::string(name), "\"");
  return *op;
}

void Attributes::set(std::string name, AttributeValue value) {
  for (auto& item : items_)
    if (item.first == name) {
      item.second = std::move(value);
      return;
    }
  items_.emplace_back(std::move(name), std::move(value));
}

const AttributeValue* Attributes::find(std::string_view name) const {
  for (const auto& item : items_)
    if (item.first == name) return &item.second;
  return nullptr;
}

void Attributes::wrong_type(std::string_view name, OpId op, const AttributeValue* held) {
  if (held == nullptr)
    throw ValueError(std::string(op_name(op)) + ": the call has no attribute \"" +
                     std::string(name) + "\"");
  throw ValueError(std::string(op_name(op)) + ": attribute \"" + std::string(name) + "\" holds " +
                   type_name(*held) + ", not the type the op reads");
}

std::string attributes_str(const Attributes& attrs) {
  std::ostringstream os;
  bool first = true;
  for (const auto& [name, value] : attrs.items()) {
    os << (first ? "" : ", ") << name << '=';
    std::visit(Printer{os}, value);
    first = false;
  }
  return os.str();
}

}  // namespace rcuda
