// A ResNet-18 training step from C++ (the CIFAR variant of shared/anchors/torch_train_h200.py:
// 3x3 stem, no max pool, four stages of two basic blocks, 32x32 input), beside PyTorch's
// (bench/torch_resnet.py): zero_grad, forward in training mode (batch statistics, running
// statistics updated), cross-entropy, backward, SGD (lr 0.1, momentum 0.9, Nesterov, weight decay
// 5e-4, the anchor's). One fixed random batch, as the anchor. bfloat16 is the layers' bfloat16
// path: parameters, activations and gradients in bfloat16 (PyTorch's model.to(torch.bfloat16)).
//   bench_resnet [--device cuda|cpu] [--dtype float32|bfloat16] [--channels-last] [--batch 512]
//                [--steps 10] [--chunks 5] [--warmup 5] [--no-benchmark]
// Prints `name: value` lines (resnet18_b512_fp32_img_per_s, ..._bf16_cl_...; "_cpu" off the GPU).
// RCUDA_BENCH_DDP=1 wraps the parameters in dist::DataParallel over the default process group
// (NCCL on CUDA, MPI on the CPU; world size 1 when started alone, or under mpirun): the figures
// end in "_ddp", and beside the plain step they give data-parallel training's added time.
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rcuda/dist/data_parallel.h"

#include "train_step.h"

namespace {

using bench::Options;
using rcuda::Device;
using rcuda::DType;
using rcuda::MemoryFormat;
using rcuda::Tensor;
namespace nn = rcuda::nn;

// How each parameter is made: dtype, device, layout.
struct Maker {
  DType dtype;
  Device device;
  MemoryFormat format;
  Tensor conv(int64_t out, int64_t in, int64_t k) const {
    return bench::parameter({out, in, k, k}, bench::torch_default_weight, dtype, device, format);
  }
};

// torch.nn.BatchNorm2d: weight 1, bias 0, running mean 0, running variance 1, all of the
// model's dtype (as model.to(dtype) leaves them).
struct BatchNorm {
  Tensor weight, bias, running_mean, running_var;
  BatchNorm() = default;
  BatchNorm(int64_t c, const Maker& m) {
    const rcuda::TensorOptions o(m.dtype, m.device);
    weight = rcuda::ones({c}, o);
    bias = rcuda::zeros({c}, o);
    running_mean = rcuda::zeros({c}, o);
    running_var = rcuda::ones({c}, o);
    weight.requires_grad_();
    bias.requires_grad_();
  }
  Tensor operator()(const Tensor& x) const {
    return nn::batch_norm(x, running_mean, running_var, weight, bias, /*training=*/true);
  }
};

// The anchor's Block: conv3x3(stride) -> bn -> relu -> conv3x3 -> bn, plus the input or a
// 1x1-conv(stride) -> bn shortcut, then relu. Convolutions have no bias.
struct Block {
  int64_t stride = 1;
  Tensor a, b, shortcut;  // shortcut undefined for the identity
  BatchNorm ba, bb, bs;
  Block(int64_t in, int64_t out, int64_t stride_, const Maker& m)
      : stride(stride_), a(m.conv(out, in, 3)), b(m.conv(out, out, 3)), ba(out, m), bb(out, m) {
    if (stride != 1 || in != out) {
      shortcut = m.conv(out, in, 1);
      bs = BatchNorm(out, m);
    }
  }
  Tensor operator()(const Tensor& x) const {
    Tensor h = rcuda::relu(ba(nn::conv2d(x, a, {}, stride, 1)));
    h = bb(nn::conv2d(h, b, {}, 1, 1));
    const Tensor s = shortcut.defined() ? bs(nn::conv2d(x, shortcut, {}, stride, 0)) : x;
    return rcuda::relu(rcuda::add(h, s));
  }
  void collect(std::vector<Tensor>& out) const {
    for (const Tensor& t : {a, ba.weight, ba.bias, b, bb.weight, bb.bias}) out.push_back(t);
    if (shortcut.defined())
      for (const Tensor& t : {shortcut, bs.weight, bs.bias}) out.push_back(t);
  }
};

struct ResNet18 {
  Tensor stem;
  BatchNorm stem_bn;
  std::vector<Block> blocks;
  Tensor fc_weight, fc_bias;

  explicit ResNet18(const Maker& m) : stem(m.conv(64, 3, 3)), stem_bn(64, m) {
    int64_t c = 64;
    const int64_t plan[8][2] = {{64, 1},  {64, 1},  {128, 2}, {128, 1},
                                {256, 2}, {256, 1}, {512, 2}, {512, 1}};
    for (const auto& p : plan) {
      blocks.emplace_back(c, p[0], p[1], m);
      c = p[0];
    }
    fc_weight = bench::parameter({10, 512}, bench::torch_default_weight, m.dtype, m.device,
                                 MemoryFormat::Contiguous);
    fc_bias = bench::parameter({10}, bench::torch_default_bias(512), m.dtype, m.device,
                               MemoryFormat::Contiguous);
  }
  // The feature map before pooling, for the layout check.
  Tensor features(const Tensor& x) const {
    Tensor h = rcuda::relu(stem_bn(nn::conv2d(x, stem, {}, 1, 1)));
    for (const Block& b : blocks) h = b(h);
    return h;
  }
  Tensor operator()(const Tensor& x) const {
    const Tensor pooled = rcuda::flatten(nn::adaptive_avg_pool2d(features(x), {1}), 1);
    return nn::linear(pooled, fc_weight, fc_bias);
  }
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> out = {stem, stem_bn.weight, stem_bn.bias};
    for (const Block& b : blocks) b.collect(out);
    out.push_back(fc_weight);
    out.push_back(fc_bias);
    return out;
  }
};

}  // namespace

int main(int argc, char** argv) {
  Options o = bench::parse(argc, argv);
  if (o.batch == 0) o.batch = 512;
  if (o.steps == 0) o.steps = 10;  // the anchor's n, chunks and warm-up for ResNet-18
  if (o.chunks == 0) o.chunks = 5;
  if (o.warmup < 0) o.warmup = 5;
  const Device device = Device::parse(o.device);
  if (device.is_cuda() && rcuda::cuda::device_count() == 0) {
    std::printf("no CUDA device: %s\n", rcuda::cuda::unavailable_reason().c_str());
    return 1;
  }
  if (device.is_cuda()) rcuda::cuda::set_cudnn_benchmark(o.benchmark);
  const char* ddp_env = std::getenv("RCUDA_BENCH_DDP");
  const bool data_parallel = ddp_env != nullptr && std::string(ddp_env) == "1";
  const std::string name = "resnet18_b" + std::to_string(o.batch) + "_" + bench::tag_of(o, device) +
                           (data_parallel ? "_ddp" : "");

  rcuda::manual_seed(0);
  const Maker maker{bench::dtype_of(o), device, bench::format_of(o)};
  const ResNet18 model(maker);
  const Tensor x =
      bench::in_format(rcuda::randn({o.batch, 3, 32, 32}), maker.dtype, device, maker.format);
  const Tensor y = rcuda::randint(0, 10, {o.batch}, rcuda::TensorOptions(DType::Int64, device));
  rcuda::optim::SGDOptions sgd;
  sgd.lr = 0.1;
  sgd.momentum = 0.9;
  sgd.nesterov = true;
  sgd.weight_decay = 5e-4;
  rcuda::optim::SGD opt(model.parameters(), sgd);
  std::unique_ptr<rcuda::dist::DataParallel> ddp;
  if (data_parallel) {
    rcuda::dist::ProcessGroupOptions group;
    group.backend = device.is_cuda() ? rcuda::dist::Backend::Nccl : rcuda::dist::Backend::Mpi;
    std::vector<std::pair<std::string, Tensor>> named;
    for (const Tensor& p : model.parameters())
      named.emplace_back("parameter " + std::to_string(named.size()), p);
    ddp = std::make_unique<rcuda::dist::DataParallel>(rcuda::dist::init_process_group(group),
                                                      std::move(named));
  }

  {  // Whether channels-last survives the blocks (a silent copy to contiguous would cost time).
    rcuda::NoGradGuard no_grad;
    const Tensor f = model.features(x);
    bench::log(name + "_features_channels_last",
               rcuda::suggest_memory_format(f) == MemoryFormat::ChannelsLast ? 1 : 0);
  }

  bench::LossTrace trace;
  const auto step = [&] {
    opt.zero_grad();
    if (ddp) ddp->before_forward();
    Tensor loss;
    {
      std::optional<rcuda::AutocastGuard> autocast;
      bench::forward_autocast(autocast, o, device);
      loss = nn::cross_entropy(model(x), y);
    }
    rcuda::autograd::backward(loss);
    opt.step();
    trace.record(loss);
  };
  const double us = bench::time_steps(name, device, step, trace, o.warmup, o.steps, o.chunks);
  bench::log(name + "_step_ms", us / 1e3);
  bench::log(name + "_img_per_s", static_cast<double>(o.batch) * 1e6 / us);
  return 0;
}
