// Autocast's policy for every op (Note [Autocast at the entry points] in autocast.cpp): one
// entry per OpId, in OpId's order, so that a new op does not compile until it has chosen.
//
// The entries follow PyTorch 2.11's lists (torch.amp's "CUDA Ops that can autocast to
// float16/float32" and the CPU lists), restricted to the ops rcuda has;
// tests/golden/make_golden_autocast.py checks them against PyTorch on both device types.
#include <iterator>

#include "rcuda/autograd/autocast.h"
#include "rcuda/core/op.h"

namespace rcuda::autocast {
namespace {

constexpr Policy kLow = Policy::LowerPrecision;
constexpr Policy kF32 = Policy::Float32;
constexpr Policy kF16 = Policy::Float16;
constexpr Policy kAsIs = Policy::AsIs;

struct Entry {
  OpId op;
  Policy cuda;
  Policy cpu;
};

// Matrix products, linear layers, convolutions and recurrent layers take the region's dtype;
// ops whose range or accumulation needs it take float32. On CUDA, PyTorch's cuDNN RNN autocast
// casts to float16 even in a bfloat16 region (seen on the GPU machine with PyTorch 2.11: its
// LSTM, GRU and RNN return float16 there); on the CPU its GRU keeps its input dtype.
constexpr Entry kPolicies[] = {
    {OpId::Neg, kAsIs, kAsIs},
    {OpId::Abs, kAsIs, kAsIs},
    {OpId::Sign, kAsIs, kAsIs},
    {OpId::Exp, kF32, kAsIs},
    {OpId::Expm1, kF32, kAsIs},
    {OpId::Log, kF32, kAsIs},
    {OpId::Log1p, kF32, kAsIs},
    {OpId::Sqrt, kAsIs, kAsIs},
    {OpId::Rsqrt, kF32, kAsIs},
    {OpId::Sin, kAsIs, kAsIs},
    {OpId::Cos, kAsIs, kAsIs},
    {OpId::Tanh, kAsIs, kAsIs},
    {OpId::Sigmoid, kAsIs, kAsIs},
    {OpId::Relu, kAsIs, kAsIs},
    {OpId::Gelu, kAsIs, kAsIs},
    {OpId::Silu, kAsIs, kAsIs},
    {OpId::Floor, kAsIs, kAsIs},
    {OpId::Ceil, kAsIs, kAsIs},
    {OpId::Round, kAsIs, kAsIs},
    {OpId::Tan, kF32, kAsIs},
    {OpId::Asin, kF32, kAsIs},
    {OpId::Acos, kF32, kAsIs},
    {OpId::Atan, kAsIs, kAsIs},
    {OpId::Sinh, kF32, kAsIs},
    {OpId::Cosh, kF32, kAsIs},
    {OpId::Asinh, kAsIs, kAsIs},
    {OpId::Acosh, kAsIs, kAsIs},
    {OpId::Atanh, kAsIs, kAsIs},
    {OpId::Trunc, kAsIs, kAsIs},
    {OpId::Erf, kAsIs, kAsIs},
    {OpId::Erfc, kAsIs, kAsIs},
    {OpId::Erfinv, kF32, kAsIs},
    {OpId::Lgamma, kAsIs, kAsIs},
    {OpId::Digamma, kAsIs, kAsIs},
    {OpId::Log2, kF32, kAsIs},
    {OpId::Log10, kF32, kAsIs},
    {OpId::Exp2, kAsIs, kAsIs},
    {OpId::Reciprocal, kF32, kAsIs},
    {OpId::Clamp, kAsIs, kAsIs},
    {OpId::LeakyRelu, kAsIs, kAsIs},
    {OpId::Elu, kAsIs, kAsIs},
    {OpId::Softplus, kF32, kAsIs},
    {OpId::Hardtanh, kAsIs, kAsIs},
    {OpId::LogicalNot, kAsIs, kAsIs},
    {OpId::Add, kAsIs, kAsIs},
    {OpId::Sub, kAsIs, kAsIs},
    {OpId::Mul, kAsIs, kAsIs},
    {OpId::Div, kAsIs, kAsIs},
    {OpId::Remainder, kAsIs, kAsIs},
    {OpId::Pow, kF32, kAsIs},
    {OpId::Maximum, kAsIs, kAsIs},
    {OpId::Minimum, kAsIs, kAsIs},
    {OpId::Atan2, kAsIs, kAsIs},
    {OpId::FloorDivide, kAsIs, kAsIs},
    {OpId::Eq, kAsIs, kAsIs},
    {OpId::Ne, kAsIs, kAsIs},
    {OpId::Lt, kAsIs, kAsIs},
    {OpId::Le, kAsIs, kAsIs},
    {OpId::Gt, kAsIs, kAsIs},
    {OpId::Ge, kAsIs, kAsIs},
    {OpId::LogicalAnd, kAsIs, kAsIs},
    {OpId::LogicalOr, kAsIs, kAsIs},
    {OpId::LogicalXor, kAsIs, kAsIs},
    {OpId::Where, kAsIs, kAsIs},
    {OpId::AddInplace, kAsIs, kAsIs},
    {OpId::MulInplace, kAsIs, kAsIs},
    {OpId::CopyInplace, kAsIs, kAsIs},
    {OpId::FillInplace, kAsIs, kAsIs},
    {OpId::UniformInplace, kAsIs, kAsIs},
    {OpId::NormalInplace, kAsIs, kAsIs},
    {OpId::IndexPut, kAsIs, kAsIs},
    {OpId::To, kAsIs, kAsIs},
    {OpId::Contiguous, kAsIs, kAsIs},
    {OpId::Clone, kAsIs, kAsIs},
    {OpId::Reshape, kAsIs, kAsIs},
    {OpId::Flatten, kAsIs, kAsIs},
    {OpId::View, kAsIs, kAsIs},
    {OpId::Permute, kAsIs, kAsIs},
    {OpId::Transpose, kAsIs, kAsIs},
    {OpId::Slice, kAsIs, kAsIs},
    {OpId::Select, kAsIs, kAsIs},
    {OpId::Expand, kAsIs, kAsIs},
    {OpId::Diagonal, kAsIs, kAsIs},
    {OpId::AsStrided, kAsIs, kAsIs},
    {OpId::Zeros, kAsIs, kAsIs},
    {OpId::Ones, kAsIs, kAsIs},
    {OpId::Full, kAsIs, kAsIs},
    {OpId::Empty, kAsIs, kAsIs},
    {OpId::Arange, kAsIs, kAsIs},
    {OpId::Linspace, kAsIs, kAsIs},
    {OpId::Eye, kAsIs, kAsIs},
    {OpId::FromData, kAsIs, kAsIs},
    {OpId::Rand, kAsIs, kAsIs},
    {OpId::Randn, kAsIs, kAsIs},
    {OpId::Randint, kAsIs, kAsIs},
    {OpId::Normal, kAsIs, kAsIs},
    {OpId::Sum, kF32, kAsIs},
    {OpId::Mean, kAsIs, kAsIs},
    {OpId::Prod, kF32, kF32},
    {OpId::Max, kAsIs, kAsIs},
    {OpId::Min, kAsIs, kAsIs},
    {OpId::Var, kAsIs, kAsIs},
    {OpId::Std, kAsIs, kAsIs},
    {OpId::Norm, kF32, kAsIs},
    {OpId::Logsumexp, kAsIs, kAsIs},
    {OpId::Softmax, kF32, kAsIs},
    {OpId::LogSoftmax, kF32, kAsIs},
    {OpId::Cumsum, kF32, kAsIs},
    {OpId::All, kAsIs, kAsIs},
    {OpId::Any, kAsIs, kAsIs},
    {OpId::Argmax, kAsIs, kAsIs},
    {OpId::Argmin, kAsIs, kAsIs},
    {OpId::Sort, kAsIs, kAsIs},
    {OpId::Topk, kAsIs, kAsIs},
    {OpId::Kthvalue, kAsIs, kAsIs},
    {OpId::Median, kAsIs, kAsIs},
    {OpId::Mode, kAsIs, kAsIs},
    {OpId::Cummax, kAsIs, kAsIs},
    {OpId::Cummin, kAsIs, kAsIs},
    {OpId::Cumprod, kF32, kAsIs},
    {OpId::Logcumsumexp, kAsIs, kAsIs},
    {OpId::Quantile, kAsIs, kAsIs},
    {OpId::Argsort, kAsIs, kAsIs},
    {OpId::Matmul, kLow, kLow},
    {OpId::Mm, kLow, kLow},
    {OpId::Bmm, kLow, kLow},
    {OpId::Addmm, kLow, kLow},
    {OpId::ScaledMm, kAsIs, kAsIs},
    {OpId::LinalgSolve, kAsIs, kAsIs},
    {OpId::LinalgInv, kAsIs, kAsIs},
    {OpId::LinalgDet, kAsIs, kAsIs},
    {OpId::LinalgSlogdet, kAsIs, kAsIs},
    {OpId::LinalgCholesky, kAsIs, kAsIs},
    {OpId::LinalgQr, kAsIs, kAsIs},
    {OpId::LinalgSvd, kAsIs, kAsIs},
    {OpId::LinalgSvdvals, kAsIs, kAsIs},
    {OpId::LinalgEigh, kAsIs, kAsIs},
    {OpId::LinalgEigvalsh, kAsIs, kAsIs},
    {OpId::LinalgTensorinv, kAsIs, kAsIs},
    {OpId::LinalgTensorsolve, kAsIs, kAsIs},
    {OpId::LinalgPinv, kAsIs, kAsIs},
    {OpId::LinalgCond, kAsIs, kAsIs},
    {OpId::Cat, kAsIs, kAsIs},
    {OpId::Stack, kAsIs, kAsIs},
    {OpId::IndexSelect, kAsIs, kAsIs},
    {OpId::Gather, kAsIs, kAsIs},
    {OpId::Scatter, kAsIs, kAsIs},
    {OpId::ScatterAdd, kAsIs, kAsIs},
    {OpId::MaskedFill, kAsIs, kAsIs},
    {OpId::MaskedSelect, kAsIs, kAsIs},
    {OpId::Nonzero, kAsIs, kAsIs},
    {OpId::OneHot, kAsIs, kAsIs},
    {OpId::Linear, kLow, kLow},
    {OpId::Dropout, kAsIs, kAsIs},
    {OpId::LayerNorm, kF32, kAsIs},
    {OpId::Embedding, kAsIs, kAsIs},
    {OpId::Fp8Linear, kAsIs, kAsIs},
    {OpId::Conv1d, kLow, kLow},
    {OpId::Conv2d, kLow, kLow},
    {OpId::ConvTranspose2d, kLow, kLow},
    {OpId::MaxPool1d, kAsIs, kAsIs},
    {OpId::MaxPool2d, kAsIs, kAsIs},
    {OpId::AvgPool1d, kAsIs, kAsIs},
    {OpId::AvgPool2d, kAsIs, kAsIs},
    {OpId::AdaptiveAvgPool2d, kAsIs, kAsIs},
    {OpId::AdaptiveMaxPool2d, kAsIs, kAsIs},
    {OpId::BatchNorm, kAsIs, kAsIs},
    {OpId::GroupNorm, kF32, kAsIs},
    {OpId::InstanceNorm, kAsIs, kAsIs},
    {OpId::Pad, kAsIs, kAsIs},
    {OpId::Interpolate, kAsIs, kAsIs},
    {OpId::Rnn, kF16, kLow},
    {OpId::Lstm, kF16, kLow},
    {OpId::Gru, kF16, kAsIs},
    {OpId::MseLoss, kF32, kF32},
    {OpId::L1Loss, kF32, kF32},
    {OpId::SmoothL1Loss, kF32, kF32},
    {OpId::HuberLoss, kF32, kF32},
    {OpId::NllLoss, kF32, kF32},
    {OpId::CrossEntropy, kF32, kF32},
    {OpId::BinaryCrossEntropy, kF32, kF32},
    {OpId::BinaryCrossEntropyWithLogits, kF32, kF32},
    {OpId::KlDiv, kF32, kF32},
};
static_assert(std::size(kPolicies) == kOpCount, "every OpId needs an autocast policy");

constexpr bool policies_in_order() {
  for (std::size_t i = 0; i < std::size(kPolicies); ++i)
    if (op_index(kPolicies[i].op) != i) return false;
  return true;
}
static_assert(policies_in_order(), "kPolicies must list the ops in OpId's order");

}  // namespace

Policy policy(OpId op, DeviceType device_type) {
  const Entry& e = kPolicies[op_index(op)];
  return device_type == DeviceType::CUDA ? e.cuda : e.cpu;
}

}  // namespace rcuda::autocast
