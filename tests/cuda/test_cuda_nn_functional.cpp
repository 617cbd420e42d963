// rcuda::nn on the GPU against the CPU backend: each function's values and the gradients of
// every floating input, on the same fresh random inputs; initialisers against the CPU's
// Philox streams (uniform draws are bit-identical across backends) or, for trunc_normal_,
// against the distribution.
#include <algorithm>
#include <cmath>

#include "nn/nn_test_util.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

namespace init = nn::init;
using F = std::function<Tensor(const TensorList&)>;

// f on CPU inputs and on CUDA copies of them: values within tol, then, with check_grad, the
// gradients of sum(f * w) for fixed random w with respect to every floating input.
void expect_cuda_matches_cpu(const F& f, const TensorList& inputs, double tol, bool check_grad) {
  TensorList cpu, gpu;
  for (const Tensor& x : inputs) {
    Tensor c = clone(x), g = on_cuda(x);
    if (check_grad && is_floating(x.dtype())) c.requires_grad_(), g.requires_grad_();
    cpu.push_back(c);
    gpu.push_back(g);
  }
  const Tensor out_cpu = f(cpu), out_gpu = f(gpu);
  ASSERT_EQ(out_gpu.device(), kCuda);
  ASSERT_EQ(out_gpu.shape(), out_cpu.shape());
  EXPECT_TRUE(all_close(values(out_gpu), values(out_cpu), tol)) << "values";
  if (!check_grad) return;
  const Tensor w = random_tensor(out_cpu.shape(), out_cpu.dtype(), 0.5, 1.5);
  TensorList wrt_cpu, wrt_gpu;
  for (size_t i = 0; i < cpu.size(); ++i)
    if (cpu[i].requires_grad()) wrt_cpu.push_back(cpu[i]), wrt_gpu.push_back(gpu[i]);
  const TensorList g_cpu = autograd::grad({sum(mul(out_cpu, w))}, wrt_cpu, {}, false, true);
  const TensorList g_gpu =
      autograd::grad({sum(mul(out_gpu, on_cuda(w)))}, wrt_gpu, {}, false, true);
  for (size_t i = 0; i < g_cpu.size(); ++i) {
    ASSERT_EQ(g_cpu[i].defined(), g_gpu[i].defined()) << "gradient " << i;
    if (!g_cpu[i].defined()) continue;
    EXPECT_EQ(g_gpu[i].device(), kCuda);
    EXPECT_TRUE(all_close(values(g_gpu[i]), values(g_cpu[i]), tol)) << "gradient " << i;
  }
}

// Composed functions round a few times more than one op: float32 allows a little more than
// backend_tolerance.
double nn_tolerance(DType dtype) { return dtype == DType::Float32 ? 3e-5 : 1e-11; }

struct Named {
  const char* name;
  F f;
};

std::vector<Named> activations() {
  return {{"relu", [](const TensorList& x) { return nn::relu(x[0]); }},
          {"leaky_relu", [](const TensorList& x) { return nn::leaky_relu(x[0], 0.1); }},
          {"elu", [](const TensorList& x) { return nn::elu(x[0], 0.7); }},
          {"gelu", [](const TensorList& x) { return nn::gelu(x[0]); }},
          {"gelu tanh", [](const TensorList& x) { return nn::gelu(x[0], "tanh"); }},
          {"silu", [](const TensorList& x) { return nn::silu(x[0]); }},
          {"softplus", [](const TensorList& x) { return nn::softplus(x[0], 2, 4); }},
          {"sigmoid", [](const TensorList& x) { return nn::sigmoid(x[0]); }},
          {"tanh", [](const TensorList& x) { return nn::tanh(x[0]); }},
          {"hardtanh", [](const TensorList& x) { return nn::hardtanh(x[0], -0.5, 1.5); }}};
}

TEST(CudaNn, ActivationValues) {
  RCUDA_REQUIRE_CUDA();
  for (const Named& a : activations())
    for (DType dtype : floating_dtypes()) {
      SCOPED_TRACE(std::string(a.name) + " " + dtype_name(dtype));
      const double tol = is_reduced_float(dtype) ? 2 * tolerance(dtype) : nn_tolerance(dtype);
      expect_cuda_matches_cpu(a.f, {random_tensor({64, 33}, dtype, -5, 5)}, tol, false);
      expect_cuda_matches_cpu(a.f, {transposed_copy(random_tensor({16, 9}, dtype, -5, 5))}, tol,
                              false);
    }
}

TEST(CudaNn, ActivationGradients) {
  RCUDA_REQUIRE_CUDA();
  for (const Named& a : activations())
    for (DType dtype : {DType::Float32, DType::Float64}) {
      SCOPED_TRACE(std::string(a.name) + " " + dtype_name(dtype));
      expect_cuda_matches_cpu(a.f, {random_tensor({64, 33}, dtype, -5, 5)}, nn_tolerance(dtype),
                              true);
    }
}

TEST(CudaNn, LinearDropoutAndTheirGradients) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const F linear = [](const TensorList& x) { return nn::linear(x[0], x[1], x[2]); };
    for (const Shape& shape : {Shape{17, 24}, Shape{24}, Shape{3, 5, 24}})
      expect_cuda_matches_cpu(
          linear,
          {random_tensor(shape, dtype), random_tensor({10, 24}, dtype), random_tensor({10}, dtype)},
          nn_tolerance(dtype), true);
    // Dropout: the same seed draws the same mask on both backends.
    const F dropout = [](const TensorList& x) {
      manual_seed(99);
      return nn::dropout(x[0], 0.35);
    };
    expect_cuda_matches_cpu(dropout, {random_tensor({40, 50}, dtype, 1, 2)}, 0, true);
  }
  // Every floating dtype through the bias epilogue (contiguous output, aligned bias) and past it
  // (a bias starting one element into its storage, a transposed weight and input, no bias).
  for (DType dtype : floating_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const double tol = is_reduced_float(dtype) ? 2 * tolerance(dtype) : nn_tolerance(dtype);
    const F linear = [](const TensorList& x) { return nn::linear(x[0], x[1], x[2]); };
    const F unbiased = [](const TensorList& x) { return nn::linear(x[0], x[1]); };
    const bool grads = !is_reduced_float(dtype);
    expect_cuda_matches_cpu(linear,
                            {random_tensor({33, 40}, dtype), random_tensor({24, 40}, dtype),
                             random_tensor({24}, dtype)},
                            tol, grads);
    expect_cuda_matches_cpu(
        [](const TensorList& x) { return nn::linear(x[0], x[1], x[2].narrow(0, 1, 24)); },
        {transposed_copy(random_tensor({33, 40}, dtype)),
         transposed_copy(random_tensor({24, 40}, dtype)), random_tensor({25}, dtype)},
        tol, grads);
    expect_cuda_matches_cpu(
        unbiased, {random_tensor({5, 40}, dtype), random_tensor({7, 40}, dtype)}, tol, grads);
  }
}

TEST(CudaNn, LayerNormAndEmbedding) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    expect_cuda_matches_cpu(
        [](const TensorList& x) {
          return nn::layer_norm(x[0], {6, 8}, x[1], x[2]);
        },
        {random_tensor({5, 6, 8}, dtype), random_tensor({6, 8}, dtype),
         random_tensor({6, 8}, dtype)},
        nn_tolerance(dtype), true);
    const Tensor index = tensor_of({3, 0, 7, 3, 3, 5}, {2, 3}, DType::Int64);
    expect_cuda_matches_cpu(
        [](const TensorList& x) { return nn::embedding(x[0], x[1], /*padding_idx=*/3); },
        {index, random_tensor({8, 4}, dtype)}, 0, true);
  }
  const Tensor bad = on_cuda(tensor_of({1, 8}, {2}, DType::Int64));
  // Raised at the next synchronisation (Note [Deferred device errors]).
  EXPECT_THROW(
      {
        nn::embedding(bad, on_cuda(random_tensor({8, 4}, DType::Float32)));
        cuda::synchronize(0);
      },
      IndexError);
}

TEST(CudaNn, ElementwiseLossesEveryReduction) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (const std::string r : {"none", "mean", "sum"}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + r);
      const double tol = nn_tolerance(dtype);
      const TensorList pair = {random_tensor({30, 7}, dtype, -3, 3),
                               random_tensor({7}, dtype, -3, 3)};
      expect_cuda_matches_cpu([&](const TensorList& x) { return nn::mse_loss(x[0], x[1], r); },
                              pair, tol, true);
      expect_cuda_matches_cpu([&](const TensorList& x) { return nn::l1_loss(x[0], x[1], r); }, pair,
                              tol, true);
      expect_cuda_matches_cpu(
          [&](const TensorList& x) { return nn::smooth_l1_loss(x[0], x[1], r, 0.7); }, pair, tol,
          true);
      expect_cuda_matches_cpu(
          [&](const TensorList& x) { return nn::huber_loss(x[0], x[1], r, 1.3); }, pair, tol, true);
      const Tensor probs = random_tensor({30, 7}, dtype, 0.01, 0.99);
      const Tensor targets = random_tensor({30, 7}, dtype, 0, 1);
      expect_cuda_matches_cpu(
          [&](const TensorList& x) { return nn::binary_cross_entropy(x[0], x[1], x[2], r); },
          {probs, targets, random_tensor({7}, dtype, 0.5, 2)}, tol, true);
      expect_cuda_matches_cpu(
          [&](const TensorList& x) {
            return nn::binary_cross_entropy_with_logits(x[0], x[1], x[2], r, x[3]);
          },
          {random_tensor({30, 7}, dtype, -8, 8), targets, random_tensor({30, 1}, dtype, 0.5, 2),
           random_tensor({7}, dtype, 0.5, 3)},
          tol, true);
      const Tensor log_probs = random_tensor({30, 7}, dtype, -4, 0);
      expect_cuda_matches_cpu([&](const TensorList& x) { return nn::kl_div(x[0], x[1], r); },
                              {log_probs, probs}, tol, true);
      expect_cuda_matches_cpu(
          [&](const TensorList& x) { return nn::kl_div(x[0], x[1], "batchmean", true); },
          {log_probs, random_tensor({30, 7}, dtype, -4, 0)}, tol, true);
    }
  }
}

TEST(CudaNn, NllLossAndCrossEntropy) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double tol = nn_tolerance(dtype);
    const Tensor weight = random_tensor({5}, dtype, 0.5, 2);
    for (const Shape& shape : {Shape{40, 5}, Shape{3, 5, 4, 2}}) {
      Shape target_shape = shape;
      target_shape.erase(target_shape.begin() + 1);
      std::vector<double> t = to_doubles(random_tensor(target_shape, DType::Int64, 0, 5));
      for (size_t i = 0; i < t.size(); i += 4) t[i] = -100;
      const Tensor target = tensor_of(t, target_shape, DType::Int64);
      const Tensor probabilities = softmax(random_tensor(shape, dtype), 1);
      for (const std::string r : {"none", "mean", "sum"}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(shape) + " " + r);
        expect_cuda_matches_cpu(
            [&](const TensorList& x) {
              return nn::nll_loss(x[0], x[1], {x[2], -100, r});
            },
            {random_tensor(shape, dtype, -4, 0), target, weight}, tol, true);
        expect_cuda_matches_cpu(
            [&](const TensorList& x) {
              return nn::cross_entropy(x[0], x[1], {x[2], -100, r, 0.2});
            },
            {random_tensor(shape, dtype, -4, 4), target, weight}, tol, true);
        expect_cuda_matches_cpu(
            [&](const TensorList& x) {
              return nn::cross_entropy(x[0], x[1], {x[2], -100, r, 0.1});
            },
            {random_tensor(shape, dtype, -4, 4), probabilities, weight}, tol, true);
      }
    }
  }
  // An out-of-range class on the GPU: IndexError at the next synchronisation (here the copy of
  // the loss to the host), from the fused cross-entropy and from nll_loss's gather alike.
  const Tensor logits = on_cuda(random_tensor({2, 3}, DType::Float32));
  const Tensor bad_target = on_cuda(tensor_of({0, 3}, {2}, DType::Int64));
  EXPECT_THROW(values(nn::cross_entropy(logits, bad_target)), IndexError);
  EXPECT_THROW(values(nn::nll_loss(logits, bad_target)), IndexError);
  EXPECT_NO_THROW(values(nn::nll_loss(logits, on_cuda(tensor_of({0, 2}, {2}, DType::Int64)))));
}

// ---- initialisers ------------------------------------------------------------------------

TEST(CudaNn, InitialisersDrawTheCpuStreams) {
  RCUDA_REQUIRE_CUDA();
  using Fill = std::function<void(const Tensor&)>;
  const std::vector<std::pair<Fill, bool>> fills = {
      {[](const Tensor& t) { init::uniform_(t, -2, 3); }, true},
      {[](const Tensor& t) { init::kaiming_uniform_(t, std::sqrt(5.0)); }, true},
      {[](const Tensor& t) { init::xavier_uniform_(t, 1.5); }, true},
      {[](const Tensor& t) { init::normal_(t, 1, 2); }, false},
      {[](const Tensor& t) { init::kaiming_normal_(t, 0, "fan_out", "relu"); }, false},
      {[](const Tensor& t) { init::xavier_normal_(t); }, false},
      {[](const Tensor& t) { init::eye_(t); }, true},
      {[](const Tensor& t) { init::constant_(t, -0.25); }, true}};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (const auto& [fill, uniform] : fills) {
      const Tensor cpu = Tensor::empty({64, 48}, dtype);
      const Tensor gpu = Tensor::empty({64, 48}, dtype, kCuda);
      manual_seed(2024);
      fill(cpu);
      manual_seed(2024);
      fill(gpu);
      const double tol = uniform ? backend_tolerance(dtype) : 3 * normal_tolerance(dtype);
      EXPECT_TRUE(all_close(values(gpu), values(cpu), tol)) << dtype_name(dtype);
    }
  }
}

TEST(CudaNn, TruncNormalOnTheGpuStaysInBoundsWithTheRightMoments) {
  RCUDA_REQUIRE_CUDA();
  struct Case {
    double mean, std, a, b;
  };
  for (const Case& c :
       {Case{0, 1, -2, 2}, Case{0, 1, 0.1, 0.3}, Case{0, 1, 3, 6}, Case{1, 2, -9, -5}}) {
    SCOPED_TRACE(std::to_string(c.a) + " " + std::to_string(c.b));
    const Tensor gpu = Tensor::empty({200000}, DType::Float32, kCuda);
    init::trunc_normal_(gpu, c.mean, c.std, c.a, c.b);
    const Tensor cpu = Tensor::empty({200000}, DType::Float32);
    init::trunc_normal_(cpu, c.mean, c.std, c.a, c.b);
    const std::vector<double> g = values(gpu), h = values(cpu);
    EXPECT_GE(*std::min_element(g.begin(), g.end()), c.a);
    EXPECT_LE(*std::max_element(g.begin(), g.end()), c.b);
    // Means of two samples of the same distribution: within 6 standard errors of each other.
    double mg = 0, mh = 0, var = 0;
    for (size_t i = 0; i < g.size(); ++i) mg += g[i] / g.size(), mh += h[i] / h.size();
    for (double x : h) var += (x - mh) * (x - mh) / h.size();
    EXPECT_NEAR(mg, mh, 6 * std::sqrt(2 * var / h.size()));
  }
}

}  // namespace
}  // namespace rcuda::test
