// What CUDA does not offer yet (src/backend/cuda/unsupported.cpp): constant padding and area
// interpolation (built from fill, copy and adaptive pooling) run and match the CPU, forward and
// backward; the other padding and interpolation modes and the recurrent layers are refused with
// a DeviceError naming the mode.
#include "rcuda/nn/resample.h"
#include "rcuda/nn/rnn.h"
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

TEST(CudaResample, OtherModesAreRefusedWithTheirName) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = on_cuda(random_tensor({1, 2, 4, 4}, DType::Float32));
  for (const char* mode : {"reflect", "replicate", "circular"}) {
    const std::string message = error_message([&] { nn::pad(x, {1, 1, 1, 1}, mode); });
    EXPECT_NE(message.find(std::string("'") + mode + "' is not supported on CUDA yet"),
              std::string::npos)
        << message;
  }
  EXPECT_NE(error_message([&] {
              nn::interpolate(x, {8, 8}, {}, "bilinear");
            }).find("not supported on CUDA yet"),
            std::string::npos);
}

TEST(CudaRnn, RecurrentLayersAreRefusedWithTheirMode) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = on_cuda(random_tensor({4, 2, 3}, DType::Float32));
  std::vector<Tensor> weights;
  for (const Shape& shape : std::vector<Shape>{{20, 3}, {20, 5}, {20}, {20}})
    weights.push_back(on_cuda(random_tensor(shape, DType::Float32)));
  const std::string message = error_message([&] { nn::lstm(x, Tensor(), Tensor(), weights); });
  EXPECT_NE(message.find("LSTM layers are not supported on CUDA yet"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace rcuda::test
