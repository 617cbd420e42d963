// What the layer benches (bench_resnet, bench_cnn) share: their command line, parameters made
// and initialised as torch.nn's layers make theirs, and the step timing of
// shared/anchors/torch_train_h200.py (a warm-up, then chunks of steps each timed with CUDA events,
// host clock on the CPU, the median chunk's time per step). Output is `name: value` lines that
// bench/compare.py pairs with the PyTorch scripts' (bench/torch_resnet.py, bench/torch_cnn.py).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rcuda/backend/cuda.h"
#include "rcuda/rcuda.h"
#include "rcuda/tensor/memory_format.h"

namespace bench {

using rcuda::Device;
using rcuda::DType;
using rcuda::MemoryFormat;
using rcuda::Shape;
using rcuda::Tensor;

inline void log(const std::string& name, double value) {
  std::printf("%s: %.6g\n", name.c_str(), value);
  std::fflush(stdout);
}

struct Options {
  std::string device = "cuda";
  std::string dtype = "float32";
  bool channels_last = false;
  bool autocast = false;  // float32 parameters, the forward under bfloat16 autocast
  int64_t batch = 0;      // 0: the bench's own default
  int steps = 0;          // steps per timed chunk
  int chunks = 0;         // timed chunks (the median is reported)
  int warmup = -1;        // untimed steps first
  bool benchmark = true;  // cuDNN autotuning, as the anchor's torch.backends.cudnn.benchmark
  std::string loss = "nll";
  int profile_steps = 0;  // more steps at the end, host clock only, for a sampling profiler
  std::string only;       // bench_graph: run only the figure whose name starts with this
};

inline void usage(const char* prog, const char* extra) {
  std::fprintf(
      stderr,
      "usage: %s [--device cuda|cpu] [--dtype float32|bfloat16] [--channels-last] [--autocast]\n"
      "          [--batch N] [--steps N] [--chunks N] [--warmup N] [--no-benchmark]\n"
      "          [--profile-steps N] [--only NAME]%s\n",
      prog, extra);
}

// Exits with status 2 on an argument it does not know.
inline Options parse(int argc, char** argv, const char* extra_usage = "") {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--channels-last") {
      o.channels_last = true;
    } else if (a == "--autocast") {
      o.autocast = true;
    } else if (a == "--no-benchmark") {
      o.benchmark = false;
    } else if (has_value && a == "--device") {
      o.device = argv[++i];
    } else if (has_value && a == "--dtype") {
      o.dtype = argv[++i];
    } else if (has_value && a == "--batch") {
      o.batch = std::atoll(argv[++i]);
    } else if (has_value && a == "--steps") {
      o.steps = std::atoi(argv[++i]);
    } else if (has_value && a == "--chunks") {
      o.chunks = std::atoi(argv[++i]);
    } else if (has_value && a == "--warmup") {
      o.warmup = std::atoi(argv[++i]);
    } else if (has_value && a == "--only") {
      o.only = argv[++i];
    } else if (has_value && a == "--profile-steps") {
      o.profile_steps = std::atoi(argv[++i]);
    } else if (has_value && a == "--loss") {
      o.loss = argv[++i];
    } else {
      std::fprintf(stderr, "%s: unknown or incomplete argument '%s'\n", argv[0], a.c_str());
      usage(argv[0], extra_usage);
      std::exit(2);
    }
  }
  if (o.dtype != "float32" && o.dtype != "bfloat16") {
    std::fprintf(stderr, "%s: --dtype must be float32 or bfloat16, not '%s'\n", argv[0],
                 o.dtype.c_str());
    std::exit(2);
  }
  if (o.autocast && o.dtype != "float32") {
    std::fprintf(stderr, "%s: --autocast runs a float32 model; leave --dtype out\n", argv[0]);
    std::exit(2);
  }
  return o;
}

inline DType dtype_of(const Options& o) {
  return o.dtype == "bfloat16" ? DType::BFloat16 : DType::Float32;
}

// The figures' middle part: fp32 | bf16 | bf16_autocast, "_cl" for channels-last, "_cpu" off
// the GPU (names on the GPU are the anchor file's, so its output pairs with ours too).
inline std::string tag_of(const Options& o, Device device) {
  const char* precision = o.autocast ? "bf16_autocast" : o.dtype == "bfloat16" ? "bf16" : "fp32";
  return std::string(precision) + (o.channels_last ? "_cl" : "") + (device.is_cuda() ? "" : "_cpu");
}

// The forward pass's autocast region: bfloat16 autocast on `device` with --autocast, nothing
// otherwise (held in an optional, as AutocastGuard neither copies nor moves).
inline void forward_autocast(std::optional<rcuda::AutocastGuard>& guard, const Options& o,
                             Device device) {
  if (o.autocast) guard.emplace(device.type, DType::BFloat16);
}

inline MemoryFormat format_of(const Options& o) {
  return o.channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
}

// t (any dtype, device and layout) as a new tensor of `dtype` on `device` in memory format f.
inline Tensor in_format(const Tensor& t, DType dtype, Device device, MemoryFormat f) {
  Tensor out = rcuda::empty_with_format(t.shape(), dtype, device, f);
  rcuda::copy_(out, rcuda::to(t, device, dtype));
  return out;
}

// A parameter as torch.nn makes it: drawn in float32 by `init`, then cast and laid out (4-D
// weights channels-last when asked, as model.to(memory_format=torch.channels_last)), requiring
// grad.
inline Tensor parameter(const Shape& shape, const std::function<void(const Tensor&)>& init,
                        DType dtype, Device device, MemoryFormat f) {
  Tensor t = rcuda::empty(shape, rcuda::TensorOptions(DType::Float32, device));
  init(t);
  Tensor p = in_format(t, dtype, device, f);
  p.requires_grad_();
  return p;
}

// torch.nn.Conv2d's and Linear's default weight: kaiming_uniform_(a = sqrt(5)).
inline void torch_default_weight(const Tensor& w) {
  rcuda::nn::init::kaiming_uniform_(w, std::sqrt(5.0));
}

// Their default bias: U(-1 / sqrt(fan_in), 1 / sqrt(fan_in)) of the layer's weight.
inline std::function<void(const Tensor&)> torch_default_bias(int64_t fan_in) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return [bound](const Tensor& b) { rcuda::nn::init::uniform_(b, -bound, bound); };
}

inline void synchronize(Device device) {
  if (device.is_cuda()) rcuda::cuda::synchronize(device.index);
}

// Microseconds per step: `chunks` chunks of n steps (after the caller's warm-up), each timed with
// CUDA events on the GPU and the host clock on the CPU; the median chunk.
inline double per_step_us(Device device, const std::function<void()>& step, int n, int chunks) {
  synchronize(device);
  std::vector<double> ts;
  for (int c = 0; c < chunks; ++c) {
    if (device.is_cuda()) {
      ts.push_back(rcuda::cuda::time_ms(device.index,
                                        [&] {
                                          for (int i = 0; i < n; ++i) step();
                                        }) *
                   1e3 / n);
    } else {
      const auto t = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) step();
      ts.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() /
          n);
    }
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

// Host microseconds per step over n steps, the device queue drained before and after (on the
// GPU: what the host spends issuing a step, when that is less than the device's time).
inline double host_us(Device device, const std::function<void()>& step, int n) {
  synchronize(device);
  const auto t = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) step();
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() / n;
  synchronize(device);
  return us;
}

// The loss of the first step (of the warm-up), of the first timed step and of the last, read
// after timing (reading one in the loop would synchronise the device every step).
struct LossTrace {
  Tensor first, first_timed, last;
  bool timing = false;  // set when the timed steps begin
  void record(const Tensor& loss) {
    last = rcuda::autograd::detach(loss);
    if (!first.defined()) first = last;
    if (timing && !first_timed.defined()) first_timed = last;
  }
  static double value(const Tensor& t) {
    return rcuda::to(t, Device(rcuda::DeviceType::CPU), DType::Float64).data<double>()[0];
  }
};

// Warm-up, the timed chunks, then the figures every layer bench prints under `name`: peak device
// memory over the timed steps (and what was allocated before them), the loss of the first and the
// last step. Returns the step time in microseconds.
inline double time_steps(const std::string& name, Device device, const std::function<void()>& step,
                         LossTrace& trace, int warmup, int n, int chunks) {
  for (int i = 0; i < warmup; ++i) step();
  synchronize(device);
  int64_t base = 0;
  if (device.is_cuda()) {
    rcuda::cuda::reset_peak_memory_stats(device.index);
    base = rcuda::cuda::memory_stats(device.index).allocated_bytes;
  }
  trace.timing = true;
  const double step_us = per_step_us(device, step, n, chunks);
  if (device.is_cuda()) {
    const rcuda::MemoryStats s = rcuda::cuda::memory_stats(device.index);
    log(name + "_base_allocated_MB", static_cast<double>(base) / 1e6);
    log(name + "_peak_allocated_MB", static_cast<double>(s.peak_allocated_bytes) / 1e6);
  }
  log(name + "_steps_run", warmup + n * chunks);
  log(name + "_loss_first", LossTrace::value(trace.first));
  log(name + "_loss_first_timed", LossTrace::value(trace.first_timed));
  log(name + "_loss_last", LossTrace::value(trace.last));
  return step_us;
}

}  // namespace bench
