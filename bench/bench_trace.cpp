// Host time per call of the MNIST-example CNN at batch 1 (inference: dropout off), called
// directly from C++ and as its traced graph (graph::trace, Graph::run): the graph's cost over
// the ops it runs. With the R figures of bench/bench_jit_trace_r.R, this is the floor under a
// traced module's time from R. Host time: the device is synchronised before each call, so no
// call waits for an earlier one's kernels; median of 5 rounds.
//   bench_trace [--calls N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "mnist_net.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/graph/graph.h"

using namespace rcuda;  // NOLINT(google-build-using-namespace)

namespace {

Tensor eval_forward(const bench::MnistNet& net, const Tensor& x) {
  Tensor h = relu(nn::conv2d(x, net.c1_weight, net.c1_bias));
  h = nn::max_pool2d(relu(nn::conv2d(h, net.c2_weight, net.c2_bias)), {2});
  h = flatten(nn::dropout(h, 0.25, false), 1);
  h = nn::linear(nn::dropout(relu(nn::linear(h, net.f1_weight, net.f1_bias)), 0.5, false),
                 net.f2_weight, net.f2_bias);
  return log_softmax(h, 1);
}

template <typename F>
double host_us_per_call(F call, Device device, int calls) {
  const auto sync = [&] {
    if (device.type == DeviceType::CUDA) cuda::synchronize(device.index);
  };
  for (int i = 0; i < 20; ++i) call();
  sync();
  double rounds[5];
  for (double& r : rounds) {
    double total = 0;
    for (int i = 0; i < calls; ++i) {
      sync();
      const auto start = std::chrono::steady_clock::now();
      call();
      total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                   .count();
    }
    r = total / calls;
  }
  std::sort(rounds, rounds + 5);
  return rounds[2];
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 500;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::stoi(argv[i + 1]);
  NoGradGuard no_grad;
  std::printf("bench_trace: MNIST-example CNN, batch 1, %d calls a round\n\n", calls);
  std::printf(
      "| device | direct C++ us/call | graph replay us/call | replay / direct | outputs |\n");
  std::printf("|---|---|---|---|---|\n");
  std::vector<Device> devices{Device()};
  if (cuda::device_count() > 0) devices.emplace_back(DeviceType::CUDA, 0);
  for (const Device& device : devices) {
    manual_seed(1);
    const bench::MnistNet net(DType::Float32, device, MemoryFormat::Contiguous, false);
    const Tensor x = randn({1, 1, 28, 28}, {DType::Float32, device});
    const auto params = net.parameters();
    graph::NamedTensors named;
    for (size_t i = 0; i < params.size(); ++i)
      named.emplace_back("p" + std::to_string(i), params[i]);
    const graph::Graph g = graph::trace(
        [&](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{eval_forward(net, in[0])};
        },
        {x}, named);
    const Tensor check = randn({16, 1, 28, 28}, {DType::Float32, device});
    const Tensor diff = abs(sub(g.run({check})[0], eval_forward(net, check)));
    const double max_diff = item(max(diff)).to_double();
    const double direct = host_us_per_call([&] { eval_forward(net, x); }, device, calls);
    const double replay = host_us_per_call([&] { g.run({x}); }, device, calls);
    std::printf("| %s | %.1f | %.1f | %.2f | max |diff| %.2g |\n", device.str().c_str(), direct,
                replay, replay / direct, max_diff);
  }
  return 0;
}
