// CPU benchmark: rcuda's ops against the plainest code that does the same work on the same data
// (OpenBLAS called directly, OpenMP loops over raw arrays, memcpy). Prints a markdown table;
// bench/README.md explains each row. `--quick` runs smaller sizes.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "rcuda/rcuda.h"

namespace {

struct Sizes {
  int64_t randn_side, matmul_side, elementwise_numel;
  int warmup, repeats;
};

double time_ms(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median wall times in milliseconds of `work` and `baseline`, after `warmup` untimed runs of
// each. The two alternate run by run, so that a noisy neighbour (another process on a shared
// machine, a frequency change) hits both alike and their ratio stays meaningful.
std::pair<double, double> paired_median_ms(const Sizes& sizes, const std::function<void()>& work,
                                           const std::function<void()>& baseline) {
  for (int i = 0; i < sizes.warmup; ++i) {
    work();
    baseline();
  }
  std::vector<double> work_ms, baseline_ms;
  for (int i = 0; i < sizes.repeats; ++i) {
    work_ms.push_back(time_ms(work));
    baseline_ms.push_back(time_ms(baseline));
  }
  return {median(work_ms), median(baseline_ms)};
}

struct Row {
  std::string work, baseline;
  double rcuda_ms, baseline_ms;
  std::string throughput, target;
};

void print_row(const Row& r) {
  char ratio[32] = "-", base[32] = "-";
  if (r.baseline_ms > 0) {
    std::snprintf(ratio, sizeof(ratio), "%.2f", r.baseline_ms / r.rcuda_ms);
    std::snprintf(base, sizeof(base), "%.2f", r.baseline_ms);
  }
  std::printf("| %s | %.2f | %s | %s | %s | %s | %s |\n", r.work.c_str(), r.rcuda_ms,
              r.baseline.c_str(), base, ratio, r.throughput.c_str(), r.target.c_str());
  std::fflush(stdout);
}

std::string rate(double amount, double ms, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f %s", amount / (ms * 1e-3) / 1e9, unit);
  return buf;
}

volatile double g_sink = 0;  // keeps results alive so the compiler cannot drop the work

Row bench_randn(const Sizes& s) {
  const int64_t n = s.randn_side, count = n * n;
  const double bytes = static_cast<double>(count) * sizeof(float);
  // Baseline: allocating the same bytes and writing them with an OpenMP loop, the floor for
  // any generator that returns a fresh tensor.
  const auto [ms, fill_ms] = paired_median_ms(
      s,
      [&] {
        g_sink = g_sink + static_cast<double>(rcuda::randn({n, n}).numel());
      },
      [&] {
        float* p = static_cast<float*>(std::malloc(static_cast<size_t>(count) * sizeof(float)));
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < count; ++i) p[i] = 1.0f;
        g_sink = g_sink + p[n];
        std::free(p);
      });
  return {"randn " + std::to_string(n) + "x" + std::to_string(n) + " float32",
          "malloc + OpenMP fill",
          ms,
          fill_ms,
          rate(bytes, ms, "GB/s written"),
          "-"};
}

Row bench_matmul(const Sizes& s) {
  const int64_t n = s.matmul_side;
  const rcuda::Tensor a = rcuda::randn({n, n}), b = rcuda::randn({n, n});
  const rcuda::Tensor c = rcuda::empty({n, n});
  const int blas_n = static_cast<int>(n);
  const auto [ms, blas_ms] = paired_median_ms(
      s, [&] { g_sink = g_sink + static_cast<double>(rcuda::matmul(a, b).numel()); },
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blas_n, blas_n, blas_n, 1.0f,
                    a.data<float>(), blas_n, b.data<float>(), blas_n, 0.0f, c.data<float>(),
                    blas_n);
      });
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  return {"matmul " + std::to_string(n) + "^2 float32",
          "cblas_sgemm",
          ms,
          blas_ms,
          rate(flops, ms, "GFLOP/s"),
          ">= 0.95"};
}

std::string power_of_two(int64_t n) {
  return "2^" + std::to_string(63 - __builtin_clzll(static_cast<uint64_t>(n)));
}

std::vector<Row> bench_add(const Sizes& s) {
  const int64_t n = s.elementwise_numel;
  const rcuda::Tensor a = rcuda::randn({n}), b = rcuda::randn({n});
  const rcuda::Tensor out = rcuda::randn({n});
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* po = out.data<float>();
  const double bytes = 3.0 * static_cast<double>(n) * sizeof(float);
  auto loop = [&] {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
  };
  const auto [add_ms, loop_ms] = paired_median_ms(
      s, [&] { g_sink = g_sink + static_cast<double>(rcuda::add(a, b).numel()); }, loop);
  // The same loop writing into a fresh allocation each call, as rcuda::add does: separates the
  // kernel's speed from the cost of the allocator and of first touching new pages.
  const auto [add2_ms, fresh_ms] = paired_median_ms(
      s, [&] { g_sink = g_sink + static_cast<double>(rcuda::add(a, b).numel()); },
      [&] {
        float* fresh = static_cast<float*>(std::malloc(static_cast<size_t>(n) * sizeof(float)));
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i) fresh[i] = pa[i] + pb[i];
        g_sink = g_sink + fresh[n - 1];
        std::free(fresh);
      });
  // In place: no allocation on either side, so this row compares the kernels alone.
  const auto [inplace_ms, inplace_loop_ms] = paired_median_ms(
      s, [&] { rcuda::add_(out, b); },
      [&] {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i) po[i] += pb[i];
      });
  const auto [memcpy_ms, loop3_ms] = paired_median_ms(
      s, [&] { std::memcpy(po, pa, static_cast<size_t>(n) * sizeof(float)); }, loop);
  return {
      {"add " + power_of_two(n) + " float32", "OpenMP loop a[i]+b[i]", add_ms, loop_ms,
       rate(bytes, add_ms, "GB/s"), ">= 0.83"},
      {"add, same size", "same loop into a fresh malloc each call", add2_ms, fresh_ms,
       rate(bytes, add2_ms, "GB/s"), ">= 0.83"},
      {"add_ in place, same size", "OpenMP loop a[i] += b[i]", inplace_ms, inplace_loop_ms,
       rate(bytes, inplace_ms, "GB/s"), ">= 0.83"},
      {"memcpy of one operand (" + power_of_two(n) + " floats, 1 thread)", "OpenMP loop a[i]+b[i]",
       memcpy_ms, loop3_ms, rate(2.0 * static_cast<double>(n) * sizeof(float), memcpy_ms, "GB/s"),
       "-"},
  };
}

Row bench_sum(const Sizes& s) {
  const int64_t n = s.elementwise_numel;
  const rcuda::Tensor x = rcuda::randn({n});
  const float* px = x.data<float>();
  const auto [ms, loop_ms] = paired_median_ms(
      s, [&] { g_sink = g_sink + rcuda::item(rcuda::sum(x)).to_double(); },
      [&] {
        double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total)
        for (int64_t i = 0; i < n; ++i) total += px[i];
        g_sink = g_sink + total;
      });
  return {"sum " + power_of_two(n) + " float32",
          "OpenMP reduction loop",
          ms,
          loop_ms,
          rate(static_cast<double>(n) * sizeof(float), ms, "GB/s"),
          ">= 0.83"};
}

// One Adam step (optim::Adam, defaults) over the parameters of bench_train's MLP 784-512-512-10
// (669,706 floats in six tensors) against an OpenMP loop per tensor of the same update on raw
// arrays (torch.optim.Adam's formula, as backend/optim_math.h writes it for one element).
Row bench_adam(const Sizes& s) {
  const std::vector<rcuda::Shape> shapes = {{512, 784}, {512}, {512, 512}, {512}, {10, 512}, {10}};
  std::vector<rcuda::Tensor> params, raw_params, raw_grads, raw_m, raw_v;
  int64_t count = 0;
  for (const rcuda::Shape& shape : shapes) {
    rcuda::Tensor p = rcuda::randn(shape);
    p.requires_grad_();
    p.set_grad(rcuda::randn(shape));
    params.push_back(p);
    raw_params.push_back(rcuda::randn(shape));
    raw_grads.push_back(rcuda::randn(shape));
    raw_m.push_back(rcuda::zeros(shape));
    raw_v.push_back(rcuda::zeros(shape));
    count += p.numel();
  }
  rcuda::optim::Adam adam(params);
  int64_t step = 0;
  const auto [ms, loop_ms] = paired_median_ms(
      s, [&] { adam.step(); },
      [&] {
        ++step;
        const float beta1 = 0.9f, beta2 = 0.999f, lr = 1e-3f, eps = 1e-8f;
        const float step_size = lr / (1.0f - std::pow(beta1, static_cast<float>(step)));
        const float correction2 = std::sqrt(1.0f - std::pow(beta2, static_cast<float>(step)));
        for (size_t t = 0; t < raw_params.size(); ++t) {
          float* p = raw_params[t].data<float>();
          const float* g = raw_grads[t].data<float>();
          float* m = raw_m[t].data<float>();
          float* v = raw_v[t].data<float>();
          const int64_t n = raw_params[t].numel();
#pragma omp parallel for schedule(static)
          for (int64_t i = 0; i < n; ++i) {
            m[i] = m[i] + (1.0f - beta1) * (g[i] - m[i]);
            v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
            p[i] = p[i] - step_size * (m[i] / (std::sqrt(v[i]) / correction2 + eps));
          }
        }
      });
  return {"Adam step, MLP 784-512-512-10 parameters (" + std::to_string(count) + " floats)",
          "OpenMP loop per tensor, same update",
          ms,
          loop_ms,
          rate(5.0 * static_cast<double>(count) * sizeof(float), ms, "GB/s moved"),
          "-"};
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
      return 2;
    }
  }
  const Sizes sizes = quick ? Sizes{2000, 1024, int64_t{1} << 22, 1, 5}
                            : Sizes{10000, 4096, int64_t{1} << 26, 1, 5};

  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
  std::printf("rcuda CPU benchmark, %s%s\n", date, quick ? " (--quick)" : "");
  std::printf("OpenMP threads: %d, OpenBLAS threads: %d; median of %d runs after %d warm-up\n\n",
              omp_get_max_threads(), openblas_get_num_threads(), sizes.repeats, sizes.warmup);
  std::printf(
      "| work | rcuda ms | baseline | baseline ms | baseline ms / rcuda ms | rcuda rate | "
      "target |\n|---|---|---|---|---|---|---|\n");
  print_row(bench_randn(sizes));
  print_row(bench_matmul(sizes));
  for (const Row& r : bench_add(sizes)) print_row(r);
  print_row(bench_sum(sizes));
  print_row(bench_adam(sizes));
  return 0;
}
