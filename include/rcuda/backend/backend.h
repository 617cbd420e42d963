// The Backend interface: the small set of primitives every device implements (CPU now, CUDA
// next). Ops (rcuda/ops/) check arguments, promote dtypes, broadcast and allocate outputs, then
// call exactly one of these per step. Primitives may assume what ops guarantee:
//
// Note [Backend contract]
// - All tensors passed to one call are on the backend's device (copy() is the exception: one
//   side may be the CPU when the backend is not the CPU's).
// - Elementwise inputs already have the output's shape (broadcast inputs arrive expanded with
//   stride 0) and the compute dtype; outputs may be non-contiguous views but never overlap inputs
//   partially (an output may be the very same view as an input, for in-place ops).
// - Reductions receive `out` in keepdim form: same rank as `in`, size 1 in every reduced dim;
//   or 0-dim, when every dim of `in` is reduced.
// - Zero-element tensors reach primitives only where the result is defined (e.g. sum -> 0).
// - Primitives throw rcuda errors for data-dependent failures (an index out of range, integer
//   division by zero); everything knowable from shapes and dtypes is checked before.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "rcuda/backend/backend_args.h"
#include "rcuda/core/scalar.h"
#include "rcuda/memory/allocator.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType device_type() const = 0;
  virtual Allocator& allocator(int device_index) = 0;
  virtual void synchronize(int device_index) = 0;

  // dst = src converted to dst's dtype; same shape; any strides.
  virtual void copy(const Tensor& dst, const Tensor& src) = 0;
  // out = the inputs joined along `dim`, as torch.cat: out is contiguous; each input is
  // contiguous, non-empty, of out's dtype and device, with out's sizes except along `dim`, where
  // they add up to out's. CUDA joins up to 64 inputs per launch: a copy per input would cost a
  // launch each, which stacking a training loop's per-batch losses pays once per batch.
  virtual void cat(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim) = 0;
  virtual void fill(const Tensor& out, const Scalar& value) = 0;
  // out contiguous 1-D: out[i] = start + i * step (int64 arithmetic for integral dtypes).
  virtual void arange(const Tensor& out, const Scalar& start, const Scalar& step) = 0;
  // out contiguous 1-D with n >= 1 points from start to end, as torch.linspace.
  virtual void linspace(const Tensor& out, double start, double end) = 0;

  // out dtype == in dtype, except LogicalNot (out Bool). Float ops on integral input are
  // never called: ops convert to float first.
  virtual void unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args) = 0;
  virtual void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) = 0;
  // out = a op number, or number op a when number_first: binary() with the number converted to
  // a's dtype as fill() converts it. CUDA passes the number to the kernel by value, where a
  // 0-dim operand would cost an allocation and a second launch (Note [Numbers as operands] in
  // src/ops/elementwise.cpp).
  virtual void binary_number(BinaryOp op, const Tensor& out, const Tensor& a, const Scalar& number,
                             bool number_first) = 0;
  // cond is Bool; a, b and out share a dtype.
  virtual void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) = 0;

  // Sum/Prod/Max/Min: in dtype == out dtype. All/Any: out Bool, any in dtype.
  // Norm: floating in == out dtype, p as given (inf, 0, or any positive).
  virtual void reduce(ReduceOp op, const Tensor& out, const Tensor& in, double p) = 0;
  // Along one dim; values has in's dtype, indices Int64; first occurrence wins ties; NaN is
  // the maximum and the minimum (propagates), as torch.
  virtual void arg_reduce(bool is_max, const Tensor& values, const Tensor& indices,
                          const Tensor& in, int64_t dim) = 0;
  // Variance over the dims where out has size 1 and in does not; floating dtypes.
  virtual void var(const Tensor& out, const Tensor& in, double correction) = 0;
  virtual void softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) = 0;
  // out dtype == in dtype.
  virtual void cumsum(const Tensor& out, const Tensor& in, int64_t dim) = 0;

  // out[b] = alpha * a[b] @ b[b] + beta * out[b]; a [B,M,K], b [B,K,N], out [B,M,N], any
  // strides (batch stride may be 0); floating dtypes, all the same. beta == 0 ignores out's
  // old contents (NaN included).
  virtual void gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha,
                    double beta) = 0;
  // torch's linear: out [M,N] = x [M,K] @ weight [N,K]^T + bias [N], with bias undefined for
  // none. x and weight any strides; bias contiguous; out contiguous; floating dtypes, all the
  // same; K may be 0. The CUDA backend adds the bias in cuBLASLt's epilogue (one kernel).
  virtual void linear(const Tensor& out, const Tensor& x, const Tensor& weight,
                      const Tensor& bias) = 0;
  // linear's parameter gradients in one pass where the backend has one: grad_weight [N,K] =
  // grad_out [M,N]^T @ x [M,K] and grad_bias [N] = grad_out summed over its M rows; grad_weight
  // and grad_bias contiguous, M > 0, floating dtypes, all the same. Returns false, having written
  // nothing, where it has none (the caller then forms them apart): the CUDA backend uses
  // cuBLASLt's bias-gradient epilogue when the heuristic offers it for the problem.
  virtual bool linear_weight_grad(const Tensor& grad_weight, const Tensor& grad_bias,
                                  const Tensor& grad_out, const Tensor& x) {
    (void)grad_weight, (void)grad_bias, (void)grad_out, (void)x;
    return false;
  }
  // out [M,N] (float32, float16 or bfloat16) = (scale_a * a) @ (scale_b * b) for float8 a [M,K]
  // row-major and b [K,N] column-major (the layouts cuBLASLt's fp8 kernels read, Note [fp8
  // operand layouts] in src/ops/linalg.cpp), K and N multiples of 16, K > 0; scale_a and
  // scale_b are 0-dim float32 tensors on the device (read there, never synchronised). bias, when
  // defined, is [N] of out's dtype, contiguous, added before out's rounding (the CUDA backend adds
  // it in cuBLASLt's epilogue for 16-bit outputs).
  virtual void scaled_gemm(const Tensor& out, const Tensor& a, const Tensor& b,
                           const Tensor& scale_a, const Tensor& scale_b, const Tensor& bias) = 0;
  // Note [Float8 casts with amax]: out = in * scale rounded to out's float8 dtype, saturated
  // (a finite value past the format's largest clamps to it, NaN stays NaN), for in [M,K]
  // contiguous floating; out [M,K] and out_t [K,M] (its transpose) contiguous float8 of one
  // dtype, either undefined for none; scale a one-element float32 read on the device; amax a
  // one-element float32 raised in place to max(amax, max |in|), NaN winning (so that a scale
  // update can tell). One pass over in; no host synchronisation.
  virtual void float8_cast(const Tensor& out, const Tensor& out_t, const Tensor& amax,
                           const Tensor& in, const Tensor& scale) = 0;
  // Delayed scaling (Note [Delayed scaling] in src/nn/fp8_linear.cpp), for each row r of
  // amax_history [R,H] (float32, contiguous): a = max of the row; new_scale[r] = fp8_max[r] / a /
  // 2^margin where a is finite and positive, else scale[r]; new_scale_inv[r] = 1 / new_scale[r];
  // then the row rolls one place (h -> h+1, the last dropped) and its column 0 becomes 0, the
  // slot the next casts raise. scale, new_scale, new_scale_inv: [R] float32, any stride.
  virtual void float8_update_scales(const Tensor& amax_history, const Tensor& scale,
                                    const Tensor& new_scale, const Tensor& new_scale_inv,
                                    const std::vector<double>& fp8_max, double margin) = 0;

  // Philox streams (Note [Philox stream] in rcuda/core/philox.h); out contiguous.
  virtual void random_uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low,
                              double high) = 0;
  virtual void random_normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean,
                             double std) = 0;
  // Integers in [low, high).
  virtual void random_int(const Tensor& out, uint64_t seed, uint64_t offset, int64_t low,
                          int64_t high) = 0;
  // Draws that take a variable number of uniforms, each element from its own Philox stream
  // (Note [A Philox stream per element] in src/backend/random_samplers.h): out[i] is a Poisson
  // draw of rates[i], or a Gamma(alpha[i], 1) draw. out and the parameter contiguous, of one
  // floating dtype, fewer than 2^43 elements; ops have checked the parameters (rates finite
  // and >= 0, alpha finite and > 0).
  virtual void random_poisson(const Tensor& out, const Tensor& rates, uint64_t seed,
                              uint64_t offset) = 0;
  virtual void random_gamma(const Tensor& out, const Tensor& alpha, uint64_t seed,
                            uint64_t offset) = 0;
  // out[i] = d x / d alpha of the Gamma(alpha[i], 1) draw x[i] at a fixed quantile
  // (backend::gamma_sample_grad); the three tensors contiguous, of one floating dtype.
  virtual void gamma_sample_grad(const Tensor& out, const Tensor& alpha, const Tensor& x) = 0;

  // Indexing: every operand has at least one dim (ops turn 0-dim ones into 1-element 1-D).
  // index is Int64 1-D; out = in with dim indexed by index. An index out of range is IndexError:
  // raised at once on the CPU; on the GPU, which does not synchronise to find out, at the next
  // synchronisation with the device (Note [Deferred device errors], cuda/device_errors.h),
  // with 0 written for gathered elements and skipped scattered ones.
  virtual void index_select(const Tensor& out, const Tensor& in, int64_t dim,
                            const Tensor& index) = 0;
  // out (index's shape) [.., i, ..] = in[.., index[.., i, ..], ..] along dim.
  virtual void gather(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) = 0;
  // out[.., index[.., i, ..], ..] = src[.., i, ..] (or +=); src has index's shape.
  virtual void scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                       bool accumulate) = 0;
  // Int64 [count, in.dim()] coordinates of the nonzero elements in row-major order.
  virtual Tensor nonzero(const Tensor& in) = 0;

  // ---- training primitives ------------------------------------------------------------------
  // The forward and backward halves that training calls every step (ops in rcuda/ops/nn.h).
  // None of them synchronises with the host, so they run inside a captured CUDA graph.

  // grad_in = grad_out * f'(x) in one pass, for a floating op (Note [Unary formulas] in
  // src/backend/unary_math.h). All four tensors have one shape and one floating dtype, any
  // strides; grad_in may be grad_out itself. x is the forward input and out the forward output;
  // the formula reads one of them (ops::unary_grad_saves), the other may be any tensor of the
  // shape and dtype (ops pass grad_out).
  virtual void unary_grad(UnaryOp op, const Tensor& grad_in, const Tensor& grad_out,
                          const Tensor& x, const Tensor& out, const UnaryArgs& args) = 0;

  // Layer normalisation of each row of in [rows, cols] (ops flatten the normalized dims into
  // cols), rows >= 1 and cols >= 1: out = (x - mean) * rstd * weight + bias with the biased
  // variance and rstd = 1 / sqrt(var + eps). in and out contiguous, floating; weight and bias
  // contiguous [cols] of in's dtype, or undefined (1 and 0); mean and rstd contiguous [rows] in
  // the statistics dtype: float64 for float64 input, float32 otherwise.
  virtual void layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                          const Tensor& in, const Tensor& weight, const Tensor& bias,
                          double eps) = 0;
  // The gradients of layer_norm from grad_out (contiguous, in's shape and dtype) and the saved
  // in, mean and rstd. Any of grad_in ([rows, cols]), grad_weight and grad_bias ([cols], in's
  // dtype, all contiguous) may be undefined: not computed. weight as in the forward.
  virtual void layer_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                                   const Tensor& grad_bias, const Tensor& grad_out,
                                   const Tensor& in, const Tensor& mean, const Tensor& rstd,
                                   const Tensor& weight) = 0;

  // Cross-entropy fused with log-softmax over the rows of logits [rows, classes] (contiguous,
  // floating, rows >= 1, classes >= 1), with s = label_smoothing, C = classes, w = weight
  // (contiguous [C] of the logits' dtype, or undefined: all 1) and lse = logsumexp(z):
  // - class indices (target Int64 [rows], contiguous):
  //     loss = (1 - s) w[t] (lse - z[t]) + s / C sum_c w[c] (lse - z[c]), row_weight = w[t];
  //   a row whose t == ignore_index gets loss 0, row_weight 0 (the weighted mean divides by
  //   the sum of row_weight) and logsumexp 0 (not computed). A t outside [0, C) otherwise is a data
  //   error: the CPU throws IndexError naming the op and the value; the GPU, which cannot throw
  //   without synchronising, writes NaN to that row's loss and row_weight, so the reduced loss and
  //   every gradient are NaN, and raises the IndexError at its next synchronisation.
  // - probabilities (target [rows, C] contiguous, the logits' dtype): with t' = (1 - s) t + s/C,
  //     loss = sum_c w[c] t'[c] (lse - z[c]); row_weight is undefined (not written).
  // loss, row_weight and logsumexp are contiguous [rows] in the statistics dtype (float64 for
  // float64 logits, float32 otherwise); logsumexp is what the backward reads.
  virtual void cross_entropy(const Tensor& loss, const Tensor& row_weight, const Tensor& logsumexp,
                             const Tensor& logits, const Tensor& target, const Tensor& weight,
                             int64_t ignore_index, double label_smoothing) = 0;
  // grad_logits (contiguous, logits' shape and dtype) = scale[i] * d loss[i] / d logits[i, :],
  // scale[i] = grad_loss[i] / divisor: grad_loss [rows] of the logits' dtype, any stride (0 for
  // a reduced loss), divisor a 0-dim tensor in the statistics dtype or undefined (1). That is
  // (softmax - target distribution) * weight * scale; ignored rows get 0.
  virtual void cross_entropy_backward(const Tensor& grad_logits, const Tensor& grad_loss,
                                      const Tensor& divisor, const Tensor& logits,
                                      const Tensor& target, const Tensor& weight,
                                      const Tensor& logsumexp, int64_t ignore_index,
                                      double label_smoothing) = 0;

  // Dropout with 0 < p < 1: element i is kept when the Philox stream (seed, offset) draws
  // bits[i] >> 8 >= ceil(p * 2^24) (Note [Dropout mask] in src/backend/dropout_mask.h: the same
  // mask on every backend); out = in * (kept ? 1 / (1 - p) : 0) and mask (Bool) = kept. in, out and
  // mask contiguous, floating.
  virtual void dropout(const Tensor& out, const Tensor& mask, const Tensor& in, double p,
                       uint64_t seed, uint64_t offset) = 0;
  // out = in * (mask ? scale : 0), dropout's backward; in, out (floating) and mask (Bool)
  // contiguous, one shape.
  virtual void masked_scale(const Tensor& out, const Tensor& in, const Tensor& mask,
                            double scale) = 0;

  // out[.., index[i], ..] += src[.., i, ..] along dim (PyTorch's index_add_): out and src
  // contiguous, one dtype, the same sizes but along dim, where src has index.numel(); index
  // Int64 1-D contiguous. An index outside [0, out.size(dim)) is a data error: the CPU throws
  // IndexError before writing anything; the GPU skips that entry and raises the IndexError at
  // its next synchronisation (checking at once would synchronise).
  // The GPU adds with atomics, so floating sums over repeated indices may differ in their last
  // bits from run to run; the CPU adds in index order.
  virtual void index_add(const Tensor& out, int64_t dim, const Tensor& index,
                         const Tensor& src) = 0;

  // ---- pooling and normalisation layers (docs/pooling-normalization.md) ----
  // Floating dtypes; every tensor of a call has one dtype except indices (Int64) and the
  // statistics. Inputs are never empty (ops handle empty tensors). None synchronises.

  // out [N, C, OH, OW] = pooled in [N, C, H, W] (args.channels_last: both NHWC memory order,
  // else both contiguous; H, W, OH, OW >= 1). Max: `indices` (Int64, out's shape and order) gets
  // the flat offset h * W + w of each maximum in its plane, or is undefined (values only); ties
  // keep the first in window order and NaN wins. A dilated window that holds no input element
  // (possible with dilation > 1) gives -inf and index -1, which the backward skips.
  virtual void pool2d(const PoolArgs& args, const Tensor& out, const Tensor& indices,
                      const Tensor& in) = 0;
  // grad_in (in's shape, every element written) from grad_out (out's shape), one memory order
  // as args says. Max reads the forward's indices; Avg ignores them (may be undefined).
  virtual void pool2d_backward(const PoolArgs& args, const Tensor& grad_in, const Tensor& grad_out,
                               const Tensor& indices) = 0;

  // Note [Normalisation primitives]
  // in and out are [N, C, S] views (S = the spatial elements), N * S >= 1, C >= 1, both with
  // strides (C*S, S, 1) or both channels-last (S*C, 1, C) (Note [Channels-last layers]).
  // Per-channel tensors (weight, bias, running statistics) and the saved statistics are
  // contiguous in the statistics dtype: float64 for float64 input, float32 otherwise; weight
  // and bias may be undefined (1 and 0). Gradients left undefined are not computed.
  //
  // Batch normalisation. training: mean and invstd [C] are outputs, the batch's mean and
  // 1 / sqrt(biased var + eps); running_mean and running_var (or undefined) are updated in place
  // with r = (1 - momentum) r + momentum s, s the mean and the unbiased variance (N * S >= 2).
  // !training: mean and invstd are inputs (ops derive them from the running statistics).
  // out = (x - mean) * invstd * weight + bias.
  virtual void batch_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd,
                          const Tensor& in, const Tensor& weight, const Tensor& bias,
                          const Tensor& running_mean, const Tensor& running_var, bool training,
                          double momentum, double eps) = 0;
  // From grad_out (in's shape and strides) and the forward's mean and invstd. batch_stats: the
  // statistics were the batch's own (training), so the input gradient has their terms;
  // otherwise they were constants. grad_weight and grad_bias are [C] in the statistics dtype.
  virtual void batch_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                                   const Tensor& grad_bias, const Tensor& grad_out,
                                   const Tensor& in, const Tensor& mean, const Tensor& invstd,
                                   const Tensor& weight, bool batch_stats) = 0;
  // Group normalisation over `groups` groups of C / groups channels (C divisible): mean and
  // rstd [N, groups] are outputs; out = (x - mean) * rstd * weight[c] + bias[c].
  virtual void group_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd,
                          const Tensor& in, const Tensor& weight, const Tensor& bias,
                          int64_t groups, double eps) = 0;
  virtual void group_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                                   const Tensor& grad_bias, const Tensor& grad_out,
                                   const Tensor& in, const Tensor& mean, const Tensor& rstd,
                                   const Tensor& weight, int64_t groups) = 0;

  // ---- optimizer primitives ----
  // Note [Optimizer primitives]
  // Fused updates for src/optim/: one call updates, in place, every parameter of one group
  // that has a gradient and lives on this device with one dtype; CUDA packs up to ~50 tensors
  // into each multi-tensor launch, the CPU runs one loop per tensor. src/optim/ guarantees:
  // - params[i], grads[i] and each state list's [i] have one floating dtype and one shape and
  //   are contiguous, or all share one dense layout (a channels-last parameter, its gradient
  //   and state), so that element i of every operand sits at flat position i (that layer
  //   stages other parameters); numel may be 0.
  // - A state list is empty when the option that needs it is off (momentum == 0, !amsgrad,
  //   !centered), else as long as params.
  // - `steps` holds each parameter's step count after this step's increment (>= 1); bias
  //   corrections are computed from it on the host (Note [Step counts on the host] in
  //   src/optim/README.md says how they move to the device for CUDA graphs).
  // The arithmetic is torch.optim's, element by element, in ComputeType (float for the half
  // types); both backends share it (src/backend/optim_math.h). Nothing here bumps versions or
  // synchronises with the host.
  using TensorList = std::vector<Tensor>;
  struct SgdStep {
    double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
    bool nesterov = false, maximize = false;
    // The buffers hold nothing yet: this step sets them to the gradient (torch's clone).
    bool momentum_buffers_are_new = false;
  };
  struct AdamStep {
    double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
    bool amsgrad = false, maximize = false;
    bool decoupled_weight_decay = false;  // AdamW: param *= 1 - lr * weight_decay
  };
  struct RmspropStep {
    double lr = 0, alpha = 0, eps = 0, weight_decay = 0, momentum = 0;
    bool centered = false, maximize = false;
  };
  struct AdagradStep {
    double lr = 0, lr_decay = 0, weight_decay = 0, eps = 0;
    bool maximize = false;
  };
  virtual void sgd_step(const TensorList& params, const TensorList& grads,
                        const TensorList& momentum_buffers, const SgdStep& args) = 0;
  virtual void adam_step(const TensorList& params, const TensorList& grads,
                         const TensorList& exp_avgs, const TensorList& exp_avg_sqs,
                         const TensorList& max_exp_avg_sqs, const std::vector<int64_t>& steps,
                         const AdamStep& args) = 0;
  virtual void rmsprop_step(const TensorList& params, const TensorList& grads,
                            const TensorList& square_avgs, const TensorList& momentum_buffers,
                            const TensorList& grad_avgs, const RmspropStep& args) = 0;
  virtual void adagrad_step(const TensorList& params, const TensorList& grads,
                            const TensorList& state_sums, const std::vector<int64_t>& steps,
                            const AdagradStep& args) = 0;
  // total_norm (0-dim, floating, on this device) = the p-norm of all elements of `tensors`
  // together (contiguous, floating, any mix of dtypes; p > 0 or inf); 0 when there are none.
  // NaN propagates. Computed on the device without a host synchronisation.
  virtual void multi_tensor_norm(const TensorList& tensors, double p, const Tensor& total_norm) = 0;
  // tensors[i] *= min(1, max_norm / (total_norm + 1e-6)) in place, with total_norm read on the
  // device (torch.nn.utils.clip_grad_norm_'s coefficient; NaN propagates). Contiguous
  // floating tensors of any mix of dtypes.
  virtual void clip_by_total_norm(const TensorList& tensors, const Tensor& total_norm,
                                  double max_norm) = 0;
  // Gradient scaling's unscale (torch's _amp_foreach_non_finite_check_and_unscale_): each
  // element of `tensors` is multiplied in place by inv_scale (float32, one element, on this
  // device, read on the device), and found_inf (float32, one element) is set to 1 when any element
  // of any tensor was inf or NaN before the multiplication; it is left as it is otherwise.
  // Contiguous floating tensors of any mix of dtypes, computed in ComputeType; no host sync.
  virtual void unscale_and_check_finite(const TensorList& tensors, const Tensor& inv_scale,
                                        const Tensor& found_inf) = 0;

  // ---- convolution primitives (docs/convolution.md; ops in rcuda/ops/conv.h) ----
  // Note [Convolution primitives]
  // 2-D cross-correlation of in [N, C, H, W] with weight [O, C / groups, KH, KW] into
  // out [N, O, OH, OW]; with Cg = C / groups, Og = O / groups and g = o / Og:
  //   out[n, o, i, j] = sum over c < Cg, r < KH, s < KW of
  //       in[n, g Cg + c, i sh - ph + r dh, j sw - pw + s dw] * weight[o, c, r, s]
  // where positions outside the input read 0 and OH = (H + 2 ph - dh (KH - 1) - 1) / sh + 1
  // (floor; OW alike). src/ops/conv.cpp guarantees: every tensor 4-D, nonempty, of one floating
  // dtype, with the shapes above; stride and dilation >= 1, padding >= 0 (the same on both
  // sides: ops pad asymmetric cases explicitly); all tensors of one call in one memory format
  // with exactly its dense strides (rcuda/tensor/memory_format.h), any storage offset. Outputs
  // are overwritten, never accumulated into. Dtypes: the CPU takes every floating dtype (oneDNN
  // for float32 and the half types through float32, im2col + OpenBLAS for float64); CUDA takes
  // float32 (TF32 while cuda::allow_conv_tf32()), float16 and bfloat16, accumulating in float32,
  // and refuses float64 with a DTypeError (cuDNN's graph API has no double convolutions).
  struct ConvArgs {
    std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
    int64_t groups = 1;
  };
  virtual void conv2d(const Tensor& out, const Tensor& in, const Tensor& weight,
                      const ConvArgs& args) = 0;
  // grad_in [N, C, H, W] = d/d in of sum(out * grad_out), the transposed convolution of
  // grad_out [N, O, OH, OW] (input positions no output reads get 0).
  virtual void conv2d_backward_input(const Tensor& grad_in, const Tensor& grad_out,
                                     const Tensor& weight, const ConvArgs& args) = 0;
  // grad_weight [O, C / groups, KH, KW] = d/d weight of sum(out * grad_out).
  virtual void conv2d_backward_weight(const Tensor& grad_weight, const Tensor& grad_out,
                                      const Tensor& in, const ConvArgs& args) = 0;
  // ---- end of convolution primitives ----

  // ---- resampling primitives (docs/resample-pad.md; ops in rcuda/ops/resample.h) ----
  // Note [Resampling primitives]
  // pad: out [N, C, OD, OH, OW] from in [N, C, D, H, W] (5-D views: 1-D and 2-D pads arrive with
  // unit D and H), OD = D + before[0] + after[0] (OH, OW alike), all sizes >= 1, any dtype but
  // float8. With v = o - before along a dim of size S, output position o reads input
  //   Reflect:   v < 0 ? -v : v >= S ? 2 (S - 1) - v : v      (the edge element is not repeated)
  //   Replicate: clamp(v, 0, S - 1)
  //   Circular:  v mod S (into [0, S))
  // and the three dims combine independently. in may have any strides; out is dense (contiguous,
  // or channels-last as args say) and never overlaps in. pad_backward: grad_in (in's shape,
  // any non-overlapping strides, floating, every element written) = for each input element the
  // sum of grad_out
  // (out's shape, any strides) over the outputs that read it. Both backends gather (a loop or a
  // thread per input element over the outputs reading it, shared formulas in
  // src/backend/resample_index.h), so the sums are deterministic and need no atomics.
  //
  // interpolate: out [N, C, OH, OW] from in [N, C, H, W], floating, both dense in one format
  // (args.channels_last), H, W, OH, OW >= 1 (1-D interpolation has H = OH = 1). Along each dim
  // of input size I and output size O, PyTorch's source index (UpSample.h) with s the caller's
  // scale_factor for the dim or none:
  //   Nearest:      i = min(floor(o * r), I - 1), r = float(1 / s) or float(I) / O in float32;
  //                 O == I gives i = o and O == 2 I gives i = o / 2 exactly (as PyTorch's CPU)
  //   NearestExact: i = min(floor((o + 0.5) * r), I - 1), r as for Nearest
  //   Linear:       x = align_corners ? o * (I - 1) / (O - 1)  (0 when O == 1)
  //                                   : max(0, (o + 0.5) * r - 0.5), r = 1 / s or I / O;
  //                 i0 = min(floor(x), I - 1), i1 = min(i0 + 1, I - 1), l1 = clamp(x - i0, 0, 1),
  //                 l0 = 1 - l1; O == I copies (i0 = i1 = o, l1 = 0). Computed in float32 for
  //                 float32 and the half types, float64 for float64, without fused multiply-adds,
  //                 so both backends pick the same taps.
  // Bilinear output = l0h (l0w x[i0h, i0w] + l1w x[i0h, i1w]) + l1h (l0w x[i1h, i0w] + l1w
  // x[i1h, i1w]). interpolate_backward: grad_in (in's shape and format, every element written) =
  // the transpose: each input element sums grad_out times its weight over the outputs whose
  // taps name it (taps of weight 0 add nothing). Both backends gather per input element from
  // the outputs found by binary search over the monotone source index (no atomics, so the sums
  // are deterministic); the CPU accumulates in float64, CUDA in the compute type.
  virtual void pad(const PadArgs& args, const Tensor& out, const Tensor& in) = 0;
  virtual void pad_backward(const PadArgs& args, const Tensor& grad_in, const Tensor& grad_out) = 0;
  virtual void interpolate(const InterpolateArgs& args, const Tensor& out, const Tensor& in) = 0;
  virtual void interpolate_backward(const InterpolateArgs& args, const Tensor& grad_in,
                                    const Tensor& grad_out) = 0;
  // ---- end of resampling primitives ----

  // ---- recurrent primitives (docs/rnn.md; ops in rcuda/ops/rnn.h) ----
  // Note [Recurrent primitives]
  // A stack of args.layers recurrent layers of args.directions (1 or 2) directions each over a
  // time-major sequence, with PyTorch's equations and gate order (H = args.hidden):
  //   LSTM, gates (i, f, g, o): i = sigmoid(W_ii x + b_ii + W_hi h + b_hi), f and o alike,
  //     g = tanh(W_ig x + b_ig + W_hg h + b_hg); c' = f c + i g; h' = o tanh(c')
  //   GRU, gates (r, z, n): r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z alike,
  //     n = tanh(W_in x + b_in + r (W_hn h + b_hn)); h' = (1 - z) n + z h
  //   RnnTanh / RnnRelu: h' = tanh or relu(W_ih x + b_ih + W_hh h + b_hh)
  // The reverse direction runs t = T-1 down to 0. Layer l > 0 reads layer l-1's output
  // [T, N, D * H] (forward direction's H first). No dropout between layers: ops run one layer
  // per call when dropout is asked for.
  // Operands, as src/ops/rnn.cpp guarantees: every tensor contiguous, of one floating dtype, on
  // one device; input [T, N, I] with T, N, I >= 1; hx [L * D, N, H]; cx [L * D, N, H] for LSTM,
  // undefined otherwise; weights per layer l then direction d (block l * D + d), in this order:
  //   w_ih [G * H, I_l], w_hh [G * H, H], b_ih [G * H], b_hh [G * H]
  // (G = 4 LSTM, 3 GRU, 1 RNN; I_0 = I, I_l = D * H), only the first two when !has_biases.
  // out [T, N, D * H], hy (hx's shape) and cy (LSTM; undefined otherwise) are overwritten.
  // Returns `reserve`, an opaque uint8 tensor on the input's device that rnn_backward reads
  // (cuDNN's reserve space, oneDNN's workspace, whatever the backend keeps); undefined when
  // !args.training. Dtypes: the CPU takes float32 (oneDNN) and float64 (its own loops); CUDA
  // takes float32, float16 and bfloat16 (cuDNN, float32 accumulation) and refuses float64 with
  // a DTypeError naming the op.
  enum class RnnMode { Lstm, Gru, RnnTanh, RnnRelu };
  // Gates per layer: 4 for LSTM (i, f, g, o), 3 for GRU (r, z, n), 1 for the plain RNNs.
  static int64_t rnn_gates(RnnMode mode) {
    switch (mode) {
      case RnnMode::Lstm:
        return 4;
      case RnnMode::Gru:
        return 3;
      case RnnMode::RnnTanh:
      case RnnMode::RnnRelu:
        return 1;
    }
    return 1;
  }
  struct RnnArgs {
    RnnMode mode = RnnMode::Lstm;
    int64_t layers = 1, directions = 1, hidden = 0;
    bool has_biases = true;
    bool training = false;
  };
  virtual Tensor rnn(const RnnArgs& args, const Tensor& out, const Tensor& hy, const Tensor& cy,
                     const Tensor& input, const Tensor& hx, const Tensor& cx,
                     const TensorList& weights) = 0;
  // The gradients of sum(out * grad_out) + sum(hy * grad_hy) + sum(cy * grad_cy) with respect
  // to input, hx, cx and the weights, from a training forward's operands, its out and its
  // reserve. grad_hy and grad_cy may be undefined (zero). grad_input, grad_hx and grad_cx may
  // be undefined (not wanted); grad_weights is empty (not wanted) or has weights' shapes and
  // order. Gradients are overwritten, never accumulated into.
  virtual void rnn_backward(const RnnArgs& args, const Tensor& grad_input, const Tensor& grad_hx,
                            const Tensor& grad_cx, const TensorList& grad_weights,
                            const Tensor& grad_out, const Tensor& grad_hy, const Tensor& grad_cy,
                            const Tensor& input, const Tensor& hx, const Tensor& cx,
                            const TensorList& weights, const Tensor& out,
                            const Tensor& reserve) = 0;
  // ---- end of recurrent primitives ----

  // ---- sorting and cumulative primitives (ops in rcuda/ops/sorting.h, rcuda/ops/cumulative.h)
  // Note [Row primitives]
  // Each works along the rows of contiguous [rows, n] tensors, rows >= 1, n >= 1: ops move the
  // dim last and make it contiguous first, so that both backends stay plain.
  //
  // sort: values (in's dtype) and indices (Int64, positions within the row) of each row of in
  // sorted stably, ascending or descending, NaN above +inf (last ascending, first descending),
  // as torch. Dtypes Float32, Float64, Int32, Int64, UInt8 (ops sort the half types through
  // float32 and bool through uint8). The CPU runs std::stable_sort per row; CUDA sorts through
  // the host for now (Note [CUDA sort through the host] in src/backend/cuda/sort_host.cpp).
  virtual void sort(const Tensor& values, const Tensor& indices, const Tensor& in,
                    bool descending) = 0;

  // cumulative: out[r, j] = op over in[r, 0..j], out in in's dtype, computed in ComputeType
  // (integers in int64, wrapping). Prod: every dtype but bool; LogSumExp: floating;
  // Max/Min: every dtype, with indices (Int64) the position of the running extreme, the
  // latest one on ties, and NaN sticky (each NaN becomes the extreme), as torch's cummax. indices
  // is undefined for Prod and LogSumExp.
  enum class CumulativeOp : uint8_t { Prod, Max, Min, LogSumExp };
  virtual void cumulative(CumulativeOp op, const Tensor& out, const Tensor& indices,
                          const Tensor& in) = 0;
  // grad_in = the gradient of sum(out * grad_out) for Prod and LogSumExp, floating, all four
  // tensors of one dtype and shape. Prod's is exact with zeros in the row (the first zero's
  // gradient is the product of the others, later elements get 0); LogSumExp's is
  // grad_in[j] = sum_{k >= j} grad_out[k] exp(in[j] - out[k]), run backwards with factors <= 1.
  virtual void cumulative_backward(CumulativeOp op, const Tensor& grad_in, const Tensor& grad_out,
                                   const Tensor& in, const Tensor& out) = 0;
  // ---- end of sorting and cumulative primitives ----

  // ---- sparse primitives (docs/sparse.md; ops in rcuda/ops/sparse.h) ----
  // Note [Sparse matrix product]
  // out = op(S) @ dense for the 2-D COO matrix S[rows[i], cols[i]] = values[i], coalesced (sorted
  // by row then column, no repeats); op(S) is S^T when `transpose`. rows and cols: Int64,
  // contiguous [nnz], nnz >= 1, every index in range (ops check); values: contiguous [nnz];
  // dense: contiguous [op(S)'s columns, k]; out: contiguous [op(S)'s rows, k], k >= 1,
  // overwritten; values, dense and out Float32 or Float64, one dtype. CPU: src/backend/cpu/
  // sparse.cpp; CUDA: cuSPARSE's SpMM (its transposed product may order sums differently
  // between runs).
  virtual void sparse_mm(const Tensor& out, const Tensor& rows, const Tensor& cols,
                         const Tensor& values, const Tensor& dense, bool transpose) = 0;
  // ---- end of sparse primitives ----
};

// The backend for a device type; DeviceError naming the device when it is not built or not
// available (e.g. "cuda:0 requested but rcuda was built without CUDA").
Backend& backend_for(Device device);
bool backend_available(DeviceType type);
// Called once per backend by its own translation unit (see RCUDA_REGISTER_BACKEND).
void register_backend(DeviceType type, Backend* (*factory)());

#define RCUDA_REGISTER_BACKEND(TYPE, FACTORY)          \
  namespace {                                          \
  const bool rcuda_backend_registered_##FACTORY = [] { \
    ::rcuda::register_backend(TYPE, &FACTORY);         \
    return true;                                       \
  }();                                                 \
  }

}  // namespace rcuda
