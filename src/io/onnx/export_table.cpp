// The ONNX export table: for every OpId, the function that adds its ONNX nodes, or nullptr
// where the op has no ONNX form (export then fails naming it). Indexed by OpId, in OpId's order
// (Note [The op as a value] in rcuda/core/op.h): a new op does not compile until it is listed.
#include <iterator>

#include "io/onnx/mappings.h"

namespace rcuda::io::onnx_export {
namespace {

struct Entry {
  OpId op;
  ExportFn fn;
};

// Captureless lambdas bind a family's function to its ONNX op.
#define RCUDA_ONNX(fn, ...) [](Builder& b) { fn(b, __VA_ARGS__); }

constexpr Entry kTable[] = {
    // Elementwise, one tensor.
    {OpId::Neg, RCUDA_ONNX(unary, "Neg")},
    {OpId::Abs, RCUDA_ONNX(unary, "Abs")},
    {OpId::Sign, RCUDA_ONNX(unary, "Sign")},
    {OpId::Exp, RCUDA_ONNX(unary, "Exp")},
    {OpId::Expm1, expm1},
    {OpId::Log, RCUDA_ONNX(unary, "Log")},
    {OpId::Log1p, log1p},
    {OpId::Sqrt, RCUDA_ONNX(unary, "Sqrt")},
    {OpId::Rsqrt, rsqrt},
    {OpId::Sin, RCUDA_ONNX(unary, "Sin")},
    {OpId::Cos, RCUDA_ONNX(unary, "Cos")},
    {OpId::Tanh, RCUDA_ONNX(unary, "Tanh")},
    {OpId::Sigmoid, RCUDA_ONNX(unary, "Sigmoid")},
    {OpId::Relu, RCUDA_ONNX(unary, "Relu")},
    {OpId::Gelu, gelu},
    {OpId::Silu, silu},
    {OpId::Floor, RCUDA_ONNX(unary, "Floor")},
    {OpId::Ceil, RCUDA_ONNX(unary, "Ceil")},
    // Both round half to even.
    {OpId::Round, RCUDA_ONNX(unary, "Round")},
    {OpId::Tan, RCUDA_ONNX(unary, "Tan")},
    {OpId::Asin, RCUDA_ONNX(unary, "Asin")},
    {OpId::Acos, RCUDA_ONNX(unary, "Acos")},
    {OpId::Atan, RCUDA_ONNX(unary, "Atan")},
    {OpId::Sinh, RCUDA_ONNX(unary, "Sinh")},
    {OpId::Cosh, RCUDA_ONNX(unary, "Cosh")},
    {OpId::Asinh, RCUDA_ONNX(unary, "Asinh")},
    {OpId::Acosh, RCUDA_ONNX(unary, "Acosh")},
    {OpId::Atanh, RCUDA_ONNX(unary, "Atanh")},
    {OpId::Trunc, trunc},
    {OpId::Erf, RCUDA_ONNX(unary, "Erf")},
    {OpId::Erfc, erfc},
    {OpId::Erfinv, nullptr},
    {OpId::Lgamma, nullptr},
    {OpId::Digamma, nullptr},
    {OpId::Log2, log2},
    {OpId::Log10, log10},
    {OpId::Exp2, exp2},
    {OpId::Reciprocal, RCUDA_ONNX(unary, "Reciprocal")},
    {OpId::Clamp, clamp},
    {OpId::LeakyRelu, leaky_relu},
    {OpId::Elu, elu},
    {OpId::Softplus, softplus},
    {OpId::Hardtanh, hardtanh},
    {OpId::LogicalNot, logical_not},
    // Elementwise, two operands.
    {OpId::Add, RCUDA_ONNX(arithmetic, "Add")},
    {OpId::Sub, RCUDA_ONNX(arithmetic, "Sub")},
    {OpId::Mul, RCUDA_ONNX(arithmetic, "Mul")},
    {OpId::Div, RCUDA_ONNX(arithmetic, "Div")},
    {OpId::Remainder, remainder},
    {OpId::Pow, RCUDA_ONNX(arithmetic, "Pow")},
    {OpId::Maximum, RCUDA_ONNX(arithmetic, "Max")},
    {OpId::Minimum, RCUDA_ONNX(arithmetic, "Min")},
    {OpId::Atan2, atan2},
    {OpId::FloorDivide, floor_divide},
    {OpId::Eq, RCUDA_ONNX(comparison, "Equal", false)},
    {OpId::Ne, RCUDA_ONNX(comparison, "Equal", true)},
    {OpId::Lt, RCUDA_ONNX(comparison, "Less", false)},
    {OpId::Le, RCUDA_ONNX(comparison, "LessOrEqual", false)},
    {OpId::Gt, RCUDA_ONNX(comparison, "Greater", false)},
    {OpId::Ge, RCUDA_ONNX(comparison, "GreaterOrEqual", false)},
    {OpId::LogicalAnd, RCUDA_ONNX(logical, "And")},
    {OpId::LogicalOr, RCUDA_ONNX(logical, "Or")},
    {OpId::LogicalXor, RCUDA_ONNX(logical, "Xor")},
    {OpId::Where, where},
    // In place: an ONNX graph has no mutation.
    {OpId::AddInplace, nullptr},
    {OpId::MulInplace, nullptr},
    {OpId::CopyInplace, nullptr},
    {OpId::FillInplace, nullptr},
    {OpId::UniformInplace, nullptr},
    {OpId::NormalInplace, nullptr},
    {OpId::IndexPut, nullptr},
    // Conversions and copies.
    {OpId::To, to},
    {OpId::Contiguous, identity},
    {OpId::Clone, identity},
    {OpId::Reshape, reshape},
    {OpId::Flatten, flatten},
    // Views.
    {OpId::View, reshape},
    {OpId::Permute, permute},
    {OpId::Transpose, transpose},
    {OpId::Slice, slice},
    {OpId::Select, select},
    {OpId::Expand, expand},
    {OpId::Diagonal, nullptr},
    {OpId::AsStrided, nullptr},
    // Creation and random numbers: a trace keeps their results as constants.
    {OpId::Zeros, nullptr},
    {OpId::Ones, nullptr},
    {OpId::Full, nullptr},
    {OpId::Empty, nullptr},
    {OpId::Arange, nullptr},
    {OpId::Linspace, nullptr},
    {OpId::Eye, nullptr},
    {OpId::FromData, nullptr},
    {OpId::Rand, nullptr},
    {OpId::Randn, nullptr},
    {OpId::Randint, nullptr},
    {OpId::Normal, nullptr},
    // Reductions and scans.
    {OpId::Sum, RCUDA_ONNX(reduce_dims, "ReduceSum")},
    {OpId::Mean, RCUDA_ONNX(reduce_dims, "ReduceMean")},
    {OpId::Prod, RCUDA_ONNX(reduce_dims, "ReduceProd")},
    {OpId::Max, RCUDA_ONNX(max_min, true)},
    {OpId::Min, RCUDA_ONNX(max_min, false)},
    {OpId::Var, RCUDA_ONNX(var_std, false)},
    {OpId::Std, RCUDA_ONNX(var_std, true)},
    {OpId::Norm, norm},
    {OpId::Logsumexp, logsumexp},
    {OpId::Softmax, RCUDA_ONNX(softmax, "Softmax")},
    {OpId::LogSoftmax, RCUDA_ONNX(softmax, "LogSoftmax")},
    {OpId::Cumsum, cumsum},
    {OpId::All, RCUDA_ONNX(all_any, true)},
    {OpId::Any, RCUDA_ONNX(all_any, false)},
    {OpId::Argmax, RCUDA_ONNX(arg_max_min, true)},
    {OpId::Argmin, RCUDA_ONNX(arg_max_min, false)},
    // Sorting and cumulative ops.
    {OpId::Sort, nullptr},
    {OpId::Topk, nullptr},
    {OpId::Kthvalue, nullptr},
    {OpId::Median, nullptr},
    {OpId::Mode, nullptr},
    {OpId::Cummax, nullptr},
    {OpId::Cummin, nullptr},
    {OpId::Cumprod, nullptr},
    {OpId::Logcumsumexp, nullptr},
    {OpId::Quantile, nullptr},
    {OpId::Argsort, nullptr},
    // Matrix products and linear algebra.
    {OpId::Matmul, matmul},
    {OpId::Mm, matmul},
    {OpId::Bmm, matmul},
    {OpId::Addmm, addmm},
    {OpId::ScaledMm, nullptr},
    {OpId::LinalgSolve, nullptr},
    {OpId::LinalgInv, nullptr},
    {OpId::LinalgDet, nullptr},
    {OpId::LinalgSlogdet, nullptr},
    {OpId::LinalgCholesky, nullptr},
    {OpId::LinalgQr, nullptr},
    {OpId::LinalgSvd, nullptr},
    {OpId::LinalgSvdvals, nullptr},
    {OpId::LinalgEigh, nullptr},
    {OpId::LinalgEigvalsh, nullptr},
    {OpId::LinalgTensorinv, nullptr},
    {OpId::LinalgTensorsolve, nullptr},
    {OpId::LinalgPinv, nullptr},
    {OpId::LinalgCond, nullptr},
    // Joining, splitting, indexing.
    {OpId::Cat, cat},
    {OpId::Stack, stack},
    {OpId::IndexSelect, index_select},
    {OpId::Gather, gather},
    {OpId::Scatter, nullptr},
    {OpId::ScatterAdd, nullptr},
    {OpId::MaskedFill, masked_fill},
    {OpId::MaskedSelect, nullptr},
    {OpId::Nonzero, nullptr},
    {OpId::OneHot, nullptr},
    // Layers.
    {OpId::Linear, linear},
    {OpId::Dropout, dropout},
    {OpId::LayerNorm, layer_norm},
    {OpId::Embedding, embedding},
    {OpId::Fp8Linear, nullptr},
    {OpId::Conv1d, conv},
    {OpId::Conv2d, conv},
    {OpId::ConvTranspose2d, conv_transpose2d},
    {OpId::MaxPool1d, max_pool},
    {OpId::MaxPool2d, max_pool},
    {OpId::AvgPool1d, avg_pool},
    {OpId::AvgPool2d, avg_pool},
    {OpId::AdaptiveAvgPool2d, RCUDA_ONNX(adaptive_pool2d, false)},
    {OpId::AdaptiveMaxPool2d, RCUDA_ONNX(adaptive_pool2d, true)},
    {OpId::BatchNorm, batch_norm},
    {OpId::GroupNorm, group_norm},
    {OpId::InstanceNorm, instance_norm},
    {OpId::Pad, pad},
    {OpId::Interpolate, interpolate},
    {OpId::Rnn, recurrent},
    {OpId::Lstm, recurrent},
    {OpId::Gru, recurrent},
    // Losses: training objectives, not part of an inference model.
    {OpId::MseLoss, nullptr},
    {OpId::L1Loss, nullptr},
    {OpId::SmoothL1Loss, nullptr},
    {OpId::HuberLoss, nullptr},
    {OpId::NllLoss, nullptr},
    {OpId::CrossEntropy, nullptr},
    {OpId::BinaryCrossEntropy, nullptr},
    {OpId::BinaryCrossEntropyWithLogits, nullptr},
    {OpId::KlDiv, nullptr},
};
#undef RCUDA_ONNX

static_assert(std::size(kTable) == kOpCount, "every OpId needs an entry in the ONNX export table");

constexpr bool table_in_order() {
  for (std::size_t i = 0; i < std::size(kTable); ++i)
    if (op_index(kTable[i].op) != i) return false;
  return true;
}
static_assert(table_in_order(), "the ONNX export table must list the ops in OpId's order");

}  // namespace

ExportFn export_function(OpId op) {
  return op_index(op) < kOpCount ? kTable[op_index(op)].fn : nullptr;
}

}  // namespace rcuda::io::onnx_export
