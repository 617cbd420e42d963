// Constant padding and area interpolation on CUDA, which ops build from fill, copy and adaptive
// pooling rather than the resampling primitives: they match the CPU, forward and backward.
#include "rcuda/nn/resample.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

TEST(CudaResample, ConstantPadAndAreaMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = random_tensor({2, 3, 5, 6}, DType::Float32);
  const Tensor padded = nn::pad(on_cuda(x), {2, 1, -1, 3}, "constant", 1.5);
  EXPECT_TRUE(all_close(values(padded), values(nn::pad(x, {2, 1, -1, 3}, "constant", 1.5)), 0));
  const Tensor area = nn::interpolate(on_cuda(x), {3, 4}, {}, "area");
  EXPECT_TRUE(all_close(values(area), values(nn::interpolate(x, {3, 4}, {}, "area")),
                        backend_tolerance(DType::Float32)));
  const Tensor leaf = on_cuda(x);
  leaf.requires_grad_();
  autograd::backward(sum(nn::pad(leaf, {2, 1, -1, 3}, "constant", 0.0)));
  // Each kept element appears once in the output; the cropped row gets no gradient.
  std::vector<double> want(x.numel(), 1.0);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t w = 0; w < 6; ++w) want[((n * 3 + c) * 5 + 0) * 6 + w] = 0;
  EXPECT_TRUE(all_close(values(leaf.grad()), want, 0));
}

}  // namespace
}  // namespace rcuda::test
