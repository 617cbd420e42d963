// rcuda's convolutions on the GPU, on the layer PyTorch is measured by (bench/torch_conv.py runs
// the same): conv 3x3, 256 -> 256 channels, 56x56, batch 64, padding 1. Forward in float16
// (channels-last, the layout tensor cores read without a transpose, and contiguous, the anchor's),
// bfloat16 channels-last, float32 with TF32 on and off; the two backward passes in float16
// channels-last; each with cuDNN's heuristics (the default) and autotuned (cudnn benchmark).
// Prints `name: value` lines; bench/compare.py pairs them with PyTorch's. Device timings are
// CUDA-event medians after warm-up (the warm-up builds and caches each plan).
// Options: --quick (batch 8), --no-benchmark (heuristics only), --cpu (a small float32 CPU figure).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "rcuda/backend/cuda.h"
#include "rcuda/rcuda.h"

namespace {

using rcuda::Device;
using rcuda::DeviceType;
using rcuda::DType;
using rcuda::MemoryFormat;
using rcuda::Tensor;

const Device kCuda(DeviceType::CUDA, 0);

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double cuda_ms(const std::function<void()>& work, int iters = 20, int warm = 3) {
  for (int i = 0; i < warm; ++i) work();
  rcuda::cuda::synchronize(0);
  std::vector<double> ts;
  for (int i = 0; i < iters; ++i) ts.push_back(rcuda::cuda::time_ms(0, work));
  return median(ts);
}

void log(const std::string& name, double value) {
  std::printf("%s: %.4g\n", name.c_str(), value);
  std::fflush(stdout);
}

// x in memory format f, on the GPU (made there: a copy to the device arrives contiguous).
Tensor on_gpu(const Tensor& x, DType dtype, MemoryFormat f) {
  const Tensor d = rcuda::to(x, kCuda, dtype);
  Tensor out = rcuda::empty_with_format(d.shape(), dtype, kCuda, f);
  rcuda::copy_(out, d);
  return out;
}

struct Layer {
  int64_t n, c, k, hw;
  double flop() const { return 2.0 * n * k * c * 9 * hw * hw; }
  std::string name() const {
    return "conv3x3_" + std::to_string(c) + "_" + std::to_string(hw) + "_b" + std::to_string(n);
  }
};

void bench_forward(const Layer& l, const std::string& suffix, DType dtype, MemoryFormat f,
                   const Tensor& x, const Tensor& w) {
  rcuda::ConvParams p;
  p.padding = {1, 1};
  const Tensor xd = on_gpu(x, dtype, f), wd = on_gpu(w, dtype, f);
  const double ms = cuda_ms([&] { rcuda::ops::conv2d(xd, wd, Tensor(), p); });
  log(l.name() + "_" + suffix + "_TFLOPs", l.flop() / ms / 1e9);
}

void bench_backward(const Layer& l, const std::string& suffix, DType dtype, MemoryFormat f,
                    const Tensor& x, const Tensor& w) {
  rcuda::ConvParams p;
  p.padding = {1, 1};
  const Tensor xd = on_gpu(x, dtype, f), wd = on_gpu(w, dtype, f);
  const Tensor g = on_gpu(rcuda::randn({l.n, l.k, l.hw, l.hw}), dtype, f);
  log(l.name() + "_" + suffix + "_dgrad_TFLOPs",
      l.flop() / cuda_ms([&] { rcuda::ops::conv2d_backward_input(g, wd, xd.shape(), p, f); }) /
          1e9);
  log(l.name() + "_" + suffix + "_wgrad_TFLOPs",
      l.flop() / cuda_ms([&] { rcuda::ops::conv2d_backward_weight(g, xd, wd.shape(), p, f); }) /
          1e9);
}

void bench_all(const Layer& l, const std::string& mode) {
  rcuda::manual_seed(0);
  const Tensor x = rcuda::randn({l.n, l.c, l.hw, l.hw}), w = rcuda::randn({l.k, l.c, 3, 3});
  const std::string m = mode.empty() ? "" : "_" + mode;
  bench_forward(l, "fp16" + m, DType::Float16, MemoryFormat::Contiguous, x, w);
  bench_forward(l, "fp16_channels_last" + m, DType::Float16, MemoryFormat::ChannelsLast, x, w);
  bench_forward(l, "bf16_channels_last" + m, DType::BFloat16, MemoryFormat::ChannelsLast, x, w);
  rcuda::cuda::set_allow_conv_tf32(false);
  bench_forward(l, "fp32" + m, DType::Float32, MemoryFormat::Contiguous, x, w);
  bench_forward(l, "fp32_channels_last" + m, DType::Float32, MemoryFormat::ChannelsLast, x, w);
  rcuda::cuda::set_allow_conv_tf32(true);
  bench_forward(l, "tf32" + m, DType::Float32, MemoryFormat::Contiguous, x, w);
  bench_forward(l, "tf32_channels_last" + m, DType::Float32, MemoryFormat::ChannelsLast, x, w);
  bench_backward(l, "fp16_channels_last" + m, DType::Float16, MemoryFormat::ChannelsLast, x, w);
}

void bench_cpu() {
  rcuda::manual_seed(0);
  const Tensor x = rcuda::randn({8, 64, 56, 56}), w = rcuda::randn({64, 64, 3, 3});
  rcuda::ConvParams p;
  p.padding = {1, 1};
  rcuda::ops::conv2d(x, w, Tensor(), p);  // makes and caches the primitive
  std::vector<double> ts;
  for (int i = 0; i < 5; ++i) {
    const auto t = std::chrono::steady_clock::now();
    rcuda::ops::conv2d(x, w, Tensor(), p);
    ts.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
  }
  log("conv3x3_64_56_b8_fp32_cpu_ms", median(ts));
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, benchmark = true, cpu = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--no-benchmark") == 0) benchmark = false;
    if (std::strcmp(argv[i], "--cpu") == 0) cpu = true;
  }
  if (cpu) bench_cpu();
  if (rcuda::cuda::device_count() == 0) {
    std::printf("no CUDA device: %s\n", rcuda::cuda::unavailable_reason().c_str());
    return cpu ? 0 : 1;
  }
  const Layer layer{quick ? 8 : 64, 256, 256, 56};
  bench_all(layer, "");
  if (benchmark) {
    rcuda::cuda::set_cudnn_benchmark(true);
    bench_all(layer, "benchmark");
    rcuda::cuda::set_cudnn_benchmark(false);
  }
  return 0;
}
