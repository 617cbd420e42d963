// Traced graphs: a trace records the public ops a function ran, its replay equals the function
// on fresh inputs (another batch size too), bitwise on the CPU; the funnel reports outermost
// calls only; host reads warn; ops without a replay are refused by name.
#include <gtest/gtest.h>

#include "rcuda/autograd/funnel.h"
#include "rcuda/graph/graph.h"
#include "rcuda/nn/functional.h"
#include "rcuda/nn/init.h"
#include "rcuda/rcuda.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

using graph::Graph;

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const std::vector<double> x = to_doubles(a), y = to_doubles(b);
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
  return true;
}

// The MNIST-example CNN's layers, smaller: conv, relu, max pool, view, linear, log_softmax.
struct SmallCnn {
  Tensor conv_w = random_tensor({4, 1, 3, 3}, DType::Float32, -0.3, 0.3);
  Tensor conv_b = random_tensor({4}, DType::Float32, -0.1, 0.1);
  Tensor fc_w = random_tensor({10, 4 * 5 * 5}, DType::Float32, -0.1, 0.1);
  Tensor fc_b = random_tensor({10}, DType::Float32, -0.1, 0.1);

  std::vector<Tensor> forward(const std::vector<Tensor>& in) const {
    Tensor h = nn::relu(nn::conv2d(in[0], conv_w, conv_b));
    h = nn::max_pool2d(h, {2, 2});
    h = h.view({h.size(0), -1});
    h = nn::dropout(h, 0.5, /*training=*/false);
    return {log_softmax(nn::linear(h, fc_w, fc_b), 1)};
  }
  graph::NamedTensors parameters() const {
    return {{"conv.weight", conv_w}, {"conv.bias", conv_b}, {"fc.weight", fc_w}, {"fc.bias", fc_b}};
  }
};

TEST(Trace, CnnReplayEqualsTheFunctionBitwiseAtTwoBatchSizes) {
  const SmallCnn cnn;
  const Tensor x = random_tensor({3, 1, 12, 12}, DType::Float32);
  const Graph g = graph::trace([&](const std::vector<Tensor>& in) { return cnn.forward(in); }, {x},
                               cnn.parameters());
  std::vector<OpId> ops;
  for (const graph::Node& n : g.nodes) ops.push_back(n.op);
  EXPECT_EQ(ops, (std::vector<OpId>{OpId::Conv2d, OpId::Relu, OpId::MaxPool2d, OpId::View,
                                    OpId::Dropout, OpId::Linear, OpId::LogSoftmax}));
  for (int64_t batch : {3, 7}) {
    const Tensor fresh = random_tensor({batch, 1, 12, 12}, DType::Float32);
    const Tensor expected = cnn.forward({fresh})[0];
    const Tensor replayed = g.run({fresh})[0];
    EXPECT_TRUE(bitwise_equal(replayed, expected)) << "batch " << batch;
  }
}

TEST(Trace, ParametersAreKeptByHandleAndConstantsAsTheyWere) {
  Tensor w = random_tensor({4, 3}, DType::Float64);
  Tensor shift = random_tensor({4}, DType::Float64);
  const Tensor shift_then = clone(shift);
  const Tensor x = random_tensor({2, 3}, DType::Float64);
  const Graph g = graph::trace(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{add(nn::linear(in[0], w), shift)};
      },
      {x}, {{"w", w}});
  ASSERT_EQ(g.values[g.nodes[0].inputs[1]].kind, graph::ValueKind::Parameter);
  EXPECT_EQ(g.values[g.nodes[0].inputs[1]].name, "w");
  EXPECT_EQ(g.values[g.nodes[1].inputs[1]].kind, graph::ValueKind::Constant);
  // A step on the parameter is seen by the graph; a later change of the constant is not.
  ops::fill_(w, 0.5);
  ops::fill_(shift, 100.0);
  const Tensor expected = add(nn::linear(x, w), shift_then);
  EXPECT_TRUE(all_close(to_doubles(g.run({x})[0]), to_doubles(expected), 0));
}

TEST(Trace, ReplayRecordsForAutogradAsTheFunctionDoes) {
  const Tensor w = random_tensor({5, 4}, DType::Float64).requires_grad_();
  const Tensor x = random_tensor({3, 4}, DType::Float64);
  const auto f = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{sum(tanh(nn::linear(in[0], w)))};
  };
  Graph g;
  {
    NoGradGuard no_grad;  // traced without recording, replayed with
    g = graph::trace(f, {x}, {{"w", w}});
  }
  autograd::backward(g.run({x})[0]);
  const std::vector<double> from_graph = to_doubles(w.grad());
  w.impl()->autograd->grad = Tensor();
  autograd::backward(f({x})[0]);
  EXPECT_TRUE(all_close(from_graph, to_doubles(w.grad()), 0));
}

// Every op of the table in docs/graph.md with attributes, traced and replayed on new values.
TEST(Trace, OpsWithAttributesReplayWithTheirAttributes) {
  const Tensor x = random_tensor({2, 3, 4}, DType::Float64);
  const auto f = [](const std::vector<Tensor>& in) {
    const Tensor& t = in[0];
    return std::vector<Tensor>{clamp(t, Scalar(-0.5), Scalar(0.7)),
                               leaky_relu(t, 0.2),
                               elu(t, 0.7),
                               softplus(t, 2.0, 5.0),
                               hardtanh(t, -0.3, 0.4),
                               gelu(t, "tanh"),
                               add(t, t, 3),
                               sub(t, 2.5),
                               pow(t, 2),
                               binary_op("sub", Scalar(1), t),
                               binary_op("div", Scalar(2.0), add(exp(t), 1.0)),
                               gt(t, Scalar(0)),
                               where(gt(t, Scalar(0)), t, Scalar(0.5)),
                               sum(t, {1}, true),
                               mean(t, {0, 2}),
                               max(t, 2, false).first,
                               max(t, 2, false).second,
                               var(t, {2}, 0.0),
                               norm(t, 3.0, {1}),
                               logsumexp(t, {2}),
                               softmax(t, 1),
                               cumsum(t, 2),
                               argmax(t, 1, true),
                               t.permute({2, 0, 1}),
                               contiguous(t.transpose(0, 2)),
                               t.slice(2, 1, 4, 2),
                               t.select(1, 2),
                               t.unsqueeze(0).expand({2, 2, 3, 4}),
                               flatten(t, 1, 2),
                               reshape(t, {2, -1}),
                               cat({t, t}, 1),
                               stack({t, t}, 0),
                               to(t, DType::Float32),
                               matmul(t, t.transpose(1, 2))};
  };
  const Graph g = graph::trace(f, {x});
  const Tensor y = random_tensor({2, 3, 4}, DType::Float64);
  const std::vector<Tensor> expected = f({y}), replayed = g.run({y});
  ASSERT_EQ(replayed.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_TRUE(bitwise_equal(replayed[i], expected[i])) << "output " << i << "\n" << g.to_string();
}

TEST(Trace, InnerCallsOfAnOpAreNotRecorded) {
  // linear of a 3-D input reshapes and calls itself; a loss runs elementwise ops inside.
  const Tensor w = random_tensor({5, 4}, DType::Float32);
  const Tensor x = random_tensor({2, 3, 4}, DType::Float32);
  const Graph g = graph::trace(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{nn::linear(in[0], w)}; },
      {x});
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, OpId::Linear);
  EXPECT_EQ(g.values[g.outputs[0]].shape, (Shape{2, 3, 5}));
}

TEST(Trace, InPlaceChangesAreReplayed) {
  const Tensor x = random_tensor({3, 4}, DType::Float64);
  const auto f = [](const std::vector<Tensor>& in) {
    Tensor h = mul(in[0], 2.0);
    add_(h, in[0]);
    mul_(h, h);
    return std::vector<Tensor>{h};
  };
  const Graph g = graph::trace(f, {x});
  const Tensor y = random_tensor({3, 4}, DType::Float64);
  EXPECT_TRUE(bitwise_equal(g.run({y})[0], f({y})[0]));
}

TEST(Trace, HostReadsWarnNamingTheFunction) {
  const Tensor x = random_tensor({3}, DType::Float32);
  const Graph g = graph::trace(
      [&](const std::vector<Tensor>& in) {
        autograd::report_host_read("item", in[0]);
        return std::vector<Tensor>{exp(in[0])};
      },
      {x});
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_NE(g.warnings[0].find("item reads a tensor's values on the host"), std::string::npos);
}

// A constant made inside the function and changed in place starts every run as it was traced.
TEST(Trace, InPlaceChangesOfAConstantStartFreshEachRun) {
  const Tensor x = random_tensor({3, 3}, DType::Float64);
  const auto fill_constant = [](const std::vector<Tensor>& in) {
    Tensor h = ops::zeros({3, 3}, DType::Float64);
    add_(h, in[0]);
    return std::vector<Tensor>{h};
  };
  const Graph twice = graph::trace(fill_constant, {x});
  const Tensor y = random_tensor({3, 3}, DType::Float64);
  twice.run({y});
  EXPECT_TRUE(bitwise_equal(twice.run({y})[0], y));
}

// An op without a replay entry is refused by name: tests/graph/test_replay_ops.cpp (fp8_linear).
TEST(Trace, Errors) {
  const Tensor x = random_tensor({3, 3}, DType::Float64);
  // A result no traced op made.
  const Tensor other = random_tensor({2}, DType::Float64);
  EXPECT_NE(error_message([&] {
              graph::trace([&](const std::vector<Tensor>&) { return std::vector<Tensor>{other}; },
                           {x});
            }).find("output 1 (shape [2]) was not made by a traced op"),
            std::string::npos);
  // Replay with the wrong dtype or rank names the input.
  const Graph g =
      graph::trace([](const std::vector<Tensor>& in) { return std::vector<Tensor>{exp(in[0])}; },
                   {x}, {}, {"x"});
  EXPECT_NE(error_message([&] {
              g.run({random_tensor({3, 3}, DType::Float32)});
            }).find("input 1 (\"x\") must be float64 as traced, got float32"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              g.run({random_tensor({3}, DType::Float64)});
            }).find("must have 2 dims as traced"),
            std::string::npos);
  EXPECT_NE(error_message([&] { g.run({}); }).find("expected 1 input, got 0"), std::string::npos);
  // Traces do not nest.
  EXPECT_NE(error_message([&] {
              graph::trace(
                  [&](const std::vector<Tensor>& in) {
                    return graph::trace([](const std::vector<Tensor>& v) { return v; }, in).run(in);
                  },
                  {x});
            }).find("traces do not nest"),
            std::string::npos);
}

TEST(Trace, PrintsEveryNodeByName) {
  const SmallCnn cnn;
  const Graph g = graph::trace([&](const std::vector<Tensor>& in) { return cnn.forward(in); },
                               {random_tensor({2, 1, 12, 12}, DType::Float32)}, cnn.parameters());
  const std::string text = g.to_string();
  for (const char* piece : {"%input : Float32[2, 1, 12, 12]", "%conv.weight : Float32[4, 1, 3, 3]",
                            "conv2d(%input, %conv.weight, %conv.bias)", "max_pool2d(", "view(",
                            "shape=[0, 100]", "linear(", "log_softmax(", "dim=1", "return ("})
    EXPECT_NE(text.find(piece), std::string::npos) << piece << "\n" << text;
}

}  // namespace
}  // namespace rcuda::test
