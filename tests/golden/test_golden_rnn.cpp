// The recurrent layers against PyTorch's nn.LSTM, nn.GRU and nn.RNN: tests/golden/
// make_golden_rnn.py writes, in float64, the inputs, PyTorch's weights, random upstream gradients,
// the outputs and every gradient for a table of configurations (layers, directions, biases,
// batch_first, unbatched input, given or zero initial states). Each runs here through
// rcuda::nn::rnn on the CPU in float64 (own loops; 1e-10) and float32 (oneDNN; 1e-4, relative to
// max(1, |value|): a handful of steps of sums over at most a dozen terms), and where there is a GPU
// through cuDNN in float32 (TF32 off; 1e-4) and float16 (1e-2: 11-bit inputs and weights, float32
// accumulation). Skipped (reported as skipped) when RCUDA_GOLDEN_DIR is unset.
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rcuda/backend/cuda.h"
#include "rcuda/nn/rnn.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

using json = nlohmann::json;

const char* golden_dir() { return std::getenv("RCUDA_GOLDEN_DIR"); }

Backend::RnnMode mode_of(const std::string& mode) {
  if (mode == "LSTM") return Backend::RnnMode::Lstm;
  if (mode == "GRU") return Backend::RnnMode::Gru;
  return mode == "RNN_TANH" ? Backend::RnnMode::RnnTanh : Backend::RnnMode::RnnRelu;
}

Tensor golden(const std::string& config, const std::string& name, const json& tensors) {
  const Shape shape = tensors.at(name).get<Shape>();
  const std::string path = std::string(golden_dir()) + "/rnn/" + config + "__" + name + ".bin";
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::vector<char> bytes(static_cast<size_t>(numel(shape)) * sizeof(double));
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_EQ(in.gcount(), static_cast<std::streamsize>(bytes.size())) << path;
  return from_data(bytes.data(), shape, DType::Float64);
}

void check_config(const json& c, Device device, DType dtype) {
  const std::string name = c.at("name");
  const json tensors = c.at("tensors");
  const bool lstm = c.at("mode") == "LSTM";
  auto load = [&](const std::string& t) {
    Tensor v = to(golden(name, t, tensors), device, dtype);
    v.requires_grad_();
    return v;
  };
  std::vector<std::string> names = {"x"};
  const bool states = c.at("states");
  if (states) names.push_back("h0");
  if (states && lstm) names.push_back("c0");
  const int weights = c.at("weights");
  for (int i = 0; i < weights; ++i) names.push_back("w" + std::to_string(i));
  std::map<std::string, Tensor> in;
  for (const std::string& t : names) in[t] = load(t);
  std::vector<Tensor> w;
  for (int i = 0; i < weights; ++i) w.push_back(in["w" + std::to_string(i)]);
  nn::RnnOptions options;
  options.mode = mode_of(c.at("mode"));
  options.num_layers = c.at("layers");
  options.bidirectional = c.at("bidirectional");
  options.batch_first = c.at("batch_first");
  const nn::RnnResult r = nn::rnn(in["x"], states ? in["h0"] : Tensor(),
                                  states && lstm ? in["c0"] : Tensor(), w, options);
  const double tol = dtype == DType::Float64 ? 1e-10 : dtype == DType::Float32 ? 1e-4 : 1e-2;
  auto expect_close = [&](const Tensor& got, const std::string& t) {
    EXPECT_TRUE(all_close(to_doubles(to(got, Device(DeviceType::CPU), DType::Float64)),
                          to_doubles(golden(name, t, tensors)), tol))
        << t;
  };
  expect_close(r.output, "out");
  expect_close(r.h_n, "h_n");
  const auto upstream = [&](const std::string& t) {
    return to(golden(name, t, tensors), device, dtype);
  };
  Tensor loss = add(sum(mul(r.output, upstream("g_out"))), sum(mul(r.h_n, upstream("g_h"))));
  if (lstm) {
    expect_close(r.c_n, "c_n");
    loss = add(loss, sum(mul(r.c_n, upstream("g_c"))));
  }
  autograd::TensorList inputs;
  for (const std::string& t : names) inputs.push_back(in[t]);
  const autograd::TensorList grads = autograd::grad({loss}, inputs);
  ASSERT_EQ(grads.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) expect_close(grads[i], names[i] + "_grad");
}

json manifest() {
  const std::string path = std::string(golden_dir()) + "/rnn/manifest.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path << " (tests/golden/make_golden_rnn.py)";
  const json configs = in.good() ? json::parse(in).at("configs") : json::array();
  EXPECT_GE(configs.size(), 20u);
  return configs;
}

TEST(GoldenRnn, RecurrentLayersMatchPyTorchOnTheCpu) {
  if (golden_dir() == nullptr) GTEST_SKIP() << "RCUDA_GOLDEN_DIR is not set";
  for (const json& c : manifest()) {
    for (DType dtype : {DType::Float64, DType::Float32}) {
      SCOPED_TRACE(c.at("name").get<std::string>() + " " + dtype_name(dtype));
      check_config(c, Device(DeviceType::CPU), dtype);
    }
  }
}

TEST(GoldenRnn, RecurrentLayersMatchPyTorchOnCuda) {
  if (golden_dir() == nullptr) GTEST_SKIP() << "RCUDA_GOLDEN_DIR is not set";
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason();
  const bool tf32 = cuda::allow_conv_tf32();
  cuda::set_allow_conv_tf32(false);  // float32 as float32 (cuDNN's layers follow this switch)
  for (const json& c : manifest()) {
    for (DType dtype : {DType::Float32, DType::Float16}) {
      SCOPED_TRACE(c.at("name").get<std::string>() + " " + dtype_name(dtype));
      check_config(c, Device(DeviceType::CUDA, 0), dtype);
    }
  }
  cuda::set_allow_conv_tf32(tf32);
}

}  // namespace
}  // namespace rcuda::test
