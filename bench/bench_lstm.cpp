// The LSTM anchor from C++ (shared/anchors/torch_train_h200.py): nn.LSTM(256, 512, 2,
// batch_first=True) over a batch of 64 sequences of 100 steps, then a linear head 512 -> 10 on
// the last step's output and cross-entropy, Adam (lr 1e-3); beside PyTorch's (bench/torch_lstm.py).
// Times the training step (zero_grad, forward, loss, backward, step) and the inference forward
// (no grad, eval: the LSTM alone), as the anchor's per_step_us does.
//   bench_lstm [--device cuda|cpu] [--batch 64] [--steps 20] [--chunks 5] [--warmup 5]
//              [--seq 100]
// Prints `name: value` lines (lstm2x512_b64_t100_train_step_us, ..._infer_us; "_cpu" off the
// GPU).
#include <cmath>
#include <string>
#include <vector>

#include "train_step.h"

namespace {

using rcuda::Device;
using rcuda::DType;
using rcuda::Tensor;
namespace nn = rcuda::nn;

constexpr int64_t kInput = 256, kHidden = 512, kLayers = 2, kClasses = 10;

// PyTorch's nn.LSTM initialisation: every weight and bias U(-1/sqrt(H), 1/sqrt(H)).
std::vector<Tensor> lstm_weights(Device device) {
  const double bound = 1 / std::sqrt(static_cast<double>(kHidden));
  const auto uniform = [bound](const Tensor& t) { rcuda::nn::init::uniform_(t, -bound, bound); };
  std::vector<Tensor> w;
  for (int64_t l = 0; l < kLayers; ++l) {
    const int64_t in = l == 0 ? kInput : kHidden;
    for (const rcuda::Shape& shape : std::vector<rcuda::Shape>{
             {4 * kHidden, in}, {4 * kHidden, kHidden}, {4 * kHidden}, {4 * kHidden}})
      w.push_back(bench::parameter(shape, uniform, DType::Float32, device,
                                   rcuda::MemoryFormat::Contiguous));
  }
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  // --seq is this bench's own option: taken out before the shared parser sees the rest.
  int64_t seq = 100;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--seq" && i + 1 < argc) {
      seq = std::atoll(argv[++i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  bench::Options o = bench::parse(static_cast<int>(rest.size()), rest.data(), " [--seq 100]");
  if (o.batch == 0) o.batch = 64;
  if (o.steps == 0) o.steps = 20;  // the anchor's per_step_us(lstm_step, n=20, chunks=5)
  if (o.chunks == 0) o.chunks = 5;
  if (o.warmup < 0) o.warmup = 5;
  const Device device = Device::parse(o.device);
  if (device.is_cuda() && rcuda::cuda::device_count() == 0) {
    std::printf("no CUDA device: %s\n", rcuda::cuda::unavailable_reason().c_str());
    return 1;
  }
  const std::string tag = device.is_cuda() ? "" : "_cpu";
  const std::string name = "lstm2x512_b" + std::to_string(o.batch) + "_t" + std::to_string(seq);

  rcuda::manual_seed(0);
  const std::vector<Tensor> weights = lstm_weights(device);
  const Tensor head_w = bench::parameter({kClasses, kHidden}, bench::torch_default_weight,
                                         DType::Float32, device, rcuda::MemoryFormat::Contiguous);
  const Tensor head_b = bench::parameter({kClasses}, bench::torch_default_bias(kHidden),
                                         DType::Float32, device, rcuda::MemoryFormat::Contiguous);
  const Tensor x = rcuda::to(rcuda::randn({o.batch, seq, kInput}), device);
  const Tensor y =
      rcuda::randint(0, kClasses, {o.batch}, rcuda::TensorOptions(DType::Int64, device));
  std::vector<Tensor> params = weights;
  params.push_back(head_w);
  params.push_back(head_b);
  rcuda::optim::Adam opt(params, rcuda::optim::AdamOptions{});

  nn::RnnOptions options;
  options.num_layers = kLayers;
  options.batch_first = true;
  bench::LossTrace trace;
  const auto train_step = [&] {
    opt.zero_grad();
    const nn::RnnResult r = nn::rnn(x, Tensor(), Tensor(), weights, options);
    const Tensor last = r.output.select(1, seq - 1);
    const Tensor loss = nn::cross_entropy(nn::linear(last, head_w, head_b), y);
    rcuda::autograd::backward(loss);
    opt.step();
    trace.record(loss);
  };
  const std::string train = name + "_train_step" + tag;
  bench::log(train + "_us",
             bench::time_steps(train, device, train_step, trace, o.warmup, o.steps, o.chunks));

  nn::RnnOptions eval = options;
  eval.training = false;
  const auto infer = [&] {
    rcuda::NoGradGuard no_grad;
    nn::rnn(x, Tensor(), Tensor(), weights, eval);
  };
  for (int i = 0; i < o.warmup; ++i) infer();
  bench::log(name + "_infer" + tag + "_us", bench::per_step_us(device, infer, o.steps, o.chunks));
  return 0;
}
