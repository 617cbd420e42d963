// Node::op: every node a public op records carries that op's OpId, so that a backward graph can
// be walked and printed by op name (graph_str); a leaf's accumulator carries OpId::Count.
#include <string>
#include <unordered_set>
#include <vector>

#include "autograd/gradcheck.h"
#include "rcuda/autograd/graph_str.h"

namespace rcuda::test {
namespace {

using autograd::Node;

// The graph's lines, indentation kept.
std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = s.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(s.substr(start, end - start));
  if (start < s.size()) lines.push_back(s.substr(start));
  return lines;
}

// Every node reachable from t's grad_fn, each once.
std::vector<const Node*> reachable(const Tensor& t) {
  std::vector<const Node*> nodes, stack{t.grad_fn().get()};
  std::unordered_set<const Node*> seen{stack.back()};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    nodes.push_back(n);
    for (const autograd::Edge& e : n->next_edges())
      if (e.valid() && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
  }
  return nodes;
}

TEST(NodeOp, EachNodeCarriesTheOpThatRecordedIt) {
  const Tensor x = leaf({4, 3}), y = leaf({4, 3}), m = leaf({4, 5});
  const Tensor w = leaf({6, 5}), b = leaf({6}), k = leaf({2, 1, 3, 3}), z = leaf({3, 3});
  const Tensor index = tensor_of({0, 2, 4}, {3}, DType::Int64);
  const Tensor target = tensor_of({4}, {1}, DType::Int64);

  // One chain, each op's first input the previous result, so that the walk below follows input
  // 0 from the loss back to x.
  const Tensor h1 = exp(x);                      // unary
  const Tensor h2 = mul(h1, y);                  // binary
  const Tensor h3 = div(h2, 2.0);                // a tensor and a number
  const Tensor h4 = h3.transpose(0, 1);          // a view, through the view hook
  const Tensor h5 = matmul(h4, m);               // [3, 5]
  const Tensor h6 = nn::linear(h5, w, b);        // [3, 6]
  const Tensor h7 = index_select(h6, 1, index);  // [3, 3]
  add_(h7, z);                                   // in place, on a non-leaf
  const Tensor h8 = reshape(h7, {1, 1, 3, 3});
  const Tensor h9 = nn::conv2d(h8, k, Tensor(), 1, 1);  // [1, 2, 3, 3]
  const Tensor h10 = sum(h9, {1});                      // [1, 3, 3]
  const Tensor h11 = flatten(h10, 1);                   // [1, 9]
  const Tensor loss = nn::cross_entropy(h11, target);

  const std::vector<OpId> expected = {
      OpId::CrossEntropy, OpId::Flatten,     OpId::Sum,    OpId::Conv2d, OpId::Reshape,
      OpId::AddInplace,   OpId::IndexSelect, OpId::Linear, OpId::Matmul, OpId::Transpose,
      OpId::Div,          OpId::Mul,         OpId::Exp,    OpId::Count};
  std::vector<std::string> names;
  const Node* node = loss.grad_fn().get();
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NE(node, nullptr) << "the walk ended after " << i << " nodes";
    EXPECT_EQ(node->op(), expected[i])
        << "node " << i << " (" << node->name() << ") is "
        << (node->op() == OpId::Count ? "Count" : op_name(node->op()));
    names.push_back(node->op() == OpId::Count ? node->name() : op_name(node->op()));
    const auto edges = node->next_edges();
    node = edges.empty() ? nullptr : edges[0].node.get();
  }
  EXPECT_EQ(node, nullptr) << "x's accumulator ends the chain";
  EXPECT_EQ(names.back(), "AccumulateGrad");

  // Each intermediate's own grad_fn, besides the walk: the in-place add_ replaced h7's.
  EXPECT_EQ(h1.grad_fn()->op(), OpId::Exp);
  EXPECT_EQ(h4.grad_fn()->op(), OpId::Transpose);
  EXPECT_EQ(h7.grad_fn()->op(), OpId::AddInplace);
  EXPECT_EQ(h7.grad_fn()->next_edges()[0].node->op(), OpId::IndexSelect);
  EXPECT_EQ(h6.grad_fn()->op(), OpId::Linear);

  // graph_str: depth-first along input 0 first, so the chain is its first lines, each two
  // spaces deeper than the one before.
  const std::vector<std::string> lines = lines_of(autograd::graph_str(loss));
  ASSERT_GE(lines.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(lines[i], std::string(2 * i, ' ') + names[i]) << "line " << i;
  EXPECT_EQ(lines[0], "cross_entropy");
  EXPECT_EQ(lines[1], "  flatten");
  EXPECT_EQ(lines[5], "          add_");
  // Every node once: one line per reachable node.
  EXPECT_EQ(lines.size(), reachable(loss).size());
}

TEST(NodeOp, OpsOfTheSameNodeTypeKeepTheirOwnOp) {
  // One node type for several ops: the OpId tells them apart where name() may not.
  const Tensor x = leaf({3, 4});
  EXPECT_EQ(sum(x).grad_fn()->op(), OpId::Sum);
  EXPECT_EQ(mean(x).grad_fn()->op(), OpId::Mean);
  EXPECT_EQ(max(x).grad_fn()->op(), OpId::Max);
  EXPECT_EQ(std::get<0>(max(x, 1)).grad_fn()->op(), OpId::Max);
  EXPECT_EQ(softmax(x, 1).grad_fn()->op(), OpId::Softmax);
  EXPECT_EQ(log_softmax(x, 1).grad_fn()->op(), OpId::LogSoftmax);
  EXPECT_EQ(sub(x, 1.0).grad_fn()->op(), OpId::Sub);
  EXPECT_EQ(pow(x, 2.0).grad_fn()->op(), OpId::Pow);
  EXPECT_EQ(gather(x, 1, tensor_of({0, 1, 2}, {3, 1}, DType::Int64)).grad_fn()->op(), OpId::Gather);
  EXPECT_EQ(cat({x, x}, 0).grad_fn()->op(), OpId::Cat);
  EXPECT_EQ(clone(x).grad_fn()->op(), OpId::Clone);
  EXPECT_EQ(x.t().grad_fn()->op(), OpId::Transpose);
  EXPECT_EQ(x.select(0, 1).grad_fn()->op(), OpId::Select);
  EXPECT_EQ(x.slice(1, 0, 2).grad_fn()->op(), OpId::Slice);
  EXPECT_EQ(x.view({12}).grad_fn()->op(), OpId::View);
  EXPECT_EQ(x.permute({1, 0}).grad_fn()->op(), OpId::Permute);
  EXPECT_EQ(x.expand({2, 3, 4}).grad_fn()->op(), OpId::Expand);
  // The in-place ops on a non-leaf.
  const Tensor h = mul(x, 2.0);
  mul_(h, x);
  EXPECT_EQ(h.grad_fn()->op(), OpId::MulInplace);
  copy_(h, x);
  EXPECT_EQ(h.grad_fn()->op(), OpId::CopyInplace);
  fill_(h, 1.0);
  EXPECT_EQ(h.grad_fn()->op(), OpId::FillInplace);
  const Tensor g = mul(x, 2.0);
  index_put_(g, IndexList{tensor_of({0}, {1}, DType::Int64)},
             tensor_of({5, 5, 5, 5}, {4}, DType::Float64));
  EXPECT_EQ(g.grad_fn()->op(), OpId::IndexPut);
}

TEST(NodeOp, EveryNodeOfAModelsLossHasAnOpButTheLeaves) {
  manual_seed(3);
  const TensorOptions f32(DType::Float32, Device(DeviceType::CPU));
  const auto param = [&](const Shape& shape) {
    Tensor p = mul(randn(shape, f32), 0.1);
    p.requires_grad_();
    return p;
  };
  const Tensor conv_w = param({4, 1, 3, 3}), conv_b = param({4});
  const Tensor norm_w = param({4}), norm_b = param({4});
  const Tensor w1 = param({16, 36}), b1 = param({16}), w2 = param({3, 16}), b2 = param({3});
  const Tensor x = randn({2, 1, 6, 6}, f32);
  const Tensor labels = tensor_of({0, 2}, {2}, DType::Int64);

  Tensor h = nn::relu(nn::conv2d(x, conv_w, conv_b, 1, 1));  // [2, 4, 6, 6]
  h = nn::group_norm(h, 2, norm_w, norm_b);
  h = nn::max_pool2d(h, {2, 2});  // [2, 4, 3, 3]
  h = flatten(h, 1);              // [2, 36]
  h = nn::dropout(nn::relu(nn::linear(h, w1, b1)), 0.25);
  h = nn::layer_norm(h, {16});
  const Tensor loss = nn::cross_entropy(nn::linear(h, w2, b2), labels);

  size_t leaves = 0, ops = 0;
  for (const Node* n : reachable(loss)) {
    if (std::string(n->name()) == "AccumulateGrad") {
      EXPECT_EQ(n->op(), OpId::Count);
      ++leaves;
    } else {
      EXPECT_NE(n->op(), OpId::Count) << n->name() << " has no op";
      ++ops;
    }
  }
  EXPECT_EQ(leaves, 8u);  // each parameter's accumulator
  EXPECT_GE(ops, 9u);
  const std::string graph = autograd::graph_str(loss);
  for (const char* name : {"cross_entropy", "linear", "layer_norm", "dropout", "relu", "flatten",
                           "max_pool2d", "group_norm", "conv2d", "AccumulateGrad"})
    EXPECT_NE(graph.find(name), std::string::npos) << name << " missing from\n" << graph;
}

TEST(NodeOp, GraphStrPrintsASharedNodeOnce) {
  const Tensor x = leaf({3});
  const Tensor e = exp(x);
  EXPECT_EQ(autograd::graph_str(mul(e, e)), "mul\n  exp\n    AccumulateGrad\n");
  EXPECT_EQ(autograd::graph_str(add(e, x)), "add\n  exp\n    AccumulateGrad\n");
  EXPECT_EQ(autograd::graph_str(x), "");  // a leaf has no grad_fn
  {
    NoGradGuard no_grad;
    EXPECT_EQ(autograd::graph_str(exp(x)), "");
  }
}

}  // namespace
}  // namespace rcuda::test
