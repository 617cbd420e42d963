// ONNX import (rcuda/io/onnx/import.h): models exported by PyTorch (tests/onnx_models, made by
// make_fixtures.py with both of torch.onnx.export's exporters) against PyTorch's own outputs;
// models rcuda exports, loaded back, against rcuda's own run, bitwise; and the errors a bad file
// or a bad input gets, each naming the file, the node and the op, or the input.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>
#include <cstdlib>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "io/io_test_util.h"
#include "rcuda/autograd/api.h"
#include "rcuda/io/onnx.h"
#include "rcuda/io/onnx/import.h"
#include "rcuda/nn/functional.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

const std::string kModels = std::string(RCUDA_TESTS_DIR) + "/onnx_models/";

// max |a - e| over max |e|: PyTorch's and rcuda's float32 kernels sum in different orders.
double relative_error(const Tensor& actual, const Tensor& expected) {
  const std::vector<double> a = values(actual), e = values(expected);
  double diff = 0, scale = 0;
  for (size_t k = 0; k < e.size(); ++k) {
    diff = std::max(diff, std::fabs(a[k] - e[k]));
    scale = std::max(scale, std::fabs(e[k]));
  }
  return diff / std::max(scale, 1e-30);
}

struct Fixture {
  const char* model;
  const char* exporter;
};

std::string fixture_name(const testing::TestParamInfo<Fixture>& info) {
  return std::string(info.param.model) + "_" + info.param.exporter;
}

// float32 products in full float32 on CUDA for the comparison: rcuda's default, as PyTorch's,
// lets cuDNN's convolutions and recurrent layers use TF32 (10-bit mantissas, ~1e-4 relative).
struct NoTf32 {
  const bool conv = cuda::allow_conv_tf32(), matmul = cuda::allow_tf32();
  NoTf32() {
    cuda::set_allow_conv_tf32(false);
    cuda::set_allow_tf32(false);
  }
  ~NoTf32() {
    cuda::set_allow_conv_tf32(conv);
    cuda::set_allow_tf32(matmul);
  }
};

class PyTorchModels : public testing::TestWithParam<Fixture> {
 protected:
  void check_on(Device device) {
    std::optional<NoTf32> full_float32;
    if (device.is_cuda()) full_float32.emplace();
    const Fixture f = GetParam();
    const std::string base = kModels + f.model;
    io::OnnxLoadOptions options;
    options.device = device;
    const io::OnnxModel model = io::OnnxModel::load(base + "_" + f.exporter + ".onnx", options);
    const Tensor input = io::load_onnx_tensor(base + "_input_0.pb");
    const Tensor expected = io::load_onnx_tensor(base + "_output_0.pb");
    const std::vector<Tensor> out = model.run({input});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].device(), device);
    EXPECT_EQ(out[0].dtype(), expected.dtype());
    EXPECT_EQ(out[0].shape(), expected.shape());
    const double tol = expected.dtype() == DType::Float64 ? 1e-12 : 1e-5;
    EXPECT_LE(relative_error(out[0], expected), tol) << model.summary();
  }
};

TEST_P(PyTorchModels, MatchPyTorchOnTheCpu) { check_on(Device()); }

TEST_P(PyTorchModels, MatchPyTorchOnCuda) {
  RCUDA_REQUIRE_CUDA();
  check_on(kCuda);
}

INSTANTIATE_TEST_SUITE_P(
    OnnxImport, PyTorchModels,
    testing::Values(Fixture{"mlp", "torchscript"}, Fixture{"mlp", "dynamo"},
                    Fixture{"mlp_f64", "torchscript"}, Fixture{"mlp_f64", "dynamo"},
                    Fixture{"resnet18", "torchscript"}, Fixture{"resnet18", "dynamo"},
                    Fixture{"lstm_lm", "torchscript"}, Fixture{"lstm_lm", "dynamo"},
                    Fixture{"transformer", "torchscript"}, Fixture{"transformer", "dynamo"}),
    fixture_name);

// The exported models' symbolic dims: another batch size runs, and PyTorch's first rows are
// the rows of the same inputs in a bigger batch.
TEST(OnnxImport, SymbolicBatchRunsAtOtherSizes) {
  const io::OnnxModel model = io::OnnxModel::load(kModels + "resnet18_torchscript.onnx");
  ASSERT_EQ(model.inputs().size(), 1u);
  EXPECT_EQ(model.inputs()[0].shape_string(), "[batch, 3, 32, 32]");
  const Tensor input = io::load_onnx_tensor(kModels + "resnet18_input_0.pb");
  const Tensor expected = io::load_onnx_tensor(kModels + "resnet18_output_0.pb");
  const Tensor bigger = cat({input, randn({3, 3, 32, 32})}, 0);
  const Tensor out = model.run({bigger})[0];
  ASSERT_EQ(out.shape(), (Shape{5, 10}));
  EXPECT_LE(relative_error(out.slice(0, 0, 2), expected), 1e-5);
}

// A loaded model is code over the public ops, so a trace of its run is a graph::Graph that
// replays it (at the traced shapes), bitwise on the CPU. A traced run takes the unfused Conv and
// Relu (Note [Fused Conv and Relu]), so the bitwise comparison is with fusion off; the fused
// run agrees within rounding (oneDNN adds the bias before its one rounding).
TEST(OnnxImport, ALoadedModelTracesIntoAGraph) {
  setenv("RCUDA_ONNX_FUSE", "0", 1);
  const io::OnnxModel model = io::OnnxModel::load(kModels + "resnet18_torchscript.onnx");
  unsetenv("RCUDA_ONNX_FUSE");
  const io::OnnxModel fused = io::OnnxModel::load(kModels + "resnet18_torchscript.onnx");
  graph::NamedTensors params;
  for (const auto& p : model.initializers()) params.push_back(p);
  const graph::Graph g = graph::trace([&](const std::vector<Tensor>& in) { return model.run(in); },
                                      {randn({2, 3, 32, 32})}, params);
  std::map<std::string, int> ops;
  for (const auto& [op, n] : g.op_counts()) ops[op_name(op)] = n;
  EXPECT_EQ(ops["conv2d"], 20) << g.to_string();
  const Tensor x = randn({2, 3, 32, 32});
  EXPECT_EQ(values(g.run({x})[0]), values(model.run({x})[0]));
  EXPECT_LE(relative_error(fused.run({x})[0], g.run({x})[0]), 1e-5);
}

// One model run from several threads at once (a server's instances share a loaded model):
// every run gives the outputs a run alone gives.
TEST(OnnxImport, ConcurrentRunsAgree) {
  const io::OnnxModel model = io::OnnxModel::load(kModels + "transformer_dynamo.onnx");
  std::vector<Tensor> inputs, alone;
  for (int i = 0; i < 4; ++i) {
    inputs.push_back(randn({i + 1, 6, 32}));
    alone.push_back(model.run({inputs.back()})[0]);
  }
  std::vector<Tensor> together(inputs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < inputs.size(); ++i)
    threads.emplace_back([&, i] {
      for (int round = 0; round < 5; ++round) together[i] = model.run({inputs[i]})[0];
    });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(values(together[i]), values(alone[i]));
}

// ---- round trip: rcuda's export, loaded back, gives rcuda's own outputs bitwise ------------

TEST(OnnxImport, RoundTripIsBitwiseOnTheCpu) {
  const Tensor w1 = randn({8, 3, 3, 3}), b1 = randn({8});
  const Tensor mean = randn({8}), var = add(rand({8}), 0.5), gamma = randn({8}), beta = randn({8});
  const Tensor w2 = randn({16, 8 * 4 * 4}), b2 = randn({16});
  const Tensor ln_w = randn({16}), ln_b = randn({16});
  const Tensor w3 = randn({5, 16}), b3 = randn({5});
  auto forward = [&](const std::vector<Tensor>& in) {
    Tensor h = nn::conv2d(in[0], w1, b1, {1}, {1});
    h = nn::batch_norm(h, mean, var, gamma, beta, false);
    h = relu(max_pool2d(h, {2}, {2}));
    h = flatten(h, 1);
    h = tanh(nn::linear(h, w2, b2));
    h = nn::layer_norm(h, {16}, ln_w, ln_b);
    h = sigmoid(nn::linear(h, w3, b3));
    return std::vector<Tensor>{softmax(h, 1)};
  };
  const graph::NamedTensors params = {
      {"w1", w1}, {"b1", b1}, {"mean", mean}, {"var", var},   {"gamma", gamma}, {"beta", beta},
      {"w2", w2}, {"b2", b2}, {"ln_w", ln_w}, {"ln_b", ln_b}, {"w3", w3},       {"b3", b3}};
  const graph::Graph g = graph::trace(forward, {randn({2, 3, 8, 8})}, params);
  io::OnnxExportOptions options;
  options.dynamic_axes = {{"input", {{0, "batch"}}}, {"output", {{0, "batch"}}}};
  const io::OnnxModel model =
      io::OnnxModel::load_bytes(io::export_onnx_bytes(g, options), "round_trip.onnx", "");
  for (int64_t batch : {1, 4}) {
    const Tensor x = randn({batch, 3, 8, 8});
    const Tensor ours = g.run({x})[0];
    const Tensor loaded = model.run({x})[0];
    ASSERT_EQ(loaded.shape(), ours.shape());
    EXPECT_EQ(values(loaded), values(ours)) << "batch " << batch;
  }
}

// ---- fine-tuning: the loaded weights are leaves that can require grad -----------------------

TEST(OnnxImport, GradientsReachTheInitializers) {
  const io::OnnxModel model = io::OnnxModel::load(kModels + "mlp_f64_torchscript.onnx");
  const auto params = model.parameters();
  ASSERT_EQ(params.size(), 6u);  // three weights, three biases
  for (const auto& [name, t] : params) t.requires_grad_(true);
  const Tensor x = randn({3, 16}, TensorOptions(DType::Float64));
  const Tensor loss = sum(model.run({x})[0]);
  autograd::backward(loss);
  // The last bias's gradient of a sum is the batch size in every element.
  const Tensor last_bias = params.back().second;
  ASSERT_TRUE(last_bias.grad().defined()) << params.back().first;
  for (double g : values(last_bias.grad())) EXPECT_EQ(g, 3.0);
  // Central differences on one weight element agree with backward.
  const Tensor w = params.front().second;
  const double analytic = values(w.grad())[0];
  const double h = 1e-6;
  auto loss_at = [&](double delta) {
    NoGradGuard no_grad;
    Tensor shifted = clone(w);
    const Tensor saved = clone(w);
    fill_(w.view({-1}).slice(0, 0, 1), values(saved)[0] + delta);
    const double l = values(sum(model.run({x})[0]))[0];
    copy_(w, saved);
    return l;
  };
  EXPECT_NEAR(analytic, (loss_at(h) - loss_at(-h)) / (2 * h), 1e-6);
}

// ---- bad files and bad inputs -------------------------------------------------------------

onnx::ModelProto fixture_proto(const std::string& name) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(read_bytes(kModels + name)));
  return m;
}

std::string load_error(const onnx::ModelProto& m) {
  return error_message([&] { io::OnnxModel::load_bytes(m.SerializeAsString(), "bad.onnx", ""); });
}

TEST(OnnxImportErrors, TruncatedOrCorruptFile) {
  const std::string bytes = read_bytes(kModels + "mlp_torchscript.onnx");
  const std::string truncated = error_message(
      [&] { io::OnnxModel::load_bytes(bytes.substr(0, bytes.size() / 2), "cut.onnx", ""); });
  EXPECT_NE(truncated.find("cut.onnx"), std::string::npos) << truncated;
  std::string corrupt = bytes;
  for (size_t k = 0; k < 64; ++k) corrupt[k] = static_cast<char>(0xff);
  const std::string garbage =
      error_message([&] { io::OnnxModel::load_bytes(corrupt, "garbage.onnx", ""); });
  EXPECT_NE(garbage.find("garbage.onnx"), std::string::npos) << garbage;
  EXPECT_THROW(io::OnnxModel::load("/nonexistent/model.onnx"), FileError);
}

TEST(OnnxImportErrors, MissingInitializer) {
  onnx::ModelProto m = fixture_proto("mlp_torchscript.onnx");
  const std::string name = m.graph().initializer(0).name();
  m.mutable_graph()->mutable_initializer()->DeleteSubrange(0, 1);
  const std::string e = load_error(m);
  EXPECT_NE(e.find("bad.onnx"), std::string::npos) << e;
  EXPECT_NE(e.find("'" + name + "'"), std::string::npos) << e;
  EXPECT_NE(e.find("(Gemm)"), std::string::npos) << e;
  EXPECT_NE(e.find("missing initializer"), std::string::npos) << e;
}

TEST(OnnxImportErrors, UnsupportedOpAndOpset) {
  onnx::ModelProto m = fixture_proto("mlp_torchscript.onnx");
  m.mutable_graph()->mutable_node(1)->set_op_type("NonMaxSuppression");
  m.mutable_graph()->mutable_node(1)->set_name("the_node");
  std::string e = load_error(m);
  EXPECT_NE(e.find("node 'the_node' (NonMaxSuppression)"), std::string::npos) << e;
  EXPECT_NE(e.find("not supported"), std::string::npos) << e;

  m = fixture_proto("mlp_torchscript.onnx");
  m.mutable_graph()->mutable_node(1)->set_op_type("NoSuchOp");
  e = load_error(m);
  EXPECT_NE(e.find("(NoSuchOp)"), std::string::npos) << e;

  m = fixture_proto("mlp_torchscript.onnx");
  m.mutable_opset_import(0)->set_version(99);
  e = load_error(m);
  EXPECT_NE(e.find("opset 99"), std::string::npos) << e;

  m = fixture_proto("mlp_torchscript.onnx");
  m.mutable_graph()->mutable_node(0)->set_domain("com.example");
  e = load_error(m);
  EXPECT_NE(e.find("com.example"), std::string::npos) << e;
}

TEST(OnnxImportErrors, Cycle) {
  onnx::ModelProto m = fixture_proto("mlp_torchscript.onnx");
  // The first node reads the last node's output: Gemm -> Relu -> ... -> Gemm -> first Gemm.
  onnx::GraphProto* g = m.mutable_graph();
  const std::string last = g->node(g->node_size() - 1).output(0);
  const std::string first_out = g->node(0).output(0);
  g->mutable_node(0)->set_input(0, first_out + "_loop");
  onnx::NodeProto* loop = g->add_node();
  loop->set_op_type("Relu");
  loop->set_name("loop");
  loop->add_input(last);
  loop->add_output(first_out + "_loop");
  const std::string e = load_error(m);
  EXPECT_NE(e.find("cycle"), std::string::npos) << e;
  EXPECT_NE(e.find("(Relu)"), std::string::npos) << e;
}

TEST(OnnxImportErrors, WrongInputs) {
  const io::OnnxModel model = io::OnnxModel::load(kModels + "resnet18_torchscript.onnx");
  const std::string rank = error_message([&] { model.run({randn({3, 32, 32})}); });
  EXPECT_NE(rank.find("input 'image'"), std::string::npos) << rank;
  EXPECT_NE(rank.find("[batch, 3, 32, 32]"), std::string::npos) << rank;
  const std::string size = error_message([&] { model.run({randn({2, 3, 30, 32})}); });
  EXPECT_NE(size.find("[2, 3, 30, 32]"), std::string::npos) << size;
  EXPECT_NE(size.find("[batch, 3, 32, 32]"), std::string::npos) << size;
  const std::string dtype = error_message([&] {
    model.run({randn({2, 3, 32, 32}, TensorOptions(DType::Float64))});
  });
  EXPECT_NE(dtype.find("float64"), std::string::npos) << dtype;
  EXPECT_NE(dtype.find("float32"), std::string::npos) << dtype;
  const std::string count = error_message([&] { model.run({}); });
  EXPECT_NE(count.find("takes 1 input"), std::string::npos) << count;
}

// A CUDA device this process cannot use is refused at load, naming the file.
TEST(OnnxImportErrors, UnavailableDevice) {
  io::OnnxLoadOptions options;
  options.device = Device(DeviceType::CUDA, cuda::device_count());  // one past the last
  const std::string e =
      error_message([&] { io::OnnxModel::load(kModels + "mlp_torchscript.onnx", options); });
  EXPECT_NE(e.find("mlp_torchscript.onnx: cannot load onto cuda:"), std::string::npos) << e;
}

// A node's error at run names the node: a Reshape to a size that does not fit.
TEST(OnnxImportErrors, RunErrorsNameTheNode) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  onnx::ValueInfoProto* in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TensorProto* shape = g->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(5);
  shape->add_int64_data(-1);
  onnx::NodeProto* node = g->add_node();
  node->set_op_type("Reshape");
  node->set_name("reshape_it");
  node->add_input("x");
  node->add_input("shape");
  node->add_output("y");
  g->add_output()->set_name("y");
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  const io::OnnxModel model = io::OnnxModel::load_bytes(m.SerializeAsString(), "r.onnx", "");
  EXPECT_EQ(model.run({randn({10})})[0].shape(), (Shape{5, 2}));
  const std::string e = error_message([&] { model.run({randn({7})}); });
  EXPECT_NE(e.find("r.onnx: node 'reshape_it' (Reshape)"), std::string::npos) << e;
}

// Initializers in a file beside the model (models over protobuf's 2 GB limit), and one that
// points outside the model's folder.
TEST(OnnxImport, ExternalData) {
  const std::string dir = testing::TempDir() + "onnx_external_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  onnx::ModelProto m = fixture_proto("mlp_torchscript.onnx");
  std::string blob;
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
    ASSERT_TRUE(t.has_raw_data());
    const size_t offset = blob.size();
    blob += t.raw_data();
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* key, const std::string& value) {
      onnx::StringStringEntryProto* e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add("location", "weights.bin");
    add("offset", std::to_string(offset));
    add("length", std::to_string(blob.size() - offset));
  }
  std::ofstream(dir + "/weights.bin", std::ios::binary) << blob;
  std::ofstream(dir + "/model.onnx", std::ios::binary) << m.SerializeAsString();
  const io::OnnxModel model = io::OnnxModel::load(dir + "/model.onnx");
  const Tensor input = io::load_onnx_tensor(kModels + "mlp_input_0.pb");
  const Tensor expected = io::load_onnx_tensor(kModels + "mlp_output_0.pb");
  EXPECT_LE(relative_error(model.run({input})[0], expected), 1e-5);

  std::ofstream(dir + "/weights.bin", std::ios::binary) << blob.substr(0, blob.size() / 2);
  const std::string short_file = error_message([&] { io::OnnxModel::load(dir + "/model.onnx"); });
  EXPECT_NE(short_file.find("weights.bin"), std::string::npos) << short_file;

  m.mutable_graph()->mutable_initializer(0)->mutable_external_data(0)->set_value("../escape.bin");
  std::ofstream(dir + "/model.onnx", std::ios::binary) << m.SerializeAsString();
  const std::string escape = error_message([&] { io::OnnxModel::load(dir + "/model.onnx"); });
  EXPECT_NE(escape.find("inside the model's folder"), std::string::npos) << escape;
  std::filesystem::remove_all(dir);
}

TEST(OnnxImport, SummaryAndMetadata) {
  const io::OnnxModel model = io::OnnxModel::load(kModels + "resnet18_torchscript.onnx");
  EXPECT_EQ(model.opset(), 17);
  const std::string s = model.summary();
  EXPECT_NE(s.find("image: float32 [batch, 3, 32, 32]"), std::string::npos) << s;
  EXPECT_NE(s.find("Conv 20"), std::string::npos) << s;
  EXPECT_NE(s.find("opset 17"), std::string::npos) << s;
  int convs = 0;
  for (const auto& [op, n] : model.op_counts())
    if (op == "Conv") convs = n;
  EXPECT_EQ(convs, 20);
}

// ---- CUDA: the device run and CUDA-graph replay --------------------------------------------

TEST(OnnxImport, CudaGraphReplayMatchesEagerRuns) {
  RCUDA_REQUIRE_CUDA();
  io::OnnxLoadOptions options;
  options.device = kCuda;
  options.cuda_graphs = true;
  const io::OnnxModel model = io::OnnxModel::load(kModels + "resnet18_torchscript.onnx", options);
  io::OnnxLoadOptions eager_options;
  eager_options.device = kCuda;
  const io::OnnxModel eager =
      io::OnnxModel::load(kModels + "resnet18_torchscript.onnx", eager_options);
  for (int round = 0; round < 3; ++round) {
    for (int64_t batch : {1, 2}) {
      const Tensor x = randn({batch, 3, 32, 32}, TensorOptions(DType::Float32, kCuda));
      const Tensor replayed = model.run({x})[0];
      const Tensor expected = eager.run({x})[0];
      EXPECT_LE(relative_error(replayed, expected), 1e-6) << "batch " << batch;
    }
  }
  const auto captures = model.captures();
  ASSERT_EQ(captures.size(), 2u);
  for (const auto& c : captures) EXPECT_EQ(c.error, "") << c.signature;
}

}  // namespace
}  // namespace rcuda::test
