// Training and inference steps as CUDA graphs (docs/cuda-graphs.md), beside PyTorch's
// (bench/torch_graph.py, the graphed() of shared/anchors/torch_train_h200.py): three eager warm-up
// steps, zero_grad(set_to_none), one capture of forward, loss, backward and the optimizer step,
// then replays timed as train_step.h times steps (CUDA events over chunks, the median).
//   mlp_b256_adam_graph_step_us       MLP 784-512-512-10, batch 256, Adam, cross_entropy
//   mnistcnn_b128_fp32_graph_step_us  the MNIST-example CNN (mnist_net.h), batch 128, Adam
//   mlp_b8_infer_graph_replay_us      the MLP's forward, batch 8, no grad, one replay
//   bench_graph [--steps 50] [--chunks 7] [--only NAME-PREFIX]
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#if RCUDA_BENCH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

#include "mnist_net.h"
#include "rcuda/backend/cuda_graph.h"
#include "train_step.h"

namespace {

using rcuda::Device;
using rcuda::DType;
using rcuda::MemoryFormat;
using rcuda::Tensor;
namespace nn = rcuda::nn;

struct Mlp {
  std::vector<Tensor> p;
  explicit Mlp(Device device) {
    for (auto [out, in] : {std::pair{512, 784}, {512, 512}, {10, 512}}) {
      p.push_back(bench::parameter({out, in}, bench::torch_default_weight, DType::Float32, device,
                                   MemoryFormat::Contiguous));
      p.push_back(bench::parameter({out}, bench::torch_default_bias(in), DType::Float32, device,
                                   MemoryFormat::Contiguous));
    }
  }
  Tensor operator()(const Tensor& x) const {
    Tensor h = rcuda::relu(nn::linear(x, p[0], p[1]));
    h = rcuda::relu(nn::linear(h, p[2], p[3]));
    return nn::linear(h, p[4], p[5]);
  }
};

// Three eager steps, then `step` captured into `graph`; returns graph.replay.
std::function<void()> graphed(rcuda::cuda::Graph& graph, rcuda::optim::Optimizer& opt,
                              const std::function<Tensor()>& loss) {
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    rcuda::autograd::backward(loss());
    opt.step();
  }
  opt.zero_grad();
  rcuda::cuda::capture(graph, [&] {
    rcuda::autograd::backward(loss());
    opt.step();
  });
  return [&graph] { graph.replay(); };
}

}  // namespace

int main(int argc, char** argv) {
  bench::Options o = bench::parse(argc, argv);
  if (o.steps == 0) o.steps = 50;
  if (o.chunks == 0) o.chunks = 7;
  if (rcuda::cuda::device_count() == 0) {
    std::printf("no CUDA device: %s\n", rcuda::cuda::unavailable_reason().c_str());
    return 1;
  }
  const Device device = Device::parse("cuda");
  rcuda::cuda::set_cudnn_benchmark(o.benchmark);
  rcuda::manual_seed(0);
  const auto time = [&](const std::string& name, const std::function<void()>& replay) {
    for (int i = 0; i < 10; ++i) replay();
#if RCUDA_BENCH_NVTX
    nvtxRangePushA("timed");
#endif
    bench::log(name, bench::per_step_us(device, replay, o.steps, o.chunks));
#if RCUDA_BENCH_NVTX
    nvtxRangePop();
#endif
  };

  const auto wanted = [&](const std::string& name) { return name.rfind(o.only, 0) == 0; };
  if (wanted("mlp_b256")) {
    const Mlp mlp(device);
    const Tensor x = rcuda::randn({256, 784}, rcuda::TensorOptions(DType::Float32, device));
    const Tensor y = rcuda::randint(0, 10, {256}, rcuda::TensorOptions(DType::Int64, device));
    rcuda::optim::Adam opt(mlp.p, rcuda::optim::AdamOptions{});
    rcuda::cuda::Graph graph;
    time("mlp_b256_adam_graph_step_us",
         graphed(graph, opt, [&] { return nn::cross_entropy(mlp(x), y); }));
  }
  if (wanted("mnistcnn")) {
    const bench::MnistNet net(DType::Float32, device, MemoryFormat::Contiguous, false);
    const Tensor x = rcuda::randn({128, 1, 28, 28}, rcuda::TensorOptions(DType::Float32, device));
    const Tensor y = rcuda::randint(0, 10, {128}, rcuda::TensorOptions(DType::Int64, device));
    rcuda::optim::Adam opt(net.parameters(), rcuda::optim::AdamOptions{});
    rcuda::cuda::Graph graph;
    time("mnistcnn_b128_fp32_graph_step_us", graphed(graph, opt, [&] { return net.loss(x, y); }));
  }
  if (wanted("mlp_b8")) {
    const Mlp mlp(device);
    const Tensor x = rcuda::randn({8, 784}, rcuda::TensorOptions(DType::Float32, device));
    rcuda::NoGradGuard no_grad;
    for (int i = 0; i < 3; ++i) mlp(x);
    Tensor out;
    rcuda::cuda::Graph graph;
    rcuda::cuda::capture(graph, [&] { out = mlp(x); });
    time("mlp_b8_infer_graph_replay_us", [&] { graph.replay(); });
  }
  return 0;
}
