// A training step from C++, beside PyTorch's (bench/torch_train_mlp.py writes the weights,
// batches and its loss curve, and times its own step): the MLP 784-512-512-10, batch 256,
// Adam (zero_grad, forward, cross-entropy, backward, step). Prints `name: value` lines:
// the step time as the anchors measure it (CUDA events over chunks of steps, median; host
// time on the CPU), the host time per step, and how far rcuda's loss curve is from PyTorch's.
//   bench_train DIR [--device cuda|cpu] [--steps 200] [--profile-steps N]
// --profile-steps runs N more steps at the end, for a sampling profiler to look at.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "rcuda/backend/cuda.h"
#include "rcuda/rcuda.h"
#include "train_step.h"

namespace {

using namespace rcuda;

void log(const std::string& name, double value) {
  std::printf("%s: %.6g\n", name.c_str(), value);
  std::fflush(stdout);
}

Tensor read(const std::string& dir, const std::string& name, const Shape& shape, DType dtype,
            Device device) {
  const std::string path = dir + "/" + name + ".bin";
  std::ifstream in(path, std::ios::binary);
  RCUDA_CHECK(in.good(), ValueError, "bench_train: cannot read ", path,
              " (run bench/torch_train_mlp.py first)");
  std::vector<char> bytes(static_cast<size_t>(numel(shape)) * element_size(dtype));
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  RCUDA_CHECK(in.gcount() == static_cast<std::streamsize>(bytes.size()), ValueError,
              "bench_train: ", path, " is shorter than ", shape_str(shape));
  return from_data(bytes.data(), shape, dtype, device);
}

// The largest |ours - theirs| / |theirs| over the first `upto` steps.
double max_rel_diff(const Tensor& ours, const Tensor& theirs, int upto) {
  double worst = 0;
  for (int s = 0; s < upto; ++s) {
    const double a = ours.data<double>()[s], b = theirs.data<double>()[s];
    worst = std::max(worst, std::fabs(a - b) / std::fabs(b));
  }
  return worst;
}

struct Mlp {
  std::vector<Tensor> params;  // w1, b1, w2, b2, w3, b3
  Tensor forward(const Tensor& x) const {
    Tensor h = nn::relu(nn::linear(x, params[0], params[1]));
    h = nn::relu(nn::linear(h, params[2], params[3]));
    return nn::linear(h, params[4], params[5]);
  }
};

Mlp load_mlp(const std::string& dir, Device device, DType dtype = DType::Float32) {
  const std::vector<Shape> shapes = {{512, 784}, {512}, {512, 512}, {512}, {10, 512}, {10}};
  const char* names[] = {"w1", "b1", "w2", "b2", "w3", "b3"};
  Mlp m;
  for (size_t i = 0; i < shapes.size(); ++i) {
    m.params.push_back(to(read(dir, names[i], shapes[i], DType::Float32, device), dtype));
    m.params.back().requires_grad_();
  }
  return m;
}

using bench::synchronize;

// Per-step microseconds as torch_train_h200.py measures (bench::per_step_us) after `warm` steps.
double per_step_us(Device device, const std::function<void()>& step, int n, int chunks, int warm) {
  for (int i = 0; i < warm; ++i) step();
  return bench::per_step_us(device, step, n, chunks);
}

double host_us(Device device, const std::function<void()>& step, int n) {
  for (int i = 0; i < 10; ++i) step();
  synchronize(device);
  const auto t = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) step();
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() / n;
  synchronize(device);
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_train DIR [--device cuda|cpu] [--steps N] [--profile-steps N]\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::string device_name = "cuda";
  int steps = 200, profile_steps = 0;
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--device") == 0) device_name = argv[i + 1];
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--profile-steps") == 0) profile_steps = std::atoi(argv[i + 1]);
  }
  const Device device = Device::parse(device_name);
  const std::string tag = device.is_cuda() ? "cuda" : "cpu";
  constexpr int64_t kBatches = 20;
  const Tensor xs = read(dir, "x", {kBatches, 256, 784}, DType::Float32, device);
  const Tensor ys = read(dir, "y", {kBatches, 256}, DType::Int64, device);

  // The loss curves from PyTorch's initial weights and batches, in float32 and float64.
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const bool f64 = dtype == DType::Float64;
    Mlp m = load_mlp(dir, device, dtype);
    const Tensor xd = to(xs, dtype);
    optim::Adam adam(m.params, optim::AdamOptions{});
    std::vector<Tensor> losses;
    for (int s = 0; s < steps; ++s) {
      adam.zero_grad();
      Tensor loss =
          nn::cross_entropy(m.forward(xd.select(0, s % kBatches)), ys.select(0, s % kBatches));
      autograd::backward(loss);
      adam.step();
      losses.push_back(autograd::detach(loss));
    }
    const Device cpu(DeviceType::CPU);
    const Tensor ours = to(stack(losses), cpu, DType::Float64);
    const Tensor theirs =
        f64 ? read(dir, "torch_losses64", {steps}, DType::Float64, cpu)
            : to(read(dir, "torch_losses", {steps}, DType::Float32, cpu), DType::Float64);
    const std::string name = std::string("loss_curve_") + (f64 ? "float64_" : "float32_") + tag;
    log("rcuda_" + name + "_first", ours.data<double>()[0]);
    log("rcuda_" + name + "_last", ours.data<double>()[steps - 1]);
    for (int upto : {10, 50, 100, steps})
      log(name + "_max_rel_diff_steps_" + std::to_string(upto),
          max_rel_diff(ours, theirs, std::min(upto, steps)));
  }

  // The step time on one fixed batch, as the anchors measure it.
  Mlp m = load_mlp(dir, device);
  optim::Adam adam(m.params, optim::AdamOptions{});
  const Tensor x = contiguous(xs.select(0, 0)), y = contiguous(ys.select(0, 0));
  const auto step = [&] {
    adam.zero_grad();
    autograd::backward(nn::cross_entropy(m.forward(x), y));
    adam.step();
  };
  const bool gpu = device.is_cuda();
  log("rcuda_mlp_b256_adam_" + tag + "_step_us",
      per_step_us(device, step, gpu ? 50 : 10, gpu ? 7 : 3, 10));
  log("rcuda_mlp_b256_adam_" + tag + "_host_us", host_us(device, step, gpu ? 200 : 20));
  // Where the host time goes: the forward alone (no recording), forward with recording and
  // backward, and the optimizer step alone.
  log("rcuda_mlp_b256_forward_nograd_" + tag + "_host_us", host_us(
                                                               device,
                                                               [&] {
                                                                 NoGradGuard no_grad;
                                                                 nn::cross_entropy(m.forward(x), y);
                                                               },
                                                               gpu ? 200 : 20));
  log("rcuda_mlp_b256_forward_backward_" + tag + "_host_us",
      host_us(
          device,
          [&] {
            adam.zero_grad();
            autograd::backward(nn::cross_entropy(m.forward(x), y));
          },
          gpu ? 200 : 20));
  log("rcuda_mlp_b256_adam_step_only_" + tag + "_host_us",
      host_us(
          device, [&] { adam.step(); }, gpu ? 200 : 20));
  if (gpu) {
    const MemoryStats s = cuda::memory_stats(device.index);
    log("rcuda_mlp_b256_peak_allocated_MB", s.peak_allocated_bytes / 1e6);
  }
  if (profile_steps > 0)
    log("rcuda_mlp_b256_profiled_steps_" + tag + "_host_us", host_us(device, step, profile_steps));
  return 0;
}
