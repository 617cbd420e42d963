// Gradients of composite models against PyTorch's (tests/golden/make_golden_grads.py writes
// them in float64 into RCUDA_GOLDEN_DIR): an MLP with cross-entropy, a layer_norm + gelu block,
// embedding + linear, a chain of pads and interpolations and two ResNet basic blocks (their
// gradients, and their losses over eight SGD steps), on the CPU in float64 and, where
// there is a GPU, on CUDA in float32.
// Skipped (reported as skipped) when RCUDA_GOLDEN_DIR is unset: the GPU check sets it.
#include <cstdlib>
#include <fstream>
#include <map>

#include "rcuda/backend/cuda.h"
#include "rcuda/optim/sgd.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

const char* golden_dir() { return std::getenv("RCUDA_GOLDEN_DIR"); }

Tensor golden(const std::string& model, const std::string& name, const Shape& shape,
              DType dtype = DType::Float64) {
  const std::string path = std::string(golden_dir()) + "/" + model + "_" + name + ".bin";
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<char> bytes(static_cast<size_t>(numel(shape)) * element_size(dtype));
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return from_data(bytes.data(), shape, dtype);
}

using Inputs = std::map<std::string, Tensor>;
using Model = std::function<Tensor(Inputs&)>;

// Loads the model's tensors onto `device` in `dtype` (integers stay int64), makes the floating
// ones that PyTorch differentiated leaves, runs backward and compares loss and gradients.
void check(const std::string& model, const std::map<std::string, Shape>& shapes,
           const std::vector<std::string>& differentiated, const Model& f, Device device,
           DType dtype, double tol) {
  Inputs in;
  for (const auto& [name, shape] : shapes) {
    const bool integral = name == "y" || name == "t" || name == "idx";
    Tensor t = golden(model, name, shape, integral ? DType::Int64 : DType::Float64);
    in[name] = to(t, device, integral ? DType::Int64 : dtype);
  }
  for (const std::string& name : differentiated) in[name].requires_grad_();
  Tensor loss = f(in);
  autograd::backward(loss);
  EXPECT_TRUE(all_close(to_doubles(to(loss, Device(DeviceType::CPU), DType::Float64)),
                        to_doubles(golden(model, "loss", {1})), tol))
      << model << " loss";
  for (const std::string& name : differentiated) {
    const Tensor expected = golden(model, name + "_grad", shapes.at(name));
    ASSERT_TRUE(in[name].grad().defined()) << model << " " << name;
    EXPECT_TRUE(all_close(to_doubles(to(in[name].grad(), Device(DeviceType::CPU), DType::Float64)),
                          to_doubles(expected), tol))
        << model << " gradient of " << name;
  }
}

// Two ResNet basic blocks, the first with a strided 1x1-conv shortcut, the second with the
// identity; batch norm in training mode, global average pooling, linear and cross-entropy
// (bench/bench_resnet.cpp's pieces).
std::map<std::string, Shape> resblock_shapes() {
  std::map<std::string, Shape> shapes = {{"x", {4, 3, 8, 8}}, {"y", {4}},  {"ws", {6, 3, 1, 1}},
                                         {"fw", {5, 6}},      {"fb", {5}}, {"w1", {6, 3, 3, 3}}};
  for (const char* w : {"w2", "w3", "w4"}) shapes[w] = {6, 6, 3, 3};
  for (const char* c : {"g1", "b1", "g2", "b2", "gs", "bs", "g3", "b3", "g4", "b4"})
    shapes[c] = {6};
  return shapes;
}
std::vector<std::string> resblock_parameters() {
  return {"w1", "g1", "b1", "w2", "g2", "b2", "ws", "gs", "bs",
          "w3", "g3", "b3", "w4", "g4", "b4", "fw", "fb"};
}
Tensor resblock(Inputs& p) {
  const auto bn = [](const Tensor& h, const Tensor& g, const Tensor& b) {
    return nn::batch_norm(h, Tensor(), Tensor(), g, b, /*training=*/true);
  };
  Tensor h = nn::relu(bn(nn::conv2d(p["x"], p["w1"], {}, 2, 1), p["g1"], p["b1"]));
  h = bn(nn::conv2d(h, p["w2"], {}, 1, 1), p["g2"], p["b2"]);
  const Tensor s = bn(nn::conv2d(p["x"], p["ws"], {}, 2, 0), p["gs"], p["bs"]);
  Tensor o = nn::relu(add(h, s));
  h = nn::relu(bn(nn::conv2d(o, p["w3"], {}, 1, 1), p["g3"], p["b3"]));
  o = nn::relu(add(bn(nn::conv2d(h, p["w4"], {}, 1, 1), p["g4"], p["b4"]), o));
  const Tensor pooled = flatten(nn::adaptive_avg_pool2d(o, {1}), 1);
  return nn::cross_entropy(nn::linear(pooled, p["fw"], p["fb"]), p["y"]);
}

// Eight SGD steps (lr 0.1, momentum 0.9, Nesterov, weight decay 5e-4) on the blocks: the loss
// before each step against PyTorch's.
void check_resblock_training(Device device, DType dtype, double tol) {
  Inputs in;
  std::vector<Tensor> params;
  for (const auto& [name, shape] : resblock_shapes()) {
    const bool integral = name == "y";
    in[name] = to(golden("resblock", name, shape, integral ? DType::Int64 : DType::Float64), device,
                  integral ? DType::Int64 : dtype);
  }
  for (const std::string& name : resblock_parameters()) {
    in[name].requires_grad_();
    params.push_back(in[name]);
  }
  optim::SGDOptions o;
  o.lr = 0.1;
  o.momentum = 0.9;
  o.nesterov = true;
  o.weight_decay = 5e-4;
  optim::SGD opt(params, o);
  std::vector<double> losses;
  for (int step = 0; step < 8; ++step) {
    opt.zero_grad();
    const Tensor loss = resblock(in);
    autograd::backward(loss);
    opt.step();
    losses.push_back(item(loss).to_double());
  }
  EXPECT_TRUE(all_close(losses, to_doubles(golden("resblock_sgd", "losses", {8})), tol));
}

void check_every_model(Device device, DType dtype, double tol) {
  nn::CrossEntropyOptions smoothing;
  smoothing.label_smoothing = 0.1;
  check(
      "mlp",
      {{"x", {8, 20}},
       {"y", {8}},
       {"w1", {32, 20}},
       {"b1", {32}},
       {"w2", {16, 32}},
       {"b2", {16}},
       {"w3", {5, 16}},
       {"b3", {5}}},
      {"w1", "b1", "w2", "b2", "w3", "b3"},
      [&](Inputs& p) {
        Tensor h = nn::relu(nn::linear(p["x"], p["w1"], p["b1"]));
        h = nn::relu(nn::linear(h, p["w2"], p["b2"]));
        return nn::cross_entropy(nn::linear(h, p["w3"], p["b3"]), p["y"], smoothing);
      },
      device, dtype, tol);
  check(
      "ln_gelu", {{"x", {4, 6, 16}}, {"g", {16}}, {"b", {16}}, {"w", {16, 16}}, {"c", {16}}},
      {"x", "g", "b", "w", "c"},
      [](Inputs& p) {
        const Tensor h = nn::layer_norm(p["x"], {16}, p["g"], p["b"]);
        const Tensor y = nn::gelu(nn::linear(h, p["w"], p["c"]));
        return mean(mul(y, y));
      },
      device, dtype, tol);
  check(
      "emb", {{"idx", {5, 7}}, {"t", {35}}, {"e", {50, 12}}, {"w", {3, 12}}, {"c", {3}}},
      {"e", "w", "c"},
      [](Inputs& p) {
        const Tensor h = nn::linear(nn::embedding(p["idx"], p["e"], 0), p["w"], p["c"]);
        return nn::cross_entropy(reshape(h, {35, 3}), p["t"]);
      },
      device, dtype, tol);
  check(
      "resample", {{"x", {2, 3, 5, 6}}}, {"x"},
      [](Inputs& p) {
        Tensor y = nn::interpolate(nn::pad(p["x"], {2, 1, 1, 2}, "reflect"), {11, 7}, {},
                                   "bilinear", true);
        y = nn::interpolate(nn::pad(y, {1, -2, 2, 1}, "replicate"), {}, {0.6}, "bilinear");
        y = nn::interpolate(nn::pad(y, {1, 1, 0, 0}, "circular"), {5, 9}, {}, "nearest");
        return mean(mul(y, y));
      },
      device, dtype, tol);
  std::vector<std::string> differentiated = resblock_parameters();
  differentiated.push_back("x");
  check("resblock", resblock_shapes(), differentiated, resblock, device, dtype, tol);
}

TEST(GoldenGradients, CompositeModelsMatchPyTorchOnTheCpu) {
  if (golden_dir() == nullptr) GTEST_SKIP() << "RCUDA_GOLDEN_DIR is not set";
  check_every_model(Device(DeviceType::CPU), DType::Float64, 1e-10);
  check_resblock_training(Device(DeviceType::CPU), DType::Float64, 1e-10);
}

TEST(GoldenGradients, CompositeModelsMatchPyTorchOnCuda) {
  if (golden_dir() == nullptr) GTEST_SKIP() << "RCUDA_GOLDEN_DIR is not set";
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  check_every_model(Device(DeviceType::CUDA, 0), DType::Float32, 1e-4);
  // TF32 convolutions (the default) and eight steps of float32 rounding.
  check_resblock_training(Device(DeviceType::CUDA, 0), DType::Float32, 2e-2);
}

}  // namespace
}  // namespace rcuda::test
