// ONNX export of traced recurrent layers (lstm, gru, rnn), var, std and atan2, against ONNX
// Runtime (tests/io/onnx_reference.py): each function is traced with graph::trace, exported,
// run by ONNX Runtime and compared with rcuda's own results on the same inputs. Tests that need
// Python skip, saying so, without onnx, onnxruntime and numpy.
#include "io/onnx_test_util.h"
#include "rcuda/autograd/api.h"
#include "rcuda/graph/graph.h"
#include "rcuda/io/onnx.h"
#include "rcuda/nn/rnn.h"

namespace rcuda::test {
namespace {

using Tensors = std::vector<Tensor>;

// Per layer and direction, in torch's order: w_ih [G * H, I_l], w_hh [G * H, H], and (with
// biases) b_ih, b_hh [G * H], named as torch's modules name them.
graph::NamedTensors rnn_weights(int64_t gates, int64_t input, int64_t hidden, int64_t layers,
                                int64_t directions, bool biases = true) {
  graph::NamedTensors w;
  for (int64_t l = 0; l < layers; ++l)
    for (int64_t d = 0; d < directions; ++d) {
      const std::string suffix = "_l" + std::to_string(l) + (d ? "_reverse" : "");
      const int64_t in = l == 0 ? input : directions * hidden;
      const Shape wih = {gates * hidden, in}, whh = {gates * hidden, hidden}, b = {gates * hidden};
      w.emplace_back("rnn.weight_ih" + suffix, random_tensor(wih, DType::Float32, -0.5, 0.5));
      w.emplace_back("rnn.weight_hh" + suffix, random_tensor(whh, DType::Float32, -0.5, 0.5));
      if (!biases) continue;
      w.emplace_back("rnn.bias_ih" + suffix, random_tensor(b, DType::Float32, -0.5, 0.5));
      w.emplace_back("rnn.bias_hh" + suffix, random_tensor(b, DType::Float32, -0.5, 0.5));
    }
  return w;
}

Tensors tensors_of(const graph::NamedTensors& named) {
  Tensors out;
  for (const auto& [name, t] : named) out.push_back(t);
  return out;
}

int64_t gates_of(Backend::RnnMode mode) {
  return mode == Backend::RnnMode::Lstm ? 4 : mode == Backend::RnnMode::Gru ? 3 : 1;
}

// One recurrent layer stack: its options and weights, called on [x] or [x, h0] or [x, h0, c0].
struct Recurrent {
  nn::RnnOptions options;
  graph::NamedTensors params;

  Recurrent(Backend::RnnMode mode, int64_t input, int64_t hidden, int64_t layers,
            bool bidirectional, bool batch_first, bool biases = true) {
    options.mode = mode;
    options.num_layers = layers;
    options.bidirectional = bidirectional;
    options.batch_first = batch_first;
    options.training = false;
    params = rnn_weights(gates_of(mode), input, hidden, layers, bidirectional ? 2 : 1, biases);
  }

  Tensors operator()(const Tensors& in) const {
    const Tensor hx = in.size() > 1 ? in[1] : Tensor();
    const Tensor cx = in.size() > 2 ? in[2] : Tensor();
    const nn::RnnResult r = nn::rnn(in[0], hx, cx, tensors_of(params), options);
    if (options.mode == Backend::RnnMode::Lstm) return {r.output, r.h_n, r.c_n};
    return {r.output, r.h_n};
  }

  graph::Graph trace(const Tensors& example) const {
    return graph::trace([this](const Tensors& in) { return (*this)(in); }, example, params);
  }
};

class OnnxExportRnnTest : public OnnxExportTest {
 protected:
  // Traces `fn` on `inputs`, exports it and expects ONNX Runtime to give fn's results.
  void expect_traced_matches(const graph::TracedFunction& fn, const Tensors& inputs,
                             const graph::NamedTensors& params, const std::string& tag,
                             const io::OnnxExportOptions& options = {}) {
    const graph::Graph g = graph::trace(fn, inputs, params);
    const std::string path = file(tag + ".onnx");
    io::export_onnx(g, path, options);
    expect_runtime_matches(path, inputs, fn(inputs), tag);
  }

  void expect_recurrent_matches(const Recurrent& r, const Tensors& inputs, const std::string& tag) {
    expect_traced_matches([&r](const Tensors& in) { return r(in); }, inputs, r.params, tag);
  }
};

TEST_F(OnnxExportRnnTest, LstmTwoLayersWithAndWithoutStates) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  const Recurrent lstm(Backend::RnnMode::Lstm, 3, 5, 2, false, false);
  const Tensor x = random_tensor({6, 2, 3}, DType::Float32);
  expect_recurrent_matches(lstm, {x}, "lstm");
  const Tensor h0 = random_tensor({2, 2, 5}, DType::Float32, -1, 1);
  const Tensor c0 = random_tensor({2, 2, 5}, DType::Float32, -1, 1);
  expect_recurrent_matches(lstm, {x, h0, c0}, "lstm-states");
}

// Two bidirectional layers: the second reads the first's directions side by side.
TEST_F(OnnxExportRnnTest, LstmBidirectionalBatchFirstWithStates) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  const Recurrent lstm(Backend::RnnMode::Lstm, 4, 3, 2, true, true);
  const Tensor x = random_tensor({2, 5, 4}, DType::Float32);
  const Tensor h0 = random_tensor({4, 2, 3}, DType::Float32, -1, 1);
  const Tensor c0 = random_tensor({4, 2, 3}, DType::Float32, -1, 1);
  expect_recurrent_matches(lstm, {x, h0, c0}, "lstm-bidirectional");
  // The newest opset, past the C++ checker (Python's checks it).
  io::OnnxExportOptions options;
  options.opset_version = 21;
  expect_traced_matches([&lstm](const Tensors& in) { return lstm(in); }, {x, h0, c0}, lstm.params,
                        "lstm-bidirectional-21", options);
}

TEST_F(OnnxExportRnnTest, GruBidirectionalBatchFirst) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  for (int64_t layers : {1, 2}) {
    SCOPED_TRACE("layers " + std::to_string(layers));
    const Recurrent gru(Backend::RnnMode::Gru, 3, 4, layers, true, true);
    const Tensor x = random_tensor({3, 5, 3}, DType::Float32);
    const std::string tag = "gru" + std::to_string(layers);
    expect_recurrent_matches(gru, {x}, tag);
    const Tensor h0 = random_tensor({2 * layers, 3, 4}, DType::Float32, -1, 1);
    expect_recurrent_matches(gru, {x, h0}, tag + "-states");
  }
}

TEST_F(OnnxExportRnnTest, ElmanTanhAndRelu) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  for (Backend::RnnMode mode : {Backend::RnnMode::RnnTanh, Backend::RnnMode::RnnRelu}) {
    const std::string tag = mode == Backend::RnnMode::RnnTanh ? "tanh" : "relu";
    SCOPED_TRACE(tag);
    const Recurrent rnn(mode, 4, 6, 2, false, false);
    const Tensor x = random_tensor({7, 3, 4}, DType::Float32);
    expect_recurrent_matches(rnn, {x}, tag);
    expect_recurrent_matches(rnn, {x, random_tensor({2, 3, 6}, DType::Float32, -1, 1)},
                             tag + "-states");
    const Recurrent bidirectional(mode, 4, 3, 1, true, false);
    expect_recurrent_matches(bidirectional, {x}, tag + "-bidirectional");
  }
}

// Layers without biases (2 weights per layer and direction) and an unbatched input [T, I]
// with its unbatched state [L * D, H].
TEST_F(OnnxExportRnnTest, NoBiasesAndUnbatched) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  const Recurrent gru(Backend::RnnMode::Gru, 3, 4, 2, false, false, false);
  expect_recurrent_matches(gru, {random_tensor({5, 2, 3}, DType::Float32)}, "gru-nobias");
  const Recurrent lstm(Backend::RnnMode::Lstm, 3, 4, 1, true, true);
  expect_recurrent_matches(
      lstm,
      {random_tensor({5, 3}, DType::Float32), random_tensor({2, 4}, DType::Float32, -1, 1),
       random_tensor({2, 4}, DType::Float32, -1, 1)},
      "lstm-unbatched");
}

// Traced at batch 3, run at batch 3 and 5: the batch dim of the input, the states and the
// results is dynamic (dim 1 time-major, dim 0 batch_first; h and c stay [L * D, N, H]).
TEST_F(OnnxExportRnnTest, DynamicBatch) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  const Recurrent lstm(Backend::RnnMode::Lstm, 3, 4, 2, true, false);
  io::OnnxExportOptions options;
  options.input_names = {"x", "h0", "c0"};
  options.output_names = {"y", "h_n", "c_n"};
  for (const char* name : {"x", "h0", "c0", "y", "h_n", "c_n"})
    options.dynamic_axes[name] = {{1, "batch"}};
  const auto inputs = [](int64_t batch) {
    return Tensors{random_tensor({6, batch, 3}, DType::Float32),
                   random_tensor({4, batch, 4}, DType::Float32, -1, 1),
                   random_tensor({4, batch, 4}, DType::Float32, -1, 1)};
  };
  const std::string path = file("lstm-dynamic.onnx");
  io::export_onnx(lstm.trace(inputs(3)), path, options);

  const Recurrent gru(Backend::RnnMode::Gru, 3, 4, 1, true, true);
  io::OnnxExportOptions gru_options;
  gru_options.input_names = {"x"};
  gru_options.output_names = {"y", "h_n"};
  gru_options.dynamic_axes = {
      {"x", {{0, "batch"}}}, {"y", {{0, "batch"}}}, {"h_n", {{1, "batch"}}}};
  const std::string gru_path = file("gru-dynamic.onnx");
  io::export_onnx(gru.trace({random_tensor({3, 5, 3}, DType::Float32)}), gru_path, gru_options);

  for (int64_t batch : {3, 5}) {
    const Tensors in = inputs(batch);
    expect_runtime_matches(path, in, lstm(in), "lstm" + std::to_string(batch));
    const Tensors gin = {random_tensor({batch, 5, 3}, DType::Float32)};
    expect_runtime_matches(gru_path, gin, gru(gin), "gru" + std::to_string(batch));
  }
}

// Dropout between layers in training mode draws at random: refused, naming it.
TEST_F(OnnxExportRnnTest, TrainingDropoutIsRefused) {
  Recurrent lstm(Backend::RnnMode::Lstm, 3, 4, 2, false, false);
  lstm.options.training = true;
  lstm.options.dropout = 0.5;
  const graph::Graph g = lstm.trace({random_tensor({4, 2, 3}, DType::Float32)});
  const std::string message = error_message([&] { io::export_onnx_bytes(g); });
  EXPECT_NE(message.find("op lstm"), std::string::npos) << message;
  EXPECT_NE(message.find("dropout=0.5"), std::string::npos) << message;
  EXPECT_NE(message.find("training=true"), std::string::npos) << message;
  EXPECT_THROW(io::export_onnx_bytes(g), ValueError);
  // Without dropout, training mode computes what eval mode does and exports.
  lstm.options.dropout = 0;
  EXPECT_NO_THROW(io::export_onnx_bytes(lstm.trace({random_tensor({4, 2, 3}, DType::Float32)})));
}

TEST_F(OnnxExportRnnTest, VarStdAndAtan2) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  const Tensor x = random_tensor({4, 3, 5}, DType::Float32);
  // y and x of atan2 in every quadrant and on the axes (x = 0, and both 0).
  const Tensor ay = tensor_of({1, -1, 1, -1, 2, -2, 0, 0, 0.5, -0.25}, {10}, DType::Float32);
  const Tensor ax = tensor_of({2, 2, -2, -2, 0, 0, 0, -1, 3, -0.5}, {10}, DType::Float32);
  const auto fn = [](const Tensors& in) {
    return Tensors{var(in[0], {1}),          rcuda::std(in[0], {0, 2}, 0, true),
                   var(in[0], {}, 1, false), rcuda::std(in[0], {-1}, 2.5, false),
                   atan2(in[1], in[2]),      atan2(sin(in[0]), cos(in[0]))};
  };
  expect_traced_matches(fn, {x, ay, ax}, {}, "var-std-atan2");
  io::OnnxExportOptions options;
  options.opset_version = 18;  // the reductions' axes as inputs
  expect_traced_matches(fn, {x, ay, ax}, {}, "var-std-atan2-18", options);
}

// var over the batch dim counts the run's batch, not the traced one.
TEST_F(OnnxExportRnnTest, VarCountsADynamicBatch) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  const auto fn = [](const Tensors& in) { return Tensors{var(in[0], {0}), rcuda::std(in[0])}; };
  io::OnnxExportOptions options;
  options.input_names = {"x"};
  options.output_names = {"var", "std"};
  options.dynamic_axes = {{"x", {{0, "batch"}}}};
  const std::string path = file("var-dynamic.onnx");
  io::export_onnx(graph::trace(fn, {random_tensor({3, 4}, DType::Float32)}), path, options);
  for (int64_t batch : {3, 6}) {
    const Tensors in = {random_tensor({batch, 4}, DType::Float32)};
    expect_runtime_matches(path, in, fn(in), "var" + std::to_string(batch));
  }
}

}  // namespace
}  // namespace rcuda::test
