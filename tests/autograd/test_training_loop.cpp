// A whole training loop through the engine: an MLP trained with Adam on a fixed random problem
// learns (its loss falls), and its memory stays flat: after the first step, every step frees
// the graph, the saved tensors and the old gradients, so the allocator holds the same bytes
// after step 2 as after step 2,000 (read from the allocator's statistics, CPU and CUDA).
#include "rcuda/backend/cuda.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

struct Mlp {
  std::vector<Tensor> params;
  explicit Mlp(Device device) {
    const std::vector<Shape> shapes = {{32, 16}, {32}, {4, 32}, {4}};
    for (const Shape& s : shapes) {
      Tensor p = zeros(s, TensorOptions(DType::Float32, device));
      if (s.size() == 2) nn::init::kaiming_uniform_(p, std::sqrt(5.0));
      p.requires_grad_();
      params.push_back(p);
    }
  }
  Tensor forward(const Tensor& x) const {
    return nn::linear(nn::relu(nn::linear(x, params[0], params[1])), params[2], params[3]);
  }
};

int64_t allocated_bytes(Device device) {
  return device.is_cuda() ? cuda::memory_stats(device.index).allocated_bytes
                          : cpu_allocator().stats().allocated_bytes;
}

void train_and_watch_memory(Device device, int steps) {
  manual_seed(7);
  const TensorOptions f32(DType::Float32, device);
  const Tensor x = randn({64, 16}, f32);
  const Tensor y = to(randint(0, 4, {64}), device);
  Mlp model(device);
  optim::Adam adam(model.params, optim::AdamOptions{});
  double first_loss = 0, last_loss = 0;
  int64_t after_second = 0;
  for (int step = 0; step < steps; ++step) {
    adam.zero_grad();
    Tensor loss = nn::cross_entropy(model.forward(x), y);
    autograd::backward(loss);
    adam.step();
    if (step == 0) first_loss = item(loss).to_double();
    if (step == steps - 1) last_loss = item(loss).to_double();
    loss = Tensor();
    if (step == 1) after_second = allocated_bytes(device);
    if (step > 1) {
      ASSERT_EQ(allocated_bytes(device), after_second) << "step " << step;
    }
  }
  EXPECT_LT(last_loss, 0.5 * first_loss);
}

TEST(TrainingLoop, LearnsAndHoldsConstantMemoryOnTheCpu) {
  train_and_watch_memory(Device(DeviceType::CPU), 300);
}

TEST(TrainingLoop, LearnsAndHoldsConstantMemoryOnCuda) {
  RCUDA_REQUIRE_CUDA();
  train_and_watch_memory(kCuda, 2000);
}

}  // namespace
}  // namespace rcuda::test
