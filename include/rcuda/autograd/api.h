// The public op API: rcuda::add, rcuda::matmul, ... (Note [Two layers of ops] in
// docs/autograd.md). A differentiable function records a node for backward when grad mode is on
// and an input requires grad, then runs the no-grad op of rcuda::ops; each op's contract
// (arguments, dtypes, errors) is documented once, in rcuda/ops/<family>.h. Ops without a
// gradient (comparisons, creation, indices) are the rcuda::ops functions themselves.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rcuda/autograd/conv.h"  // convolutions: conv2d, conv1d, conv_transpose2d
#include "rcuda/autograd/rnn.h"   // recurrent layers: rnn
#include "rcuda/core/op.h"
#include "rcuda/ops/complex.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/indexing.h"
#include "rcuda/ops/linalg.h"
#include "rcuda/ops/nn.h"
#include "rcuda/ops/norm.h"
#include "rcuda/ops/pool.h"
#include "rcuda/ops/random.h"
#include "rcuda/ops/reduction.h"
#include "rcuda/ops/resample.h"
#include "rcuda/ops/sorting.h"

namespace rcuda {

// ---- elementwise (rcuda/ops/elementwise.h); gradients in src/autograd/grads/unary.cpp, binary.cpp
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor silu(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor erfc(const Tensor& x);
Tensor erfinv(const Tensor& x);
Tensor lgamma(const Tensor& x);
Tensor digamma(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max);
Tensor pow(const Tensor& x, const Scalar& exponent);
// Activations with parameters (rcuda/ops/nn.h).
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
// By name or OpId (R's by-name functions): the named op's own entry point, with its autocast.
Tensor unary_op(const char* name, const Tensor& x);
Tensor unary_op(OpId op, const Tensor& x);
Tensor logical_not(const Tensor& x);

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Scalar& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Scalar& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b);
Tensor binary_op(const char* name, const Tensor& a, const Tensor& b);
Tensor binary_op(OpId op, const Tensor& a, const Tensor& b);
// The same with a plain number on either side (as the bindings' `x * 2` and `2 - x`): it
// promotes as a number and reaches the kernel by value (Note [Numbers as operands]).
Tensor binary_op(const char* name, const Tensor& a, const Scalar& b);
Tensor binary_op(const char* name, const Scalar& a, const Tensor& b);
Tensor binary_op(OpId op, const Tensor& a, const Scalar& b);
Tensor binary_op(OpId op, const Scalar& a, const Tensor& b);
// Integer-valued results: no gradient flows through them (as torch's, which are zero).
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
inline Tensor eq(const Tensor& a, const Scalar& b) { return binary_op(OpId::Eq, a, b); }
inline Tensor ne(const Tensor& a, const Scalar& b) { return binary_op(OpId::Ne, a, b); }
inline Tensor lt(const Tensor& a, const Scalar& b) { return binary_op(OpId::Lt, a, b); }
inline Tensor le(const Tensor& a, const Scalar& b) { return binary_op(OpId::Le, a, b); }
inline Tensor gt(const Tensor& a, const Scalar& b) { return binary_op(OpId::Gt, a, b); }
inline Tensor ge(const Tensor& a, const Scalar& b) { return binary_op(OpId::Ge, a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, const Tensor& b);
// t - 1 for integer indices given 1-based (R's): a sub recorded with the attribute
// one_based_index, so that ONNX export can take the shift off where the indices are a model
// input, whose indices are 0-based as ONNX and PyTorch expect (docs/onnx.md). No gradient.
Tensor index_from_one_based(const Tensor& t);
inline Tensor floor_divide(const Tensor& a, const Scalar& b) {
  return binary_op(OpId::FloorDivide, a, b);
}
using ops::result_type;

// Complex tensors (rcuda/ops/complex.h, Note [Complex tensors]): views and composed
// arithmetic; complex tensors record no gradients.
using ops::angle;
using ops::complex;
using ops::complex_abs;
using ops::conj;
using ops::imag;
using ops::real;
using ops::view_as_complex;
using ops::view_as_real;

// In place: a leaf that requires grad is refused while grad mode is on; a tensor changed in
// place takes the op into its history (views excepted: docs/autograd.md).
const Tensor& add_(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
const Tensor& mul_(const Tensor& self, const Tensor& other);

// ---- copies, conversions, views by copy (rcuda/ops/copy.h); grads/copy.cpp -----------------
const Tensor& copy_(const Tensor& dst, const Tensor& src);
Tensor to(const Tensor& t, DType dtype);
Tensor to(const Tensor& t, Device device);
Tensor to(const Tensor& t, Device device, DType dtype);
Tensor contiguous(const Tensor& t);
Tensor contiguous(const Tensor& t, MemoryFormat format);  // ops::contiguous's, differentiable
Tensor clone(const Tensor& t);
Tensor reshape(const Tensor& t, const Shape& shape);
Tensor flatten(const Tensor& t, int64_t start_dim = 0, int64_t end_dim = -1);
using ops::item;

// ---- creation and random numbers (no gradient) ---------------------------------------------
using ops::arange;
using ops::empty;
using ops::empty_like;
using ops::eye;
using ops::from_data;
using ops::full;
using ops::full_like;
using ops::linspace;
using ops::manual_seed;
using ops::normal;
// In place: refused on a leaf that requires grad while grad mode is on (as torch; initialise
// parameters under NoGradGuard, as rcuda::nn::init does).
const Tensor& normal_(const Tensor& t, double mean = 0, double std = 1);
using ops::ones;
using ops::ones_like;
using ops::poisson;
using ops::rand;
using ops::randint;
using ops::randn;
using ops::scalar_tensor;
using ops::standard_gamma;
using ops::standard_gamma_grad;
const Tensor& uniform_(const Tensor& t, double low = 0, double high = 1);
using ops::zeros;
using ops::zeros_like;
const Tensor& fill_(const Tensor& t, const Scalar& value);

// ---- sorting and cumulative ops (rcuda/ops/sorting.h); grads/sorting.cpp --------------------
// The values of sort, topk, kthvalue, median, mode, cummax and cummin send their gradient back
// to the positions their indices name.
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                               bool stable = false);
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                               bool sorted = true);
std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim = -1,
                                   bool keepdim = false);
std::pair<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor median(const Tensor& x);
std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t dim = -1, bool keepdim = false);
std::pair<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::pair<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);
Tensor cumprod(const Tensor& x, int64_t dim);  // exact gradient with zeros
Tensor logcumsumexp(const Tensor& x, int64_t dim);
// torch.quantile: q (the input's dtype, 0-D or 1-D, values in [0, 1]) along dim, or over every
// element when dim is empty; interpolation "linear", "lower", "higher", "midpoint" or
// "nearest"; a slice with NaN gives NaN. A 1-D q puts its dim first in the result. Composed of
// sort, gather and arithmetic, which record: the gradient flows to the elements it reads.
Tensor quantile(const Tensor& x, const Tensor& q, std::optional<int64_t> dim = std::nullopt,
                bool keepdim = false, const std::string& interpolation = "linear");
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
using ops::bucketize;
using ops::histc;
using ops::randperm;
using ops::unique;
using ops::UniqueResult;

// ---- reductions (rcuda/ops/reduction.h); grads/reduction.cpp --------------------------------
Tensor sum(const Tensor& x, const Dims& dims = {}, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
// A zero in a slice gets the product of the others; two zeros give a zero gradient.
Tensor prod(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
// Over every element: tied maxima (or minima) share the gradient evenly.
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
// Along dim: values carry the gradient to the selected index; indices carry none.
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor var(const Tensor& x, const Dims& dims = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, const Dims& dims = {}, double correction = 1, bool keepdim = false);
// The subgradient at a zero norm is 0; p = 0 has gradient 0 everywhere.
Tensor norm(const Tensor& x, double p = 2, const Dims& dims = {}, bool keepdim = false);
Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim = false);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
Tensor cumsum(const Tensor& x, int64_t dim);
// Bool and index results: no gradient.
Tensor all(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor any(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

// ---- matrix products (rcuda/ops/linalg.h); grads/linalg.cpp --------------------------------
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta = 1,
             const Scalar& alpha = 1);
using ops::scaled_mm;

// ---- joining, splitting, indexing (rcuda/ops/indexing.h); grads/indexing.cpp ----------------
// Each input gets its slice of the gradient back (skipped empty 1-D inputs an empty one).
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// The pieces are views (narrow): the view hook records them (grads/views.cpp).
using ops::chunk;
using ops::split;
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// x gets the gradient where nothing was written; src (or nothing, for a value) the rest.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
Tensor masked_select(const Tensor& x, const Tensor& mask);
// Index results: no gradient.
Tensor nonzero(const Tensor& x);
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);

// ---- index_put_ (rcuda/ops/indexing.h, Note [Index lists]); grads/index_put.cpp ------------
// self[indices] = values in place (+= with accumulate). Recorded when self or values requires
// grad: values get the gradient at the positions they went to (summed where one value was
// broadcast to several, and so over duplicate positions too); self keeps the gradient except at
// the written positions (all of it with accumulate). As the other in-place ops, it refuses a
// leaf that requires grad, and a view while recording.
const Tensor& index_put_(const Tensor& self, const ops::IndexList& indices, const Tensor& values,
                         bool accumulate = false);
using ops::IndexList;

// ---- pooling and normalisation (rcuda/ops/pool.h, norm.h); grads/pool.cpp, grads/norm.cpp ---
// The input gets the gradient through each max's index or spread over each average's window;
// indices carry none. The norms differentiate with respect to input, weight and bias (with
// batch statistics, through the statistics too); running statistics are buffers, never
// differentiated, and are updated in place as ops::batch_norm says.
Tensor max_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride = {},
                  const std::vector<int64_t>& padding = {0},
                  const std::vector<int64_t>& dilation = {1}, bool ceil_mode = false);
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x,
                                                  const std::vector<int64_t>& kernel_size,
                                                  const std::vector<int64_t>& stride = {},
                                                  const std::vector<int64_t>& padding = {0},
                                                  const std::vector<int64_t>& dilation = {1},
                                                  bool ceil_mode = false);
Tensor max_pool1d(const Tensor& x, int64_t kernel_size,
                  std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                  int64_t dilation = 1, bool ceil_mode = false);
std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, int64_t kernel_size,
                                                  std::optional<int64_t> stride = std::nullopt,
                                                  int64_t padding = 0, int64_t dilation = 1,
                                                  bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, const std::vector<int64_t>& kernel_size,
                  const std::vector<int64_t>& stride = {},
                  const std::vector<int64_t>& padding = {0}, bool ceil_mode = false,
                  bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor avg_pool1d(const Tensor& x, int64_t kernel_size,
                  std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);
Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size);
std::pair<Tensor, Tensor> adaptive_max_pool2d(const Tensor& x,
                                              const std::vector<int64_t>& output_size);
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  double momentum = 0.1, double eps = 1e-5);
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
Tensor instance_norm(const Tensor& x, const Tensor& running_mean = {},
                     const Tensor& running_var = {}, const Tensor& weight = {},
                     const Tensor& bias = {}, bool use_input_stats = true, double momentum = 0.1,
                     double eps = 1e-5);

// ---- padding and interpolation (rcuda/ops/resample.h); grads/resample.cpp -------------------
// The input gets each output element's gradient at the input element(s) it was read from:
// summed where several outputs read one (reflected and replicated borders, upsampling), times
// the interpolation weight for linear modes; constant padding's new elements carry none.
// interpolate's "area" mode records adaptive_avg_pool2d.
Tensor pad(const Tensor& x, const std::vector<int64_t>& padding,
           const std::string& mode = "constant", std::optional<double> value = std::nullopt);
Tensor interpolate(const Tensor& x, const std::vector<int64_t>& size = {},
                   const std::vector<double>& scale_factor = {},
                   const std::string& mode = "nearest",
                   std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt);

}  // namespace rcuda
