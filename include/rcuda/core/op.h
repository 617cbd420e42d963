// The op as a value: one OpId for every public op, its name, and the attributes a call carries
// (Note [The op as a value]). Tables that must cover every op (autocast's policy, the ONNX
// mapping, replay) are arrays indexed by OpId with a static_assert on their size, so a new op
// does not compile until each table has chosen; a string names an op only at the edges (R,
// ONNX, printing), through op_name and op_from_name.
//
// Note [The op as a value]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Before OpId, an op was known by a different token in each layer: a string in R and in the
// autocast table, a family enum (UnaryOp, BinaryOp) in the kernels, a strcmp in the bindings.
// Now the public entry point names its OpId once, when it opens its call (rcuda/autograd/
// funnel.h); the family enums stay as the backends' kernel selectors. To add an op: append it
// below, before Count; give it a name in src/core/op.cpp; then the compiler lists the tables
// that must choose (autocast.cpp's policy, graph/replay.cpp's invoke, io/onnx's mapping).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace rcuda {

enum class OpId : uint16_t {
  // Elementwise, one tensor.
  Neg,
  Abs,
  Sign,
  Exp,
  Expm1,
  Log,
  Log1p,
  Sqrt,
  Rsqrt,
  Sin,
  Cos,
  Tanh,
  Sigmoid,
  Relu,
  Gelu,
  Silu,
  Floor,
  Ceil,
  Round,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Trunc,
  Erf,
  Erfc,
  Erfinv,
  Lgamma,
  Digamma,
  Log2,
  Log10,
  Exp2,
  Reciprocal,
  Clamp,
  LeakyRelu,
  Elu,
  Softplus,
  Hardtanh,
  LogicalNot,
  // Elementwise, two operands (a tensor and a tensor or a number).
  Add,
  Sub,
  Mul,
  Div,
  Remainder,
  Pow,
  Maximum,
  Minimum,
  Atan2,
  FloorDivide,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  LogicalAnd,
  LogicalOr,
  LogicalXor,
  Where,
  // In place.
  AddInplace,
  MulInplace,
  CopyInplace,
  FillInplace,
  UniformInplace,
  NormalInplace,
  IndexPut,
  // Conversions and copies.
  To,
  Contiguous,
  Clone,
  Reshape,
  Flatten,
  // Views (the tensor's view methods, through the view hook).
  View,
  Permute,
  Transpose,
  Slice,
  Select,
  Expand,
  Diagonal,
  AsStrided,
  // Creation and random numbers (a trace keeps their results as constants).
  Zeros,
  Ones,
  Full,
  Empty,
  Arange,
  Linspace,
  Eye,
  FromData,
  Rand,
  Randn,
  Randint,
  Normal,
  // Reductions and scans.
  Sum,
  Mean,
  Prod,
  Max,
  Min,
  Var,
  Std,
  Norm,
  Logsumexp,
  Softmax,
  LogSoftmax,
  Cumsum,
  All,
  Any,
  Argmax,
  Argmin,
  // Sorting and cumulative ops.
  Sort,
  Topk,
  Kthvalue,
  Median,
  Mode,
  Cummax,
  Cummin,
  Cumprod,
  Logcumsumexp,
  Quantile,
  Argsort,
  // Matrix products and linear algebra.
  Matmul,
  Mm,
  Bmm,
  Addmm,
  ScaledMm,
  LinalgSolve,
  LinalgInv,
  LinalgDet,
  LinalgSlogdet,
  LinalgCholesky,
  LinalgQr,
  LinalgSvd,
  LinalgSvdvals,
  LinalgEigh,
  LinalgEigvalsh,
  LinalgTensorinv,
  LinalgTensorsolve,
  LinalgPinv,
  LinalgCond,
  // Joining, splitting, indexing.
  Cat,
  Stack,
  IndexSelect,
  Gather,
  Scatter,
  ScatterAdd,
  MaskedFill,
  MaskedSelect,
  Nonzero,
  OneHot,
  // Layers (rcuda::nn).
  Linear,
  Dropout,
  LayerNorm,
  Embedding,
  Fp8Linear,
  Conv1d,
  Conv2d,
  ConvTranspose2d,
  MaxPool1d,
  MaxPool2d,
  AvgPool1d,
  AvgPool2d,
  AdaptiveAvgPool2d,
  AdaptiveMaxPool2d,
  BatchNorm,
  GroupNorm,
  InstanceNorm,
  Pad,
  Interpolate,
  Rnn,
  Lstm,
  Gru,
  // Losses.
  MseLoss,
  L1Loss,
  SmoothL1Loss,
  HuberLoss,
  NllLoss,
  CrossEntropy,
  BinaryCrossEntropy,
  BinaryCrossEntropyWithLogits,
  KlDiv,
  Count  // stays last: kOpCount
};

inline constexpr std::size_t kOpCount = static_cast<std::size_t>(OpId::Count);

inline constexpr std::size_t op_index(OpId op) { return static_cast<std::size_t>(op); }

// The op's name as users write it (torch's: "exp", "floor_divide", "max_pool2d", "add_").
const char* op_name(OpId op);
// The OpId of a name, or nullopt; op_from_name(op_name(op)) == op for every op.
std::optional<OpId> op_from_name(std::string_view name);
// As op_from_name, or ValueError naming `context` and the name.
OpId op_from_name_or_throw(std::string_view name, const char* context);

// An attribute of a call: what the op takes besides its tensors (dim, keepdim, padding, a
// number operand). Attributes are data, so a recorded call can be printed, replayed and
// exported; they are made only while something observes the calls (a trace).
using AttributeValue =
    std::variant<bool, int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<std::string, AttributeValue>> items) : items_(items) {}

  void set(std::string name, AttributeValue value);
  bool has(std::string_view name) const { return find(name) != nullptr; }
  const AttributeValue* find(std::string_view name) const;
  // The attribute as T, or ValueError naming `op`, the attribute and what it holds.
  template <typename T>
  const T& get(std::string_view name, OpId op) const;
  // The attribute as T, or `fallback` when absent.
  template <typename T>
  T get_or(std::string_view name, T fallback, OpId op) const {
    return has(name) ? get<T>(name, op) : fallback;
  }
  const std::vector<std::pair<std::string, AttributeValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }

 private:
  [[noreturn]] static void wrong_type(std::string_view name, OpId op, const AttributeValue* held);
  std::vector<std::pair<std::string, AttributeValue>> items_;
};

template <typename T>
const T& Attributes::get(std::string_view name, OpId op) const {
  const AttributeValue* v = find(name);
  if (v == nullptr) wrong_type(name, op, nullptr);
  const T* p = std::get_if<T>(v);
  if (p == nullptr) wrong_type(name, op, v);
  return *p;
}

// "dim=1, keepdim=false": how a printed graph shows a call's attributes.
std::string attributes_str(const Attributes& attrs);

}  // namespace rcuda
