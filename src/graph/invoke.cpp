// The replay table: how each op runs again from a recorded node (docs/graph.md). One entry per
// OpId, in OpId's order; nullptr for ops a graph cannot hold yet (a trace refuses them by name)
// and for creation ops, whose results a trace keeps as constants.
#include <iterator>

#include "rcuda/core/error.h"
#include "rcuda/graph/graph.h"
#include "replay.h"

namespace rcuda::graph {
namespace {

using namespace replay;  // NOLINT(google-build-using-namespace): the table reads better

struct Entry {
  OpId op;
  Replay run;
};

constexpr Entry kReplay[] = {
    {OpId::Neg, unary}, {OpId::Abs, unary}, {OpId::Sign, unary}, {OpId::Exp, unary},
    {OpId::Expm1, unary}, {OpId::Log, unary}, {OpId::Log1p, unary}, {OpId::Sqrt, unary},
    {OpId::Rsqrt, unary}, {OpId::Sin, unary}, {OpId::Cos, unary}, {OpId::Tanh, unary},
    {OpId::Sigmoid, unary}, {OpId::Relu, unary}, {OpId::Gelu, unary}, {OpId::Silu, unary},
    {OpId::Floor, unary}, {OpId::Ceil, unary}, {OpId::Round, unary}, {OpId::Tan, unary},
    {OpId::Asin, unary}, {OpId::Acos, unary}, {OpId::Atan, unary}, {OpId::Sinh, unary},
    {OpId::Cosh, unary}, {OpId::Asinh, unary}, {OpId::Acosh, unary}, {OpId::Atanh, unary},
    {OpId::Trunc, unary}, {OpId::Erf, unary}, {OpId::Erfc, unary}, {OpId::Erfinv, unary},
    {OpId::Lgamma, unary}, {OpId::Digamma, unary}, {OpId::Log2, unary}, {OpId::Log10, unary},
    {OpId::Exp2, unary}, {OpId::Reciprocal, unary}, {OpId::Clamp, unary},
    {OpId::LeakyRelu, unary}, {OpId::Elu, unary}, {OpId::Softplus, unary},
    {OpId::Hardtanh, unary}, {OpId::LogicalNot, unary},
    {OpId::Add, binary}, {OpId::Sub, binary}, {OpId::Mul, binary}, {OpId::Div, binary},
    {OpId::Remainder, binary}, {OpId::Pow, binary}, {OpId::Maximum, binary},
    {OpId::Minimum, binary}, {OpId::Atan2, binary}, {OpId::FloorDivide, binary},
    {OpId::Eq, binary}, {OpId::Ne, binary}, {OpId::Lt, binary}, {OpId::Le, binary},
    {OpId::Gt, binary}, {OpId::Ge, binary}, {OpId::LogicalAnd, binary},
    {OpId::LogicalOr, binary}, {OpId::LogicalXor, binary}, {OpId::Where, where},
    {OpId::AddInplace, inplace}, {OpId::MulInplace, inplace}, {OpId::CopyInplace, inplace},
    {OpId::FillInplace, inplace}, {OpId::UniformInplace, inplace},
    {OpId::NormalInplace, inplace}, {OpId::IndexPut, index_put},
    {OpId::To, conversion}, {OpId::Contiguous, conversion}, {OpId::Clone, conversion},
    {OpId::Reshape, conversion}, {OpId::Flatten, conversion},
    {OpId::View, view}, {OpId::Permute, view}, {OpId::Transpose, view}, {OpId::Slice, view},
    {OpId::Select, view}, {OpId::Expand, view}, {OpId::Diagonal, view},
    {OpId::AsStrided, view},
    // Creation: a trace keeps what they made as constants.
    {OpId::Zeros, nullptr}, {OpId::Ones, nullptr}, {OpId::Full, nullptr},
    {OpId::Empty, nullptr}, {OpId::Arange, nullptr}, {OpId::Linspace, nullptr},
    {OpId::Eye, nullptr}, {OpId::FromData, nullptr}, {OpId::Rand, nullptr},
    {OpId::Randn, nullptr}, {OpId::Randint, nullptr}, {OpId::Normal, nullptr},
    {OpId::Sum, reduction}, {OpId::Mean, reduction}, {OpId::Prod, reduction},
    {OpId::Max, reduction}, {OpId::Min, reduction}, {OpId::Var, reduction},
    {OpId::Std, reduction}, {OpId::Norm, reduction}, {OpId::Logsumexp, reduction},
    {OpId::Softmax, reduction}, {OpId::LogSoftmax, reduction}, {OpId::Cumsum, reduction},
    {OpId::All, reduction}, {OpId::Any, reduction}, {OpId::Argmax, reduction},
    {OpId::Argmin, reduction},
    {OpId::Sort, sorting}, {OpId::Topk, sorting}, {OpId::Kthvalue, sorting},
    {OpId::Median, sorting}, {OpId::Mode, sorting}, {OpId::Cummax, sorting},
    {OpId::Cummin, sorting}, {OpId::Cumprod, reduction}, {OpId::Logcumsumexp, sorting},
    {OpId::Quantile, sorting}, {OpId::Argsort, sorting},
    {OpId::Matmul, product}, {OpId::Mm, product}, {OpId::Bmm, product}, {OpId::Addmm, product},
    // fp8: its scales belong to fp8 linear's scaling state, which is not a graph value yet.
    {OpId::ScaledMm, nullptr},
    {OpId::LinalgSolve, linalg}, {OpId::LinalgInv, linalg}, {OpId::LinalgDet, linalg},
    {OpId::LinalgSlogdet, linalg}, {OpId::LinalgCholesky, linalg}, {OpId::LinalgQr, linalg},
    {OpId::LinalgSvd, linalg}, {OpId::LinalgSvdvals, linalg}, {OpId::LinalgEigh, linalg},
    {OpId::LinalgEigvalsh, linalg}, {OpId::LinalgTensorinv, linalg},
    {OpId::LinalgTensorsolve, linalg}, {OpId::LinalgPinv, linalg}, {OpId::LinalgCond, linalg},
    {OpId::Cat, indexing}, {OpId::Stack, indexing}, {OpId::IndexSelect, indexing},
    {OpId::Gather, indexing}, {OpId::Scatter, scattering}, {OpId::ScatterAdd, scattering},
    {OpId::MaskedFill, indexing}, {OpId::MaskedSelect, scattering},
    {OpId::Nonzero, scattering}, {OpId::OneHot, scattering},
    {OpId::Linear, layer}, {OpId::Dropout, layer}, {OpId::LayerNorm, normalization},
    {OpId::Embedding, layer},
    // fp8 linear's scaling state (amax history, scale) is not a graph value yet: a replay could
    // not step it as the call did.
    {OpId::Fp8Linear, nullptr}, {OpId::Conv1d, convolution},
    {OpId::Conv2d, convolution}, {OpId::ConvTranspose2d, convolution},
    {OpId::MaxPool1d, pool}, {OpId::MaxPool2d, pool}, {OpId::AvgPool1d, pool},
    {OpId::AvgPool2d, pool}, {OpId::AdaptiveAvgPool2d, pool}, {OpId::AdaptiveMaxPool2d, pool},
    {OpId::BatchNorm, normalization}, {OpId::GroupNorm, normalization},
    {OpId::InstanceNorm, normalization}, {OpId::Pad, resample},
    {OpId::Interpolate, resample}, {OpId::Rnn, recurrent}, {OpId::Lstm, recurrent},
    {OpId::Gru, recurrent},
    {OpId::MseLoss, loss}, {OpId::L1Loss, loss}, {OpId::SmoothL1Loss, loss},
    {OpId::HuberLoss, loss}, {OpId::NllLoss, loss}, {OpId::CrossEntropy, loss},
    {OpId::BinaryCrossEntropy, loss}, {OpId::BinaryCrossEntropyWithLogits, loss},
    {OpId::KlDiv, loss},
};
static_assert(std::size(kReplay) == kOpCount, "every OpId needs a replay entry (or nullptr)");

constexpr bool replay_in_order() {
  for (std::size_t i = 0; i < std::size(kReplay); ++i)
    if (op_index(kReplay[i].op) != i) return false;
  return true;
}
static_assert(replay_in_order(), "kReplay must list the ops in OpId's order");

}  // namespace

bool can_invoke(OpId op) { return op_index(op) < kOpCount && kReplay[op_index(op)].run; }

std::vector<Tensor> invoke(OpId op, const std::vector<Tensor>& inputs, const Attributes& attrs) {
  RCUDA_CHECK(can_invoke(op), ValueError, "graph: op ", op_name(op),
              " cannot run from a graph yet (docs/graph.md lists the ops that can)");
  return kReplay[op_index(op)].run(op, inputs, attrs);
}

}  // namespace rcuda::graph
