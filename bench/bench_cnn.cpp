// The MNIST-example CNN's training step from C++ (class MnistNet of
// shared/anchors/torch_train_h200.py: conv 3x3 1 -> 32, relu, conv 3x3 32 -> 64, relu, max pool 2,
// dropout 0.25, flatten, linear 9216 -> 128, relu, dropout 0.5, linear 128 -> 10, log_softmax +
// nll_loss), beside PyTorch's (bench/torch_cnn.py): zero_grad, forward, loss, backward, Adam
// (lr 1e-3). One fixed random batch of 28x28 images, as the anchor.
//   bench_cnn [--device cuda|cpu] [--dtype float32|bfloat16] [--channels-last] [--batch 128]
//             [--steps 50] [--chunks 7] [--warmup 10] [--no-benchmark] [--loss nll|ce]
//             [--profile-steps N]
// --loss ce takes cross_entropy on the logits instead of log_softmax + nll_loss (the same value);
// --profile-steps runs N more steps at the end, host clock only, for a sampling profiler.
// Prints `name: value` lines (mnistcnn_b128_fp32_step_us, ...; "_cpu" off the GPU, "_ce" for
// --loss ce).
#include <string>
#include <vector>

#include "mnist_net.h"
#include "train_step.h"

using rcuda::Device;
using rcuda::DType;
using rcuda::Tensor;

int main(int argc, char** argv) {
  bench::Options o = bench::parse(argc, argv, " [--loss nll|ce]");
  if (o.batch == 0) o.batch = 128;
  if (o.steps == 0) o.steps = 50;  // the anchor's per_step_us defaults
  if (o.chunks == 0) o.chunks = 7;
  if (o.warmup < 0) o.warmup = 10;
  if (o.loss != "nll" && o.loss != "ce") {
    std::fprintf(stderr, "bench_cnn: --loss must be nll or ce, not '%s'\n", o.loss.c_str());
    return 2;
  }
  const Device device = Device::parse(o.device);
  if (device.is_cuda() && rcuda::cuda::device_count() == 0) {
    std::printf("no CUDA device: %s\n", rcuda::cuda::unavailable_reason().c_str());
    return 1;
  }
  if (device.is_cuda()) rcuda::cuda::set_cudnn_benchmark(o.benchmark);
  const bool ce = o.loss == "ce";
  const std::string name =
      "mnistcnn_b" + std::to_string(o.batch) + "_" + bench::tag_of(o, device) + (ce ? "_ce" : "");

  rcuda::manual_seed(0);
  const DType dtype = bench::dtype_of(o);
  const bench::MnistNet model(dtype, device, bench::format_of(o), ce);
  const Tensor x =
      bench::in_format(rcuda::randn({o.batch, 1, 28, 28}), dtype, device, bench::format_of(o));
  const Tensor y = rcuda::randint(0, 10, {o.batch}, rcuda::TensorOptions(DType::Int64, device));
  rcuda::optim::Adam opt(model.parameters(), rcuda::optim::AdamOptions{});

  bench::LossTrace trace;
  const auto step = [&] {
    opt.zero_grad();
    Tensor loss;
    {
      std::optional<rcuda::AutocastGuard> autocast;
      bench::forward_autocast(autocast, o, device);
      loss = model.loss(x, y);
    }
    rcuda::autograd::backward(loss);
    opt.step();
    trace.record(loss);
  };
  const double us = bench::time_steps(name, device, step, trace, o.warmup, o.steps, o.chunks);
  bench::log(name + "_step_us", us);
  // What the host spends per step (on the GPU, below the step time when the device is the
  // bottleneck): one more chunk, host clock only.
  bench::log(name + "_host_us", bench::host_us(device, step, o.steps));
  if (o.profile_steps > 0)
    bench::log(name + "_profiled_host_us", bench::host_us(device, step, o.profile_steps));
  return 0;
}
