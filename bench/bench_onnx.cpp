// An ONNX model imported by rcuda (rcuda/io/onnx/import.h), timed for inference, beside PyTorch
// and ONNX Runtime on the same file (bench/torch_onnx_resnet.py makes the ResNet-18 files and
// times them there; bench/onnx_resnet.sh runs both and compares).
//   bench_onnx MODEL.onnx --name resnet18 [--device cuda|cpu] [--batch 1] [--iters 100]
//              [--cuda-graph] [--tag fp32] [--benchmark] [--check INPUT.pb OUTPUT.pb]
// Prints `name: value` lines: <name>_load_ms (the file read and bound, once), and
// <name>_b<batch>_<tag>_<mode>_img_per_s with mode eager, graph (CUDA-graph replay) or cpu.
// The input is random of the model's first input's shape with its symbolic batch set to --batch.
// --check runs the model once on INPUT.pb and prints <name>_<tag>_max_rel_error against OUTPUT.pb
// (PyTorch's output): max |rcuda - PyTorch| over max |PyTorch|.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "rcuda/autograd/api.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/io/onnx/import.h"
#include "rcuda/tensor/autograd_meta.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rcuda;
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_onnx MODEL.onnx --name NAME [--device cuda] [--batch 1] "
                 "[--iters 100] [--cuda-graph] [--tag fp32] [--benchmark]\n");
    return 2;
  }
  std::string path = argv[1], name = "model", tag = "fp32";
  Device device;
  int64_t batch = 1;
  int iters = 100;
  bool graph = false, benchmark = false;
  std::string check_input, check_output;
  for (int a = 2; a < argc; ++a) {
    const std::string arg = argv[a];
    auto next = [&] { return std::string(a + 1 < argc ? argv[++a] : ""); };
    if (arg == "--device")
      device = Device::parse(next());
    else if (arg == "--name")
      name = next();
    else if (arg == "--tag")
      tag = next();
    else if (arg == "--batch")
      batch = std::stoll(next());
    else if (arg == "--iters")
      iters = std::stoi(next());
    else if (arg == "--cuda-graph")
      graph = true;
    else if (arg == "--benchmark")
      benchmark = true;
    else if (arg == "--check") {
      check_input = next();
      check_output = next();
    }
  }
  if (device.is_cuda() && benchmark) cuda::set_cudnn_benchmark(true);
  NoGradGuard no_grad;

  io::OnnxLoadOptions options;
  options.device = device;
  options.cuda_graphs = graph;
  const auto load_start = Clock::now();
  const io::OnnxModel model = io::OnnxModel::load(path, options);
  const double load_ms = seconds_since(load_start) * 1e3;

  if (!check_input.empty()) {
    const Tensor in = to(io::load_onnx_tensor(check_input), model.inputs().at(0).dtype);
    const Tensor got = to(to(model.run({in})[0], Device()), DType::Float64);
    const Tensor want = to(io::load_onnx_tensor(check_output), DType::Float64);
    const double err =
        item(max(abs(sub(got, want)))).to_double() / item(max(abs(want))).to_double();
    std::printf("%s_%s_max_rel_error: %.3g\n", name.c_str(), tag.c_str(), err);
  }

  const io::OnnxValueInfo& info = model.inputs().at(0);
  Shape shape;
  for (int64_t d : info.dims) shape.push_back(d < 0 ? batch : d);
  const Tensor x = to(randn(shape, TensorOptions(DType::Float32, device)), info.dtype);

  auto sync = [&] {
    if (device.is_cuda()) cuda::synchronize(device.index);
  };
  const int warmup = std::max(3, iters / 10);
  for (int i = 0; i < warmup; ++i) model.run({x});
  sync();
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) model.run({x});
  sync();
  const double per_run = seconds_since(start) / iters;
  const std::string mode = device.is_cpu() ? "cpu" : graph ? "graph" : "eager";
  for (const auto& c : model.captures())
    if (!c.error.empty())
      std::fprintf(stderr, "capture of %s failed: %s\n", c.signature.c_str(), c.error.c_str());
  std::printf("%s_load_ms: %.2f\n", name.c_str(), load_ms);
  std::printf("%s_b%lld_%s_%s_img_per_s: %.1f\n", name.c_str(), static_cast<long long>(batch),
              tag.c_str(), mode.c_str(), static_cast<double>(batch) / per_run);
  return 0;
}
