// The CPU backend. Its primitives are defined by family in this folder: elementwise.cpp,
// reduce.cpp, softmax_cumsum.cpp, gemm.cpp (OpenBLAS), scaled_gemm.cpp (float8 products),
// random.cpp (Philox), index.cpp, optim.cpp (optimizer steps, gradient norms).
#pragma once

#include "rcuda/backend/backend.h"
#include "rcuda/backend/fused.h"

namespace rcuda::cpu {

// Splits the cores between OpenMP and a pthreads OpenBLAS (Note [BLAS and OpenMP threads] in
// blas_info.cpp); called once, when the backend is made.
void share_cores_with_blas();

class CpuBackend final : public Backend, public FusedConvolution {
 public:
  DeviceType device_type() const override { return DeviceType::CPU; }
  Allocator& allocator(int /*device_index*/) override { return cpu_allocator(); }
  void synchronize(int /*device_index*/) override {}

  void copy(const Tensor& dst, const Tensor& src) override;
  void cat(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim) override;
  void fill(const Tensor& out, const Scalar& value) override;
  void arange(const Tensor& out, const Scalar& start, const Scalar& step) override;
  void linspace(const Tensor& out, double start, double end) override;
  void unary(UnaryOp op, const Tensor& out, const Tensor& in, const UnaryArgs& args) override;
  void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) override;
  void binary_number(BinaryOp op, const Tensor& out, const Tensor& a, const Scalar& number,
                     bool number_first) override;
  void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) override;

  void reduce(ReduceOp op, const Tensor& out, const Tensor& in, double p) override;
  void arg_reduce(bool is_max, const Tensor& values, const Tensor& indices, const Tensor& in,
                  int64_t dim) override;
  void var(const Tensor& out, const Tensor& in, double correction) override;
  void softmax(const Tensor& out, const Tensor& in, int64_t dim, bool log) override;
  void cumsum(const Tensor& out, const Tensor& in, int64_t dim) override;

  void gemm(const Tensor& out, const Tensor& a, const Tensor& b, double alpha,
            double beta) override;
  void linear(const Tensor& out, const Tensor& x, const Tensor& weight,
              const Tensor& bias) override;
  void scaled_gemm(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& scale_a,
                   const Tensor& scale_b, const Tensor& bias) override;
  void float8_cast(const Tensor& out, const Tensor& out_t, const Tensor& amax, const Tensor& in,
                   const Tensor& scale) override;
  void float8_update_scales(const Tensor& amax_history, const Tensor& scale,
                            const Tensor& new_scale, const Tensor& new_scale_inv,
                            const std::vector<double>& fp8_max, double margin) override;

  void random_uniform(const Tensor& out, uint64_t seed, uint64_t offset, double low,
                      double high) override;
  void random_normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean,
                     double std) override;
  void random_int(const Tensor& out, uint64_t seed, uint64_t offset, int64_t low,
                  int64_t high) override;
  void random_poisson(const Tensor& out, const Tensor& rates, uint64_t seed,
                      uint64_t offset) override;
  void random_gamma(const Tensor& out, const Tensor& alpha, uint64_t seed,
                    uint64_t offset) override;
  void gamma_sample_grad(const Tensor& out, const Tensor& alpha, const Tensor& x) override;

  void index_select(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) override;
  void gather(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) override;
  void scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
               bool accumulate) override;
  Tensor nonzero(const Tensor& in) override;

  // training primitives
  void unary_grad(UnaryOp op, const Tensor& grad_in, const Tensor& grad_out, const Tensor& x,
                  const Tensor& out, const UnaryArgs& args) override;
  void layer_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& in,
                  const Tensor& weight, const Tensor& bias, double eps) override;
  void layer_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                           const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                           const Tensor& mean, const Tensor& rstd, const Tensor& weight) override;
  void cross_entropy(const Tensor& loss, const Tensor& row_weight, const Tensor& logsumexp,
                     const Tensor& logits, const Tensor& target, const Tensor& weight,
                     int64_t ignore_index, double label_smoothing) override;
  void cross_entropy_backward(const Tensor& grad_logits, const Tensor& grad_loss,
                              const Tensor& divisor, const Tensor& logits, const Tensor& target,
                              const Tensor& weight, const Tensor& logsumexp, int64_t ignore_index,
                              double label_smoothing) override;
  void dropout(const Tensor& out, const Tensor& mask, const Tensor& in, double p, uint64_t seed,
               uint64_t offset) override;
  void masked_scale(const Tensor& out, const Tensor& in, const Tensor& mask, double scale) override;
  void index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) override;

  // Pooling and normalisation layers: pool.cpp, batch_norm.cpp, group_norm.cpp (oneDNN calls in
  // *_onednn.cpp).
  void pool2d(const PoolArgs& args, const Tensor& out, const Tensor& indices,
              const Tensor& in) override;
  void pool2d_backward(const PoolArgs& args, const Tensor& grad_in, const Tensor& grad_out,
                       const Tensor& indices) override;
  void batch_norm(const Tensor& out, const Tensor& mean, const Tensor& invstd, const Tensor& in,
                  const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps) override;
  void batch_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                           const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                           const Tensor& mean, const Tensor& invstd, const Tensor& weight,
                           bool batch_stats) override;
  void group_norm(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& in,
                  const Tensor& weight, const Tensor& bias, int64_t groups, double eps) override;
  void group_norm_backward(const Tensor& grad_in, const Tensor& grad_weight,
                           const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                           const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                           int64_t groups) override;

  // Resampling (Note [Resampling primitives]): resample.cpp.
  void pad(const PadArgs& args, const Tensor& out, const Tensor& in) override;
  void pad_backward(const PadArgs& args, const Tensor& grad_in, const Tensor& grad_out) override;
  void interpolate(const InterpolateArgs& args, const Tensor& out, const Tensor& in) override;
  void interpolate_backward(const InterpolateArgs& args, const Tensor& grad_in,
                            const Tensor& grad_out) override;

  // Optimizer primitives: optim.cpp.
  void sgd_step(const TensorList& params, const TensorList& grads,
                const TensorList& momentum_buffers, const SgdStep& args) override;
  void adam_step(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
                 const TensorList& exp_avg_sqs, const TensorList& max_exp_avg_sqs,
                 const std::vector<int64_t>& steps, const AdamStep& args) override;
  void rmsprop_step(const TensorList& params, const TensorList& grads,
                    const TensorList& square_avgs, const TensorList& momentum_buffers,
                    const TensorList& grad_avgs, const RmspropStep& args) override;
  void adagrad_step(const TensorList& params, const TensorList& grads, const TensorList& state_sums,
                    const std::vector<int64_t>& steps, const AdagradStep& args) override;
  void multi_tensor_norm(const TensorList& tensors, double p, const Tensor& total_norm) override;
  void clip_by_total_norm(const TensorList& tensors, const Tensor& total_norm,
                          double max_norm) override;
  void unscale_and_check_finite(const TensorList& tensors, const Tensor& inv_scale,
                                const Tensor& found_inf) override;

  // ---- convolution primitives: conv_dnnl.cpp (float32, half types through float32) and
  // conv_f64.cpp (float64) ----
  void conv2d(const Tensor& out, const Tensor& in, const Tensor& weight,
              const ConvArgs& args) override;
  bool conv2d_bias_relu(const Tensor& out, const Tensor& in, const Tensor& weight,
                        const Tensor& bias, const ConvArgs& args) override;  // FusedConvolution
  void conv2d_backward_input(const Tensor& grad_in, const Tensor& grad_out, const Tensor& weight,
                             const ConvArgs& args) override;
  void conv2d_backward_weight(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& in,
                              const ConvArgs& args) override;
  // ---- end of convolution primitives ----

  // ---- recurrent primitives: rnn_onednn.cpp (float32, half types through float32) and
  // rnn_loops.cpp (float64) ----
  Tensor rnn(const RnnArgs& args, const Tensor& out, const Tensor& hy, const Tensor& cy,
             const Tensor& input, const Tensor& hx, const Tensor& cx,
             const TensorList& weights) override;
  void rnn_backward(const RnnArgs& args, const Tensor& grad_input, const Tensor& grad_hx,
                    const Tensor& grad_cx, const TensorList& grad_weights, const Tensor& grad_out,
                    const Tensor& grad_hy, const Tensor& grad_cy, const Tensor& input,
                    const Tensor& hx, const Tensor& cx, const TensorList& weights,
                    const Tensor& out, const Tensor& reserve) override;
  // ---- end of recurrent primitives ----

  // ---- sorting and cumulative primitives: sort.cpp and cumulative.cpp ----
  void sort(const Tensor& values, const Tensor& indices, const Tensor& in,
            bool descending) override;
  void cumulative(CumulativeOp op, const Tensor& out, const Tensor& indices,
                  const Tensor& in) override;
  void cumulative_backward(CumulativeOp op, const Tensor& grad_in, const Tensor& grad_out,
                           const Tensor& in, const Tensor& out) override;

  // ---- sparse primitives: sparse.cpp ----
  void sparse_mm(const Tensor& out, const Tensor& rows, const Tensor& cols, const Tensor& values,
                 const Tensor& dense, bool transpose) override;
};

}  // namespace rcuda::cpu
