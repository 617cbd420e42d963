// An fp8 MLP block against its bfloat16 twin on the GPU (docs/mixed-precision.md): x [M, 4096]
// -> linear 4096 -> 16384 -> gelu -> linear 16384 -> 4096, bfloat16 activations and weights, the
// two linears either nn::linear (cuBLASLt bf16) or nn::fp8_linear (delayed scaling, e4m3
// forward, e5m2 gradients). Forward and backward of the block (no optimizer) and the forward
// alone under no-grad, timed as train_step.h times steps (CUDA events over chunks, the median);
// the fp8 output's error against the bf16 block's; and the cast kernel's bandwidth.
//   fp8_block_bf16_fwd_bwd_us, fp8_block_fp8_fwd_bwd_us, fp8_block_fwd_bwd_speedup
//   fp8_block_bf16_fwd_us, fp8_block_fp8_fwd_us, fp8_block_fwd_speedup
//   fp8_block_*_tflops (6 M H D flops for forward and backward, 2 M H D for the forward)
//   fp8_block_output_rel_error   ||y_fp8 - y_bf16|| / ||y_bf16|| after 3 steps of history
//   fp8_scaled_mm_4096x16384_us  one scaled_mm of the first linear's shape
//   fp8_cast_transpose_GBps      float8_cast of [M, 16384] bf16 to both layouts
//   bench_fp8 [--batch 8192] [--steps 20] [--chunks 5]
#include <cmath>
#include <cstdio>
#include <functional>

#include "rcuda/nn/fp8_linear.h"
#include "rcuda/ops/float8.h"
#include "train_step.h"

namespace {

using rcuda::Device;
using rcuda::DType;
using rcuda::Tensor;
namespace nn = rcuda::nn;

constexpr int64_t kModel = 4096, kHidden = 16384;

struct Block {
  Tensor w1, b1, w2, b2;
  nn::Fp8LinearState s1, s2;
  explicit Block(Device device)
      : w1(weight({kHidden, kModel}, device)),
        b1(weight({kHidden}, device)),
        w2(weight({kModel, kHidden}, device)),
        b2(weight({kModel}, device)),
        s1(device, {16, 0}),
        s2(device, {16, 0}) {}
  static Tensor weight(const rcuda::Shape& shape, Device device) {
    const double fan_in = static_cast<double>(shape.back());
    Tensor t = rcuda::mul(rcuda::rand(shape, rcuda::TensorOptions(DType::Float32, device)),
                          2.0 / std::sqrt(fan_in));
    t = rcuda::to(rcuda::sub(t, 1.0 / std::sqrt(fan_in)), DType::BFloat16);
    t.requires_grad_();
    return t;
  }
  Tensor bf16(const Tensor& x) const { return nn::linear(nn::gelu(nn::linear(x, w1, b1)), w2, b2); }
  Tensor fp8(const Tensor& x) {
    return nn::fp8_linear(nn::gelu(nn::fp8_linear(x, w1, b1, s1)), w2, b2, s2);
  }
  void zero_grad() const {
    for (const Tensor& p : {w1, b1, w2, b2}) p.set_grad(Tensor());
  }
};

double norm2(const Tensor& t) {
  return rcuda::item(rcuda::norm(rcuda::to(t, DType::Float32))).to_double();
}

}  // namespace

int main(int argc, char** argv) {
  bench::Options o = bench::parse(argc, argv);
  if (o.steps == 0) o.steps = 20;
  if (o.chunks == 0) o.chunks = 5;
  const int64_t m = o.batch > 0 ? o.batch : 8192;
  if (rcuda::cuda::device_count() == 0) {
    std::printf("no CUDA device: %s\n", rcuda::cuda::unavailable_reason().c_str());
    return 1;
  }
  const Device device = Device::parse("cuda");
  rcuda::manual_seed(0);
  Block block(device);
  const Tensor x = rcuda::to(
      rcuda::randn({m, kModel}, rcuda::TensorOptions(DType::Float32, device)), DType::BFloat16);
  const Tensor g = rcuda::to(
      rcuda::mul(rcuda::randn({m, kModel}, rcuda::TensorOptions(DType::Float32, device)), 1e-3),
      DType::BFloat16);
  const double flops =
      2.0 * static_cast<double>(m) * kModel * kHidden * 2;  // both linears, forward
  const auto time = [&](const std::string& name, double step_flops,
                        const std::function<void()>& step) {
    for (int i = 0; i < 3; ++i) step();
    const double us = bench::per_step_us(device, step, o.steps, o.chunks);
    bench::log(name + "_us", us);
    bench::log(name + "_tflops", step_flops / us / 1e6);
    return us;
  };

  const double bf16_train = time("fp8_block_bf16_fwd_bwd", 3 * flops, [&] {
    block.zero_grad();
    rcuda::autograd::backward(block.bf16(x), g);
  });
  const double fp8_train = time("fp8_block_fp8_fwd_bwd", 3 * flops, [&] {
    block.zero_grad();
    rcuda::autograd::backward(block.fp8(x), g);
  });
  bench::log("fp8_block_fwd_bwd_speedup", bf16_train / fp8_train);
  {
    rcuda::NoGradGuard no_grad;
    const double bf16_fwd = time("fp8_block_bf16_fwd", flops, [&] { block.bf16(x); });
    const double fp8_fwd = time("fp8_block_fp8_fwd", flops, [&] { block.fp8(x); });
    bench::log("fp8_block_fwd_speedup", bf16_fwd / fp8_fwd);
    const Tensor reference = block.bf16(x);
    bench::log("fp8_block_output_rel_error",
               norm2(rcuda::sub(block.fp8(x), reference)) / norm2(reference));

    // The first linear's product alone, as torch_fp8.py times torch._scaled_mm.
    const Tensor one = rcuda::ones({1}, rcuda::TensorOptions(DType::Float32, device));
    const Tensor a8 = rcuda::to(x, DType::Float8E4M3FN);
    const Tensor b8 = rcuda::to(block.w1, DType::Float8E4M3FN).t();
    time("fp8_scaled_mm_4096x16384", 2.0 * static_cast<double>(m) * kModel * kHidden,
         [&] { rcuda::scaled_mm(a8, b8, one, one, DType::BFloat16); });

    const Tensor h = rcuda::to(
        rcuda::randn({m, kHidden}, rcuda::TensorOptions(DType::Float32, device)), DType::BFloat16);
    const Tensor scale = rcuda::ones({1}, rcuda::TensorOptions(DType::Float32, device));
    const Tensor amax = rcuda::zeros({1}, rcuda::TensorOptions(DType::Float32, device));
    const auto cast = [&] {
      rcuda::ops::float8_cast(h, scale, amax, DType::Float8E4M3FN, true, true);
    };
    for (int i = 0; i < 3; ++i) cast();
    const double us = bench::per_step_us(device, cast, o.steps, o.chunks);
    bench::log("fp8_cast_transpose_GBps", static_cast<double>(m) * kHidden * 4 / us / 1e3);
  }
  const rcuda::MemoryStats s = rcuda::cuda::memory_stats(device.index);
  bench::log("fp8_block_peak_allocated_MB", static_cast<double>(s.peak_allocated_bytes) / 1e6);
  return 0;
}
