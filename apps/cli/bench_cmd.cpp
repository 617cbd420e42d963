// `rcuda bench`: the table a user expects from a GPU stack: randn and matmul on the CPU and
// on CUDA, in milliseconds, with the speed-up. Device work is timed with CUDA events
// (rcuda::cuda::time_ms) and host work with a steady clock; each figure is the median of
// --repeat runs after warm-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "rcuda/backend/cpu.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/rcuda.h"

namespace rcuda::cli {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double cpu_ms(const std::function<void()>& work, int repeat) {
  work();  // warm-up: first-touch page faults, BLAS thread start
  std::vector<double> t;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count());
  }
  return median(t);
}

double cuda_ms(const std::function<void()>& work, int repeat) {
  for (int i = 0; i < 3; ++i) work();  // warm-up: pool growth, cuBLASLt heuristics
  cuda::synchronize(0);
  std::vector<double> t;
  for (int i = 0; i < repeat; ++i) t.push_back(cuda::time_ms(0, work));
  return median(t);
}

struct Row {
  std::string work;
  std::optional<double> cpu, gpu;
  double flop = 0;  // for TFLOP/s of matmul rows
};

void print(const std::vector<Row>& rows) {
  std::printf("%-30s %12s %12s %9s %12s\n", "work", "CPU ms", "CUDA ms", "speed-up",
              "CUDA TFLOP/s");
  for (const Row& r : rows) {
    auto cell = [](const std::optional<double>& v) {
      char b[32];
      if (!v) return std::string("-");
      std::snprintf(b, sizeof b, "%.3f", *v);
      return std::string(b);
    };
    std::string speedup = "-", tflops = "-";
    char b[32];
    if (r.cpu && r.gpu) {
      std::snprintf(b, sizeof b, "%.1fx", *r.cpu / *r.gpu);
      speedup = b;
    }
    if (r.gpu && r.flop > 0) {
      std::snprintf(b, sizeof b, "%.1f", r.flop / *r.gpu / 1e9);
      tflops = b;
    }
    std::printf("%-30s %12s %12s %9s %12s\n", r.work.c_str(), cell(r.cpu).c_str(),
                cell(r.gpu).c_str(), speedup.c_str(), tflops.c_str());
    std::fflush(stdout);
  }
}

}  // namespace

int bench(const BenchArgs& args) {
  const bool gpu = cuda::device_count() > 0;
  const int64_t n = args.size > 0 ? args.size : (gpu ? 10000 : 2000);
  const int cpu_repeat = args.repeat > 0 ? args.repeat : 3;
  const int gpu_repeat = args.repeat > 0 ? args.repeat : 10;
  const Device cuda0(DeviceType::CUDA, 0);
  const std::string shape = std::to_string(n) + "x" + std::to_string(n);

  std::printf(
      "rcuda bench: %s float32 unless stated; median of %d CPU / %d CUDA runs after warm-up\n",
      shape.c_str(), cpu_repeat, gpu_repeat);
  std::printf("CPU:  %u threads, BLAS %s\n", std::thread::hardware_concurrency(),
              cpu::blas_info().c_str());
  int cc = 0;
  if (gpu) {
    const cuda::DeviceProperties p = cuda::properties(0);
    cc = p.major * 10 + p.minor;
    std::printf("CUDA: %s (sm_%d), runtime %d, CUDA events\n\n", p.name.c_str(), cc,
                cuda::runtime_version());
  } else {
    std::printf("CUDA: not available (%s)\n\n", cuda::unavailable_reason().c_str());
  }

  std::vector<Row> rows;
  const double flop = 2.0 * n * n * n;
  Row randn_row{"randn " + shape, std::nullopt, std::nullopt, 0};
  if (!args.no_cpu) randn_row.cpu = cpu_ms([&] { randn({n, n}); }, cpu_repeat);
  if (gpu) randn_row.gpu = cuda_ms([&] { randn({n, n}, {DType::Float32, cuda0}); }, gpu_repeat);
  rows.push_back(randn_row);

  Row mm{"matmul " + shape + " fp32", std::nullopt, std::nullopt, flop};
  if (!args.no_cpu) {
    const Tensor a = randn({n, n}), b = randn({n, n});
    mm.cpu = cpu_ms([&] { matmul(a, b); }, cpu_repeat);
  }
  std::vector<Row> gpu_rows;
  if (gpu) {
    const Tensor a = randn({n, n}, {DType::Float32, cuda0}),
                 b = randn({n, n}, {DType::Float32, cuda0});
    const bool tf32 = cuda::allow_tf32();
    cuda::set_allow_tf32(false);
    mm.gpu = cuda_ms([&] { matmul(a, b); }, gpu_repeat);
    if (cc >= 80) {
      cuda::set_allow_tf32(true);
      gpu_rows.push_back({"matmul " + shape + " tf32", std::nullopt,
                          cuda_ms([&] { matmul(a, b); }, gpu_repeat), flop});
    }
    cuda::set_allow_tf32(tf32);
    if (cc >= 70) {
      const Tensor ah = to(a, DType::Float16), bh = to(b, DType::Float16);
      gpu_rows.push_back({"matmul " + shape + " fp16", std::nullopt,
                          cuda_ms([&] { matmul(ah, bh); }, gpu_repeat), flop});
    }
    if (cc >= 80) {
      const Tensor ab = to(a, DType::BFloat16), bb = to(b, DType::BFloat16);
      gpu_rows.push_back({"matmul " + shape + " bf16", std::nullopt,
                          cuda_ms([&] { matmul(ab, bb); }, gpu_repeat), flop});
    }
  }
  rows.push_back(mm);
  rows.insert(rows.end(), gpu_rows.begin(), gpu_rows.end());
  print(rows);
  return 0;
}

}  // namespace rcuda::cli
