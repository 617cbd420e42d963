// Where a tiny op's host time goes, on the CPU and (when there is one) the GPU: the pieces of
// `add(a, b)` on one-element tensors timed alone, from allocation and the backend primitive up
// to the public op with autograd recording. Prints `name: value` lines in microseconds per op.
// RCUDA_RUNTIME_LAUNCH=1 launches through the runtime instead of the driver (Note [Launching
// through the driver] in src/backend/cuda/kernel_launch.h), to compare the two in one call.
//   bench_op_overhead [--reps N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "rcuda/backend/cuda.h"
#include "rcuda/rcuda.h"

namespace {

using namespace rcuda;

int reps = 20000;

void log(const std::string& name, double value) {
  std::printf("%s: %.3f\n", name.c_str(), value);
  std::fflush(stdout);
}

// Host microseconds per call over `reps` calls, after a warm-up; on CUDA the final
// synchronisation is inside the timed region, so queued work is paid for too.
double per_call_us(const Device& device, const std::function<void()>& f) {
  for (int i = 0; i < 200; ++i) f();
  if (device.is_cuda()) cuda::synchronize(device.index);
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    const auto t = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) f();
    if (device.is_cuda()) cuda::synchronize(device.index);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() /
        reps;
    best = std::min(best, us);
  }
  return best;
}

// Host microseconds per call with nothing waited for: bursts of 200 calls, short enough that
// the GPU's launch queue never fills and blocks the host, each synchronised after the clock
// stops; the median burst. On the CPU the same as per_call_us.
double enqueue_us(const Device& device, const std::function<void()>& f) {
  if (!device.is_cuda()) return per_call_us(device, f);
  for (int i = 0; i < 200; ++i) f();
  cuda::synchronize(device.index);
  std::vector<double> bursts;
  for (int round = 0; round < 25; ++round) {
    const auto t = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) f();
    bursts.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() /
        200);
    cuda::synchronize(device.index);
  }
  std::sort(bursts.begin(), bursts.end());
  return bursts[bursts.size() / 2];
}

void run(const Device& device, const std::string& tag) {
  const TensorOptions f32(DType::Float32, device);
  const Tensor a = ones({1}, f32), b = ones({1}, f32), out = empty({1}, f32);
  Tensor w = ones({1}, f32);
  w.requires_grad_();
  Backend& backend = backend_for(device);
  log("empty_" + tag + "_us",
      per_call_us(device, [&] { Tensor::empty({1}, DType::Float32, device); }));
  log("fill_preallocated_" + tag + "_us", per_call_us(device, [&] { ops::fill_(out, 1.0); }));
  log("backend_binary_preallocated_" + tag + "_us",
      per_call_us(device, [&] { backend.binary(BinaryOp::Add, out, a, b); }));
  log("ops_add_" + tag + "_us", per_call_us(device, [&] { ops::add(a, b); }));
  log("add_" + tag + "_us", per_call_us(device, [&] { add(a, b); }));
  log("add_recording_" + tag + "_us", per_call_us(device, [&] { add(a, w); }));
  log("mul_recording_" + tag + "_us", per_call_us(device, [&] { mul(a, w); }));
  log("mul_number_" + tag + "_us", per_call_us(device, [&] { mul(a, 2.0); }));
  log("mul_number_recording_" + tag + "_us", per_call_us(device, [&] { mul(w, 2.0); }));
  log("number_minus_tensor_recording_" + tag + "_us",
      per_call_us(device, [&] { binary_op("sub", Scalar(1.0), w); }));
  log("sum_recording_" + tag + "_us", per_call_us(device, [&] { sum(w); }));
  log("relu_recording_" + tag + "_us", per_call_us(device, [&] { relu(w); }));
  log("matmul_recording_" + tag + "_us", per_call_us(device, [&] {
        matmul(a.view({1, 1}), w.view({1, 1}));
      }));
  if (device.is_cuda()) {
    log("host_only_fill_preallocated_" + tag + "_us",
        enqueue_us(device, [&] { ops::fill_(out, 1.0); }));
    log("host_only_ops_add_" + tag + "_us", enqueue_us(device, [&] { ops::add(a, b); }));
    log("host_only_add_recording_" + tag + "_us", enqueue_us(device, [&] { add(a, w); }));
    log("host_only_mul_number_" + tag + "_us", enqueue_us(device, [&] { mul(a, 2.0); }));
    log("host_only_mul_number_recording_" + tag + "_us", enqueue_us(device, [&] { mul(w, 2.0); }));
  }
  // Forward and backward of a two-op graph: recording, the engine, the accumulation.
  log("mul_sum_backward_" + tag + "_us",
      per_call_us(device, [&] { autograd::backward(sum(mul(a, w))); }));
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);
  run(Device(DeviceType::CPU), "cpu");
  if (cuda::device_count() > 0) run(Device(DeviceType::CUDA, 0), "cuda");
  return 0;
}
