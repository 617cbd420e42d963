// Autocast (rcuda/autograd/autocast.h): gradients reach float32 parameters through the recorded
// casts with the values of double loops over the rounded inputs, the parameter cast cache (reused
// within a region, refreshed after an in-place update, dropped at the end), nesting and
// disabling, per-thread state, float64 and integer inputs left alone, and bad dtypes refused.
// tests/golden/test_golden_autocast.cpp checks the table's output dtypes against PyTorch.
#include <thread>

#include "rcuda/autograd/autocast.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

// t's values rounded to dtype and read back (what a cast feeds the op).
std::vector<double> rounded(const Tensor& t, DType dtype) {
  return to_doubles(to(to(t, dtype), DType::Float64));
}

TEST(Autocast, LinearRunsInBfloat16AndItsGradientsReachFloat32Parameters) {
  const Tensor x = random_tensor({5, 7}, DType::Float32);
  Tensor w = random_tensor({3, 7}, DType::Float32), b = random_tensor({3}, DType::Float32);
  w.requires_grad_();
  b.requires_grad_();
  Tensor y;
  {
    const AutocastGuard autocast(DeviceType::CPU, DType::BFloat16);
    EXPECT_TRUE(is_autocast_enabled(DeviceType::CPU));
    EXPECT_FALSE(is_autocast_enabled(DeviceType::CUDA));
    y = nn::linear(x, w, b);
  }
  EXPECT_FALSE(is_autocast_enabled(DeviceType::CPU));
  ASSERT_EQ(y.dtype(), DType::BFloat16);
  // Forward: double sums over the bfloat16 inputs, rounded to bfloat16 once.
  const std::vector<double> xr = rounded(x, DType::BFloat16), wr = rounded(w, DType::BFloat16),
                            br = rounded(b, DType::BFloat16);
  std::vector<double> want(15);
  for (int i = 0; i < 5; ++i)
    for (int o = 0; o < 3; ++o) {
      double s = br[o];
      for (int k = 0; k < 7; ++k) s += xr[i * 7 + k] * wr[o * 7 + k];
      want[i * 3 + o] = s;
    }
  EXPECT_TRUE(all_close(to_doubles(y), want, 1e-2));
  // Backward of sum(y): dw[o, k] = sum_i x[i, k], db[o] = 5, in the parameters' float32.
  autograd::backward(sum(y));
  ASSERT_EQ(w.grad().dtype(), DType::Float32);
  ASSERT_EQ(b.grad().dtype(), DType::Float32);
  std::vector<double> dw(21), db(3, 5.0);
  for (int o = 0; o < 3; ++o)
    for (int k = 0; k < 7; ++k)
      for (int i = 0; i < 5; ++i) dw[o * 7 + k] += xr[i * 7 + k];
  EXPECT_TRUE(all_close(to_doubles(w.grad()), dw, 1e-2));
  EXPECT_TRUE(all_close(to_doubles(b.grad()), db, 0));
}

TEST(Autocast, LossesRunInFloat32OverLowPrecisionLogits) {
  Tensor logits = random_tensor({6, 4}, DType::Float32);
  logits.requires_grad_();
  const Tensor target = random_tensor({6}, DType::Int64, 0, 3);
  Tensor loss;
  {
    const AutocastGuard autocast(DeviceType::CPU, DType::BFloat16);
    const Tensor low = nn::linear(logits, to(eye(4), DType::Float32));  // bfloat16 logits
    ASSERT_EQ(low.dtype(), DType::BFloat16);
    loss = nn::cross_entropy(low, target);
  }
  EXPECT_EQ(loss.dtype(), DType::Float32);
  // Reference: the log-softmax loss in double over the bfloat16-rounded logits.
  const std::vector<double> z = rounded(logits, DType::BFloat16), t = to_doubles(target);
  double want = 0;
  for (int i = 0; i < 6; ++i) {
    double m = z[i * 4], s = 0;
    for (int c = 0; c < 4; ++c) m = std::max(m, z[i * 4 + c]);
    for (int c = 0; c < 4; ++c) s += std::exp(z[i * 4 + c] - m);
    want += m + std::log(s) - z[i * 4 + static_cast<int>(t[i])];
  }
  EXPECT_NEAR(item(loss).to_double(), want / 6, 1e-5);
  autograd::backward(loss);
  EXPECT_EQ(logits.grad().dtype(), DType::Float32);
}

TEST(Autocast, ParameterCastsAreCachedWithinARegionAndRefreshedAfterAnUpdate) {
  const Tensor x = random_tensor({2, 4}, DType::Float32);
  Tensor w = random_tensor({3, 4}, DType::Float32);
  w.requires_grad_();
  {
    const AutocastGuard autocast(DeviceType::CPU, DType::BFloat16);
    const Tensor first = nn::linear(x, w), second = nn::linear(x, w);
    EXPECT_EQ(to_doubles(first), to_doubles(second));
    // Both uses reach w: the cached cast is the same recorded node, used twice.
    autograd::backward(sum(add(first, second)));
    std::vector<double> dw(12);
    const std::vector<double> xr = rounded(x, DType::BFloat16);
    for (int o = 0; o < 3; ++o)
      for (int k = 0; k < 4; ++k) dw[o * 4 + k] = 2 * (xr[k] + xr[4 + k]);
    EXPECT_TRUE(all_close(to_doubles(w.grad()), dw, 1e-2));
    // An in-place update inside the region (as an optimizer step would make) is seen.
    {
      NoGradGuard no_grad;
      mul_(w, full({1}, 2.0, TensorOptions(DType::Float32)));
    }
    const Tensor after = nn::linear(x, w);
    EXPECT_TRUE(all_close(to_doubles(after), to_doubles(mul(first, 2.0)), 2e-2));
  }
}

TEST(Autocast, NestedGuardsRestoreAndDisable) {
  const Tensor x = random_tensor({2, 3}, DType::Float32), w = random_tensor({4, 3}, DType::Float32);
  const AutocastGuard outer(DeviceType::CPU, DType::BFloat16);
  EXPECT_EQ(nn::linear(x, w).dtype(), DType::BFloat16);
  {
    const AutocastGuard inner(DeviceType::CPU, DType::Float16);
    EXPECT_EQ(autocast_dtype(DeviceType::CPU), DType::Float16);
    EXPECT_EQ(nn::linear(x, w).dtype(), DType::Float16);
    {
      const AutocastGuard off(DeviceType::CPU, DType::Float16, /*enabled=*/false);
      EXPECT_EQ(nn::linear(x, w).dtype(), DType::Float32);
    }
    EXPECT_EQ(nn::linear(x, w).dtype(), DType::Float16);
  }
  EXPECT_EQ(autocast_dtype(DeviceType::CPU), DType::BFloat16);
  EXPECT_EQ(nn::linear(x, w).dtype(), DType::BFloat16);
  // A guard for another device type leaves CPU tensors alone.
  const AutocastGuard cuda_only(DeviceType::CUDA, DType::BFloat16);
  const AutocastGuard cpu_off(DeviceType::CPU, DType::BFloat16, false);
  EXPECT_EQ(nn::linear(x, w).dtype(), DType::Float32);
}

TEST(Autocast, Float64IntegerAndUnlistedOpsRunAsTheyAre) {
  const AutocastGuard autocast(DeviceType::CPU, DType::BFloat16);
  const Tensor x64 = random_tensor({3, 5}, DType::Float64),
               w64 = random_tensor({2, 5}, DType::Float64);
  EXPECT_EQ(nn::linear(x64, w64).dtype(), DType::Float64);
  // Integers are not cast: matmul's own refusal is what the caller sees.
  const Tensor i = random_tensor({3, 3}, DType::Int32, -3, 3);
  EXPECT_NE(error_message([&] { matmul(i, i); }).find("expected floating operands, got int32"),
            std::string::npos);
  const Tensor x = random_tensor({3, 5}, DType::Float32);
  EXPECT_EQ(nn::relu(x).dtype(), DType::Float32);    // not in the table
  EXPECT_EQ(softmax(x, 1).dtype(), DType::Float32);  // kept on the CPU, as PyTorch
  // A low-precision result meeting a float32 tensor promotes, as everywhere.
  EXPECT_EQ(
      add(nn::linear(x, random_tensor({4, 5}, DType::Float32)), random_tensor({4}, DType::Float32))
          .dtype(),
      DType::Float32);
}

TEST(Autocast, StateIsPerThread) {
  const AutocastGuard autocast(DeviceType::CPU, DType::BFloat16);
  bool other = true;
  std::thread([&] { other = is_autocast_enabled(DeviceType::CPU); }).join();
  EXPECT_FALSE(other);
  EXPECT_TRUE(is_autocast_enabled(DeviceType::CPU));
}

TEST(Autocast, BadDtypesAreRefused) {
  const std::string message =
      error_message([] { AutocastGuard g(DeviceType::CPU, DType::Float32); });
  EXPECT_NE(message.find("autocast: dtype must be float16 or bfloat16, got float32"),
            std::string::npos)
      << message;
  EXPECT_FALSE(is_autocast_enabled(DeviceType::CPU));
}

TEST(CudaAutocast, MatchesTheCpuAndRefusesBinaryCrossEntropy) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = random_tensor({8, 16}, DType::Float32),
               w = random_tensor({4, 16}, DType::Float32);
  const Tensor target = random_tensor({8}, DType::Int64, 0, 3);
  for (DType low : {DType::Float16, DType::BFloat16}) {
    Tensor cpu_loss, cuda_loss, logits;
    {
      const AutocastGuard a(DeviceType::CPU, low);
      cpu_loss = nn::cross_entropy(nn::linear(x, w), target);
    }
    {
      const AutocastGuard a(DeviceType::CUDA, low);
      logits = nn::linear(on_cuda(x), on_cuda(w));
      EXPECT_EQ(logits.dtype(), low);
      EXPECT_EQ(softmax(logits, 1).dtype(), DType::Float32);  // float32 on CUDA, as PyTorch
      cuda_loss = nn::cross_entropy(logits, on_cuda(target));
      const std::string message = error_message([&] {
        nn::binary_cross_entropy(nn::sigmoid(logits), on_cuda(random_tensor({8, 4}, low, 0, 1)));
      });
      EXPECT_NE(message.find("binary_cross_entropy: unsafe to autocast on CUDA"), std::string::npos)
          << message;
    }
    EXPECT_EQ(cuda_loss.dtype(), DType::Float32);
    EXPECT_NEAR(item(cuda_loss).to_double(), item(cpu_loss).to_double(), 2e-2) << dtype_name(low);
  }
}

}  // namespace
}  // namespace rcuda::test
