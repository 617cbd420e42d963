// ONNX export (rcuda/io/onnx.h) against ONNX's reference tools: each graph is exported, checked
// by Python's onnx.checker (full_check) and run by ONNX Runtime (tests/io/onnx_reference.py) on
// the inputs this test writes; the outputs must match rcuda's own, computed by the same ops.
// The graphs are made by hand (values and nodes as a trace records them, docs/graph.md), so the
// exporter is tested apart from the tracer. Tests that need Python skip, saying so, without
// onnx, onnxruntime and numpy (scripts/install-deps.sh installs them).
#include <filesystem>

#include "io/onnx_test_util.h"
#include "rcuda/autograd/api.h"
#include "rcuda/io/onnx.h"
#include "rcuda/nn/functional.h"

namespace rcuda::test {
namespace {

using graph::Value;
using graph::ValueKind;

// A graph made by hand: each call adds a value as a trace would.
struct HandGraph {
  graph::Graph g;

  int add(Value v) {
    g.values.push_back(std::move(v));
    return static_cast<int>(g.values.size()) - 1;
  }
  int input(const std::string& name, const Tensor& example) {
    Value v;
    v.kind = ValueKind::Input;
    v.name = name;
    v.shape = example.shape();
    v.dtype = example.dtype();
    const int id = add(v);
    g.inputs.push_back(id);
    return id;
  }
  int tensor(ValueKind kind, const std::string& name, const Tensor& t) {
    Value v;
    v.kind = kind;
    v.name = name;
    v.shape = t.shape();
    v.dtype = t.dtype();
    v.tensor = t;
    return add(v);
  }
  int parameter(const std::string& name, const Tensor& t) {
    return tensor(ValueKind::Parameter, name, t);
  }
  int constant(const Tensor& t) {
    return tensor(ValueKind::Constant, "%" + std::to_string(g.values.size()), t);
  }
  // A node of `op` reading `inputs` that made `outputs`; returns the first output's id.
  int node(OpId op, std::vector<int> inputs, Attributes attrs, std::vector<Tensor> outputs) {
    graph::Node n;
    n.op = op;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    const int index = static_cast<int>(g.nodes.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      Value v;
      v.kind = ValueKind::OpOutput;
      v.name = "%" + std::to_string(g.values.size());
      v.shape = outputs[i].shape();
      v.dtype = outputs[i].dtype();
      v.node = index;
      v.output_nr = static_cast<int>(i);
      n.outputs.push_back(add(v));
    }
    g.nodes.push_back(n);
    return n.outputs.front();
  }
  void output(int v) { g.outputs.push_back(v); }
};

// linear - relu - linear - log_softmax, built in C++ and traced.
struct Mlp {
  Tensor w1 = random_tensor({16, 8}, DType::Float32, -0.5, 0.5);
  Tensor b1 = random_tensor({16}, DType::Float32, -0.5, 0.5);
  Tensor w2 = random_tensor({10, 16}, DType::Float32, -0.5, 0.5);
  Tensor b2 = random_tensor({10}, DType::Float32, -0.5, 0.5);

  Tensor forward(const Tensor& x) const {
    return log_softmax(nn::linear(nn::relu(nn::linear(x, w1, b1)), w2, b2), 1);
  }
  // The traced graph of a call on `x` (graph::trace), and its result.
  std::pair<graph::Graph, Tensor> trace(const Tensor& x) const {
    graph::Graph g = graph::trace(
        [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{forward(in[0])}; }, {x},
        {{"fc1.weight", w1}, {"fc1.bias", b1}, {"fc2.weight", w2}, {"fc2.bias", b2}});
    return {std::move(g), forward(x)};
  }
};

// conv2d - relu - max_pool2d - flatten - linear, built in C++ and traced.
struct Cnn {
  Tensor cw = random_tensor({4, 3, 3, 3}, DType::Float32, -0.5, 0.5);
  Tensor cb = random_tensor({4}, DType::Float32, -0.5, 0.5);
  Tensor fw = random_tensor({5, 64}, DType::Float32, -0.2, 0.2);
  Tensor fb = random_tensor({5}, DType::Float32, -0.2, 0.2);

  Tensor forward(const Tensor& x) const {
    const Tensor p = nn::max_pool2d(nn::relu(nn::conv2d(x, cw, cb, 1, 1)), {2, 2});
    return nn::linear(flatten(p, 1, -1), fw, fb);
  }
  // The traced graph of a call on `x` (graph::trace), and its result.
  std::pair<graph::Graph, Tensor> trace(const Tensor& x) const {
    graph::Graph g = graph::trace(
        [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{forward(in[0])}; }, {x},
        {{"conv.weight", cw}, {"conv.bias", cb}, {"fc.weight", fw}, {"fc.bias", fb}});
    return {std::move(g), forward(x)};
  }
};

TEST_F(OnnxExportTest, MlpMatchesOnnxRuntime) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  const Mlp mlp;
  const Tensor x = random_tensor({4, 8}, DType::Float32);
  const auto [g, y] = mlp.trace(x);
  const std::string path = file("mlp.onnx");
  io::export_onnx(g, path);
  expect_runtime_matches(path, {x}, {y}, "mlp");
}

TEST_F(OnnxExportTest, CnnMatchesOnnxRuntime) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  const Cnn cnn;
  const Tensor x = random_tensor({2, 3, 8, 8}, DType::Float32);
  const auto [g, y] = cnn.trace(x);
  const std::string path = file("cnn.onnx");
  io::export_onnx(g, path);
  expect_runtime_matches(path, {x}, {y}, "cnn");
}

// A graph traced at batch 4 runs at batch 4 and 7 when the batch dim is dynamic.
TEST_F(OnnxExportTest, DynamicBatchRunsAtOtherBatchSizes) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  const Mlp mlp;
  const Cnn cnn;
  io::OnnxExportOptions options;
  options.input_names = {"x"};
  options.output_names = {"logits"};
  options.dynamic_axes = {{"x", {{0, "batch"}}}, {"logits", {{0, "batch"}}}};
  const std::string mlp_path = file("mlp-dynamic.onnx"), cnn_path = file("cnn-dynamic.onnx");
  io::export_onnx(mlp.trace(random_tensor({4, 8}, DType::Float32)).first, mlp_path, options);
  io::export_onnx(cnn.trace(random_tensor({4, 3, 8, 8}, DType::Float32)).first, cnn_path, options);
  for (int64_t batch : {4, 7}) {
    const Tensor x = random_tensor({batch, 8}, DType::Float32);
    expect_runtime_matches(mlp_path, {x}, {mlp.trace(x).second}, "mlp" + std::to_string(batch));
    const Tensor image = random_tensor({batch, 3, 8, 8}, DType::Float32);
    expect_runtime_matches(cnn_path, {image}, {cnn.trace(image).second},
                           "cnn" + std::to_string(batch));
  }
}

// Opsets 18 to 21 (past the C++ checker): Python's checker and ONNX Runtime read them, including
// the reductions whose axes became an input in 18 and Gelu, an op from 20.
TEST_F(OnnxExportTest, NewerOpsetsCheckAndRun) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  const Tensor x = random_tensor({3, 5}, DType::Float32);
  HandGraph h;
  const int xi = h.input("x", x);
  const Tensor gl = gelu(x, "tanh");
  const int gi = h.node(OpId::Gelu, {xi}, {{"approximate", std::string("tanh")}}, {gl});
  const Tensor m = mean(gl, {1}, true);
  const int mi =
      h.node(OpId::Mean, {gi}, {{"dims", std::vector<int64_t>{1}}, {"keepdim", true}}, {m});
  const auto [mx, idx] = max(x, 1, false);
  h.node(OpId::Max, {xi}, {{"dim", int64_t{1}}, {"keepdim", false}}, {mx, idx});
  const int mxi = static_cast<int>(h.g.values.size()) - 2;
  const Tensor lse = logsumexp(x, {0}, false);
  const int li =
      h.node(OpId::Logsumexp, {xi}, {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}}, {lse});
  h.output(mi);
  h.output(mxi);
  h.output(mxi + 1);
  h.output(li);
  for (int opset = 17; opset <= 21; ++opset) {
    io::OnnxExportOptions options;
    options.opset_version = opset;
    const std::string path = file("opset" + std::to_string(opset) + ".onnx");
    io::export_onnx(h.g, path, options);
    expect_runtime_matches(path, {x}, {m, mx, idx, lse}, "opset" + std::to_string(opset));
  }
}

using Ints = std::vector<int64_t>;

// One graph with many of the table's mappings, each result an output compared with ONNX
// Runtime: compositions (gelu before opset 20, softplus, remainder), number operands on either
// side, the views, reductions, normalisations, convolutions with "same" and transposed, pools,
// pad modes and resizing.
TEST_F(OnnxExportTest, OpsMatchOnnxRuntime) {
  if (python_.empty()) GTEST_SKIP() << kNoOnnxPython;
  const Tensor v = random_tensor({3, 5}, DType::Float32);
  const Tensor x = random_tensor({2, 3, 4, 4}, DType::Float32);
  const Tensor seq = random_tensor({2, 3, 7}, DType::Float32);
  const Tensor idx = tensor_of({4, 0, 5, 2}, {4}, DType::Int64);
  HandGraph h;
  const int vi = h.input("v", v), xi = h.input("x", x), si = h.input("seq", seq),
            ii = h.input("indices", idx);
  std::vector<Tensor> expected;
  auto out = [&](OpId op, std::vector<int> in, Attributes attrs, const Tensor& result) {
    const int id = h.node(op, std::move(in), std::move(attrs), {result});
    h.output(id);
    expected.push_back(result);
    return id;
  };
  auto param = [&](const std::string& name, const Shape& shape) {
    const Tensor t = random_tensor(shape, DType::Float32, -0.5, 0.5);
    return std::make_pair(h.parameter(name, t), t);
  };

  // Elementwise.
  out(OpId::Gelu, {vi}, {{"approximate", std::string("none")}}, gelu(v, "none"));
  out(OpId::Softplus, {vi}, {{"beta", 2.0}, {"threshold", 1.0}}, softplus(v, 2.0, 1.0));
  out(OpId::Sub, {vi}, {{"other", 2.0}, {"number_first", true}},
      binary_op(OpId::Sub, Scalar(2.0), v));
  out(OpId::Clamp, {vi}, {{"min", -0.5}}, clamp(v, Scalar(-0.5), std::nullopt));
  out(OpId::Silu, {vi}, {}, silu(v));
  out(OpId::LeakyRelu, {vi}, {{"negative_slope", 0.2}}, leaky_relu(v, 0.2));
  out(OpId::Elu, {vi}, {{"alpha", 0.7}}, elu(v, 0.7));
  out(OpId::Hardtanh, {vi}, {{"min_val", -0.3}, {"max_val", 0.4}}, hardtanh(v, -0.3, 0.4));
  out(OpId::Remainder, {vi}, {{"other", 0.7}}, remainder(v, Scalar(0.7)));
  out(OpId::Expm1, {vi}, {}, expm1(v));
  out(OpId::Trunc, {vi}, {}, trunc(v));
  const Tensor positive = gt(v, Scalar(0.0));
  const int pi = out(OpId::Gt, {vi}, {{"other", 0.0}}, positive);
  out(OpId::MaskedFill, {vi, pi}, {{"value", 3.0}}, masked_fill(v, positive, Scalar(3.0)));
  out(OpId::To, {vi}, {{"dtype", std::string("float64")}, {"device", std::string("cpu")}},
      to(v, DType::Float64));
  // Views and joins.
  out(OpId::Permute, {xi}, {{"dims", Ints{0, 2, 3, 1}}}, x.permute({0, 2, 3, 1}));
  out(OpId::Reshape, {vi}, {{"shape", Ints{5, 3}}}, reshape(v, {5, 3}));
  out(OpId::Slice, {vi},
      {{"dim", int64_t{1}}, {"start", int64_t{1}}, {"end", int64_t{4}}, {"step", int64_t{2}}},
      v.slice(1, 1, 4, 2));
  out(OpId::Select, {vi}, {{"dim", int64_t{0}}, {"index", int64_t{-1}}}, v.select(0, -1));
  const Tensor row = v.slice(0, 0, 1, 1);
  const int ri = h.node(
      OpId::Slice, {vi},
      {{"dim", int64_t{0}}, {"start", int64_t{0}}, {"end", int64_t{1}}, {"step", int64_t{1}}},
      {row});
  out(OpId::Expand, {ri}, {{"shape", Ints{4, -1}}}, row.expand({4, 5}));
  out(OpId::Cat, {vi, vi}, {{"dim", int64_t{0}}}, cat({v, v}, 0));
  out(OpId::Stack, {vi, vi}, {{"dim", int64_t{1}}}, stack({v, v}, 1));
  const Tensor cols = tensor_of({4, 1}, {2}, DType::Int64);
  out(OpId::IndexSelect, {vi, h.constant(cols)}, {{"dim", int64_t{1}}}, index_select(v, 1, cols));
  // Reductions.
  out(OpId::Sum, {vi}, {{"dims", Ints{1}}, {"keepdim", true}}, sum(v, {1}, true));
  out(OpId::Prod, {vi}, {{"dims", Ints{0}}, {"keepdim", false}}, prod(v, {0}));
  out(OpId::Argmax, {vi}, {{"dim", int64_t{1}}, {"keepdim", false}}, argmax(v, 1));
  out(OpId::Argmin, {vi}, {{"keepdim", false}}, argmin(v));
  out(OpId::Cumsum, {vi}, {{"dim", int64_t{1}}}, cumsum(v, 1));
  out(OpId::Softmax, {vi}, {{"dim", int64_t{0}}}, softmax(v, 0));
  out(OpId::Norm, {vi}, {{"p", 3.0}, {"dims", Ints{1}}, {"keepdim", false}}, norm(v, 3.0, {1}));
  // Matrix products and layers.
  const auto [mi, m] = param("m", {5, 2});
  const auto [bi, bias2] = param("bias2", {2});
  out(OpId::Matmul, {vi, mi}, {}, matmul(v, m));
  out(OpId::Addmm, {bi, vi, mi}, {{"beta", 0.5}, {"alpha", 2.0}}, addmm(bias2, v, m, 0.5, 2.0));
  const auto [lwi, lw] = param("lin.weight", {6, 3});
  const Tensor xp = x.permute({0, 2, 3, 1});
  const int xpi = h.node(OpId::Permute, {xi}, {{"dims", Ints{0, 2, 3, 1}}}, {xp});
  out(OpId::Linear, {xpi, lwi, -1}, {}, nn::linear(xp, lw));
  const auto [ewi, ew] = param("emb.weight", {6, 3});
  out(OpId::Embedding, {ii, ewi}, {}, nn::embedding(idx, ew));
  const auto [lnw, lnwt] = param("ln.weight", {5});
  const auto [lnb, lnbt] = param("ln.bias", {5});
  out(OpId::LayerNorm, {vi, lnw, lnb}, {{"normalized_shape", Ints{5}}, {"eps", 1e-5}},
      nn::layer_norm(v, {5}, lnwt, lnbt, 1e-5));
  const Tensor mean3 = random_tensor({3}, DType::Float32, -0.5, 0.5);
  const Tensor var3 = random_tensor({3}, DType::Float32, 0.5, 1.5);
  const auto [gw, gwt] = param("norm.weight", {3});
  const auto [gb, gbt] = param("norm.bias", {3});
  out(OpId::BatchNorm,
      {xi, h.parameter("bn.running_mean", mean3), h.parameter("bn.running_var", var3), gw, gb},
      {{"training", false}, {"momentum", 0.1}, {"eps", 1e-5}},
      nn::batch_norm(x, mean3, var3, gwt, gbt, false, 0.1, 1e-5));
  out(OpId::GroupNorm, {xi, gw, gb}, {{"num_groups", int64_t{3}}, {"eps", 1e-5}},
      nn::group_norm(x, 3, gwt, gbt, 1e-5));
  out(OpId::InstanceNorm, {xi, -1, -1, gw, gb},
      {{"use_input_stats", true}, {"momentum", 0.1}, {"eps", 1e-5}},
      nn::instance_norm(x, {}, {}, gwt, gbt, true, 0.1, 1e-5));
  // Convolutions and pools.
  const auto [c1w, c1wt] = param("conv1.weight", {4, 3, 4});
  out(OpId::Conv1d, {si, c1w, -1},
      {{"stride", Ints{1}},
       {"padding_mode", std::string("same")},
       {"dilation", Ints{1}},
       {"groups", int64_t{1}}},
      nn::conv1d(seq, c1wt, {}, 1, "same"));
  const auto [tw, twt] = param("deconv.weight", {3, 2, 3, 3});
  const auto [tb, tbt] = param("deconv.bias", {2});
  out(OpId::ConvTranspose2d, {xi, tw, tb},
      {{"stride", Ints{2, 2}},
       {"padding", Ints{1, 1}},
       {"output_padding", Ints{1, 1}},
       {"groups", int64_t{1}},
       {"dilation", Ints{1, 1}}},
      nn::conv_transpose2d(x, twt, tbt, 2, 1, 1));
  out(OpId::AvgPool2d, {xi},
      {{"kernel_size", Ints{2, 2}},
       {"stride", Ints{2, 2}},
       {"padding", Ints{1, 1}},
       {"ceil_mode", false},
       {"count_include_pad", false}},
      nn::avg_pool2d(x, {2, 2}, {}, {1}, false, false));
  out(OpId::MaxPool1d, {si},
      {{"kernel_size", Ints{2}},
       {"stride", Ints{2}},
       {"padding", Ints{0}},
       {"dilation", Ints{1}},
       {"ceil_mode", false},
       {"return_indices", false}},
      nn::max_pool1d(seq, 2));
  out(OpId::AdaptiveAvgPool2d, {xi}, {{"output_size", Ints{1, 1}}},
      nn::adaptive_avg_pool2d(x, {1, 1}));
  out(OpId::AdaptiveAvgPool2d, {xi}, {{"output_size", Ints{2, 2}}},
      nn::adaptive_avg_pool2d(x, {2, 2}));
  // Pad and resize.
  out(OpId::Pad, {xi}, {{"padding", Ints{1, 2, 2, 1}}, {"mode", std::string("reflect")}},
      nn::pad(x, {1, 2, 2, 1}, "reflect"));
  out(OpId::Pad, {xi},
      {{"padding", Ints{1, 1, 2, 0}}, {"mode", std::string("constant")}, {"value", 0.5}},
      nn::pad(x, {1, 1, 2, 0}, "constant", 0.5));
  out(OpId::Pad, {xi}, {{"padding", Ints{0, 1, 1, 0}}, {"mode", std::string("replicate")}},
      nn::pad(x, {0, 1, 1, 0}, "replicate"));
  out(OpId::Interpolate, {xi},
      {{"scale_factor", std::vector<double>{2.0}}, {"mode", std::string("nearest")}},
      nn::interpolate(x, {}, {2.0}, "nearest"));
  out(OpId::Interpolate, {xi},
      {{"size", Ints{6, 7}}, {"mode", std::string("bilinear")}, {"align_corners", false}},
      nn::interpolate(x, {6, 7}, {}, "bilinear", false));

  const std::string path = file("ops.onnx");
  io::export_onnx(h.g, path);
  expect_runtime_matches(path, {v, x, seq, idx}, expected, "ops");
}

TEST_F(OnnxExportTest, FileHoldsTheBytes) {
  const Mlp mlp;
  const graph::Graph g = mlp.trace(random_tensor({2, 8}, DType::Float32)).first;
  const std::string path = file("bytes.onnx");
  io::export_onnx(g, path);
  const std::string bytes = io::export_onnx_bytes(g);
  EXPECT_FALSE(bytes.empty());
  EXPECT_EQ(read_bytes(path), bytes);
  // The parameters are initializers under their own names.
  EXPECT_NE(bytes.find("fc1.weight"), std::string::npos);
  EXPECT_NE(bytes.find("fc2.bias"), std::string::npos);
}

TEST_F(OnnxExportTest, OpWithoutOnnxFormIsNamed) {
  const Tensor x = random_tensor({3}, DType::Float32, 0.5, 2);
  HandGraph h;
  const int xi = h.input("x", x);
  h.output(h.node(OpId::Lgamma, {xi}, {}, {lgamma(x)}));
  const std::string message = error_message([&] { io::export_onnx_bytes(h.g); });
  EXPECT_NE(message.find("onnx_export: op lgamma has no ONNX form (opset 17)"), std::string::npos)
      << message;
  EXPECT_THROW(io::export_onnx_bytes(h.g), ValueError);
}

// A model that ONNX's shape inference refuses: ValueError naming the ONNX node and its op.
TEST_F(OnnxExportTest, CheckerFailureNamesTheNode) {
  const Tensor a = random_tensor({3, 5}, DType::Float32);
  HandGraph h;
  const int ai = h.input("a", a);
  // Recorded as if [3, 5] @ [3, 5] had run: MatMul's shape inference refuses it.
  h.output(h.node(OpId::Matmul, {ai, ai}, {}, {random_tensor({3, 5}, DType::Float32)}));
  const std::string message = error_message([&] { io::export_onnx_bytes(h.g); });
  EXPECT_NE(message.find("fails ONNX's checks"), std::string::npos) << message;
  EXPECT_NE(message.find("matmul_0/MatMul"), std::string::npos) << message;
}

TEST_F(OnnxExportTest, OpsetOutsideTheRangeIsRefused) {
  const Mlp mlp;
  const graph::Graph g = mlp.trace(random_tensor({2, 8}, DType::Float32)).first;
  for (int opset : {9, 16, 22}) {
    io::OnnxExportOptions options;
    options.opset_version = opset;
    EXPECT_THROW(io::export_onnx_bytes(g, options), ValueError);
    const std::string message = error_message([&] { io::export_onnx_bytes(g, options); });
    EXPECT_NE(message.find("opset_version must be between 17 and 21, got " + std::to_string(opset)),
              std::string::npos)
        << message;
  }
}

TEST_F(OnnxExportTest, DropoutInTrainingModeIsRefused) {
  const Tensor x = random_tensor({2, 3}, DType::Float32);
  HandGraph h;
  const int xi = h.input("x", x);
  h.output(h.node(OpId::Dropout, {xi}, {{"p", 0.5}, {"training", true}}, {x}));
  const std::string message = error_message([&] { io::export_onnx_bytes(h.g); });
  EXPECT_NE(message.find("dropout"), std::string::npos) << message;
  EXPECT_NE(message.find("training=true"), std::string::npos) << message;
}

// A path that cannot be written: FileError naming it, and nothing left in the folder.
TEST_F(OnnxExportTest, UnwritablePathLeavesNoFile) {
  const Mlp mlp;
  const graph::Graph g = mlp.trace(random_tensor({2, 8}, DType::Float32)).first;
  const std::string missing = file("no-such-folder/model.onnx");
  EXPECT_THROW(io::export_onnx(g, missing), FileError);
  EXPECT_NE(error_message([&] { io::export_onnx(g, missing); }).find(missing), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(missing));
  // A folder in the way of the rename: the temporary file is made, then removed.
  const std::string folder = file("taken");
  std::filesystem::create_directories(folder + "/inside");
  EXPECT_THROW(io::export_onnx(g, folder), FileError);
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir_))
    left.push_back(entry.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"taken"});
}

}  // namespace
}  // namespace rcuda::test
