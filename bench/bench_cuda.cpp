// rcuda on the GPU, on the work PyTorch is measured by (bench/torch_baseline.py runs the same
// shapes): randn, matmul in every precision, copies, memory-bound add and sum, softmax, and the
// per-op overhead. Prints one `name: value` line per figure (bench/compare.py pairs them with
// PyTorch's and prints ratios). Device timings are CUDA-event medians after warm-up.
// Options: --quick (small shapes), --no-cpu, --only randn|samplers|matmul|copies|memory|overhead.
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

double host_ms(const std::function<void()>& work, int iters = 5, int warm = 1) {
  for (int i = 0; i < warm; ++i) work();
  std::vector<double> ts;
  for (int i = 0; i < iters; ++i) {
    const auto t = std::chrono::steady_clock::now();
    work();
    ts.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
  }
  return median(ts);
}

void log(const std::string& name, double value) {
  std::printf("%s: %.4g\n", name.c_str(), value);
  std::fflush(stdout);
}

void bench_randn(int64_t n, bool cpu) {
  // More runs than the other figures: 0.13 ms kernels vary by 2% between runs.
  const double ms = cuda_ms([&] { rcuda::randn({n, n}, {DType::Float32, kCuda}); }, 50, 10);
  log("randn_1e4_cuda_ms", ms);
  log("randn_1e4_cuda_GBps", n * n * 4 / ms / 1e6);
  if (cpu) log("randn_1e4_cpu_ms", host_ms([&] { rcuda::randn({n, n}); }));
}

// Poisson and Gamma draws of 1e7 float32 parameters (rates 4 and 40: both sides of the Poisson
// sampler's switch at 10; concentrations 0.5 and 5: both sides of Gamma's boost at 1).
void bench_samplers(int64_t n, bool cpu) {
  const rcuda::TensorOptions on(DType::Float32, kCuda);
  const Tensor rates =
      rcuda::where(rcuda::lt(rcuda::rand({n}, on), 0.5), 4.0, rcuda::full({n}, 40.0, on));
  const Tensor alpha =
      rcuda::where(rcuda::lt(rcuda::rand({n}, on), 0.5), 0.5, rcuda::full({n}, 5.0, on));
  log("poisson_1e7_cuda_ms", cuda_ms([&] { rcuda::poisson(rates); }));
  log("gamma_1e7_cuda_ms", cuda_ms([&] { rcuda::standard_gamma(alpha); }));
  if (cpu) {
    const Device cpu_device(DeviceType::CPU, 0);
    const Tensor r = rcuda::to(rates, cpu_device), a = rcuda::to(alpha, cpu_device);
    log("poisson_1e7_cpu_ms", host_ms([&] { rcuda::poisson(r); }));
    log("gamma_1e7_cpu_ms", host_ms([&] { rcuda::standard_gamma(a); }));
  }
}

void bench_matmul(int64_t n) {
  const Tensor a = rcuda::randn({n, n}, {DType::Float32, kCuda});
  const Tensor b = rcuda::randn({n, n}, {DType::Float32, kCuda});
  const double flop = 2.0 * n * n * n;
  rcuda::cuda::set_allow_tf32(false);
  log("matmul_1e4_fp32_TFLOPs", flop / cuda_ms([&] { rcuda::matmul(a, b); }) / 1e9);
  rcuda::cuda::set_allow_tf32(true);
  log("matmul_1e4_tf32_TFLOPs", flop / cuda_ms([&] { rcuda::matmul(a, b); }) / 1e9);
  rcuda::cuda::set_allow_tf32(false);
  for (DType d : {DType::Float16, DType::BFloat16}) {
    const Tensor ah = rcuda::to(a, d), bh = rcuda::to(b, d);
    log(std::string("matmul_1e4_") + (d == DType::Float16 ? "torch.float16" : "torch.bfloat16") +
            "_TFLOPs",
        flop / cuda_ms([&] { rcuda::matmul(ah, bh); }) / 1e9);
  }
}

void bench_matmul_8192(int64_t m) {
  const Tensor a = rcuda::randn({m, m}, {DType::BFloat16, kCuda});
  const Tensor b = rcuda::randn({m, m}, {DType::BFloat16, kCuda});
  const double flop = 2.0 * m * m * m;
  log("matmul_8192_bf16_TFLOPs", flop / cuda_ms([&] { rcuda::matmul(a, b); }) / 1e9);
  const Tensor a8 = rcuda::to(a, DType::Float8E4M3FN);
  // scaled_mm wants b column-major, as torch._scaled_mm: b.t().contiguous().t().
  const Tensor b8 = rcuda::contiguous(rcuda::to(b, DType::Float8E4M3FN).t()).t();
  const Tensor one = rcuda::full({}, 1.0, {DType::Float32, kCuda});
  log("matmul_8192_fp8_TFLOPs",
      flop / cuda_ms([&] { rcuda::scaled_mm(a8, b8, one, one, DType::BFloat16); }) / 1e9);
}

void bench_copies() {
  const int64_t bytes = int64_t{2} << 30;
  Tensor x = rcuda::empty({bytes}, {DType::UInt8, kCuda}),
         y = rcuda::empty({bytes}, {DType::UInt8, kCuda});
  rcuda::fill_(x, 1);
  log("d2d_copy_GBps_rw", 2.0 * bytes / cuda_ms([&] { rcuda::copy_(y, x); }) / 1e6);
  x = Tensor();
  y = Tensor();
  const int64_t gib = int64_t{1} << 30;
  const Tensor h = rcuda::cuda::pin_memory(rcuda::zeros({gib}, DType::UInt8));
  const Tensor d = rcuda::empty({gib}, {DType::UInt8, kCuda});
  log("h2d_pinned_GBps", gib / cuda_ms([&] { rcuda::copy_(d, h); }) / 1e6);
  log("d2h_pinned_GBps", gib / cuda_ms([&] { rcuda::copy_(h, d); }) / 1e6);
  const Tensor hp = rcuda::zeros({gib}, DType::UInt8);
  log("h2d_pageable_GBps", gib / cuda_ms([&] { rcuda::copy_(d, hp); }) / 1e6);
}

void bench_memory_bound(int64_t n) {
  const Tensor a = rcuda::randn({n}, {DType::Float32, kCuda});
  const Tensor b = rcuda::randn({n}, {DType::Float32, kCuda});
  const double bytes = static_cast<double>(n) * 4;
  log("add_2e8_GBps_rw", 3 * bytes / cuda_ms([&] { rcuda::add(a, b); }) / 1e6);
  log("sum_2e8_GBps", bytes / cuda_ms([&] { rcuda::sum(a); }) / 1e6);
  const Tensor s = rcuda::randn({4096, 4096}, {DType::Float32, kCuda});
  log("softmax_4096_ms", cuda_ms([&] { rcuda::softmax(s, 1); }));
}

void bench_overhead() {
  const Tensor a = rcuda::ones({1}, {DType::Float32, kCuda}),
               b = rcuda::ones({1}, {DType::Float32, kCuda});
  const int reps = 10000;
  for (int i = 0; i < 100; ++i) rcuda::add(a, b);
  rcuda::cuda::synchronize(0);
  log("op_overhead_cuda_us", host_ms([&] {
                               for (int i = 0; i < reps; ++i) rcuda::add(a, b);
                               rcuda::cuda::synchronize(0);
                             }) * 1e3 /
                                 reps);
  const Tensor c = rcuda::ones({1}), e = rcuda::ones({1});
  log("op_overhead_cpu_us", host_ms([&] {
                              for (int i = 0; i < reps; ++i) rcuda::add(c, e);
                            }) * 1e3 /
                                reps);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, cpu = true;
  std::string only;  // --only GROUP: randn, matmul, copies, memory or overhead
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--no-cpu") == 0) cpu = false;
    if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
  }
  auto wanted = [&](const char* group) { return only.empty() || only == group; };
  if (rcuda::cuda::device_count() == 0) {
    std::printf("bench_cuda: no CUDA device (%s)\n", rcuda::cuda::unavailable_reason().c_str());
    return 0;
  }
  const rcuda::cuda::DeviceProperties p = rcuda::cuda::properties(0);
  std::printf("device: %s (sm_%d%d, %d SMs)\n", p.name.c_str(), p.major, p.minor,
              p.multiprocessor_count);
  if (wanted("randn")) bench_randn(quick ? 2000 : 10000, cpu);
  if (wanted("samplers")) bench_samplers(quick ? 1000000 : 10000000, cpu);
  if (wanted("matmul")) {
    bench_matmul(quick ? 2048 : 10000);
    if (p.major * 10 + p.minor >= 89) bench_matmul_8192(quick ? 2048 : 8192);
  }
  if (wanted("copies")) bench_copies();
  if (wanted("memory")) bench_memory_bound(quick ? (int64_t{1} << 24) : (int64_t{1} << 28));
  if (wanted("overhead")) bench_overhead();
  return 0;
}
