// The engine's behaviour: accumulation, graphs shared by several outputs, grad() vs backward(),
// hooks, retain_grad, detach, grad mode, and every error the issue lists, each naming the op.
#include <memory>

#include "autograd/gradcheck.h"

namespace rcuda::test {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(AutogradEngine, LeavesAccumulateAcrossBackwardCalls) {
  Tensor x = leaf({3});
  const std::vector<double> xv = to_doubles(x);
  autograd::backward(sum(mul(x, x)));
  autograd::backward(sum(mul(x, 3.0)));
  std::vector<double> expected;
  for (double v : xv) expected.push_back(2 * v + 3);
  EXPECT_TRUE(all_close(to_doubles(x.grad()), expected, 1e-12));
}

TEST(AutogradEngine, ATensorUsedTwiceGetsBothGradients) {
  // y = x * x + x: one node consumed by two others (the engine waits for both).
  Tensor x = leaf({4});
  Tensor y = add(mul(x, x), x);
  autograd::backward(sum(y));
  std::vector<double> expected;
  for (double v : to_doubles(x)) expected.push_back(2 * v + 1);
  EXPECT_TRUE(all_close(to_doubles(x.grad()), expected, 1e-12));
}

TEST(AutogradEngine, DiamondGraphWithSharedIntermediate) {
  Tensor x = leaf({2, 3});
  EXPECT_TRUE(gradcheck(
      [](const TensorList& in) {
        const Tensor h = mul(in[0], 2.0);
        return mul(add(h, 1.0), sub(h, in[0]));
      },
      {x}));
}

TEST(AutogradEngine, SeveralOutputsWithGradOutputs) {
  Tensor x = leaf({3}), y = leaf({3});
  Tensor a = mul(x, y), b = add(x, y);
  const Tensor ga = tensor_of({1, 2, 3}, {3}, DType::Float64);
  const Tensor gb = tensor_of({-1, 0, 1}, {3}, DType::Float64);
  autograd::backward({a, b}, {ga, gb});
  const std::vector<double> xv = to_doubles(x), yv = to_doubles(y);
  std::vector<double> ex, ey;
  for (int i = 0; i < 3; ++i) {
    ex.push_back((i + 1) * yv[i] + (i - 1));
    ey.push_back((i + 1) * xv[i] + (i - 1));
  }
  EXPECT_TRUE(all_close(to_doubles(x.grad()), ex, 1e-12));
  EXPECT_TRUE(all_close(to_doubles(y.grad()), ey, 1e-12));
}

TEST(AutogradEngine, GradReturnsWithoutTouchingLeaves) {
  Tensor x = leaf({3}), w = leaf({3});
  Tensor loss = sum(mul(x, w));
  const TensorList g = autograd::grad({loss}, {x});
  EXPECT_TRUE(all_close(to_doubles(g[0]), to_doubles(w), 0));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
}

TEST(AutogradEngine, GradOfANonLeafAndUnusedInputs) {
  Tensor x = leaf({3});
  Tensor h = mul(x, 2.0);
  Tensor loss = sum(mul(h, h));
  Tensor unused = leaf({2});
  const TensorList g = autograd::grad({loss}, {h, unused}, {}, /*retain_graph=*/true, true);
  EXPECT_TRUE(all_close(to_doubles(g[0]), to_doubles(mul(h, 2.0)), 1e-12));
  EXPECT_FALSE(g[1].defined());
  EXPECT_TRUE(contains(error_message([&] { autograd::grad({loss}, {unused}); }),
                       "grad: input 0 was not used"));
}

TEST(AutogradEngine, HooksSeeAndReplaceGradients) {
  Tensor x = leaf({3});
  Tensor h = mul(x, 3.0);
  std::vector<double> seen;
  autograd::register_hook(h, [&](const Tensor& g) {
    seen = to_doubles(g);
    return mul(g, 10.0);  // replaces the gradient flowing on
  });
  int leaf_calls = 0;
  autograd::register_hook(x, [&](const Tensor&) {
    ++leaf_calls;
    return Tensor();  // keeps it
  });
  autograd::backward(sum(h));
  EXPECT_TRUE(all_close(seen, {1, 1, 1}, 0));
  EXPECT_EQ(leaf_calls, 1);
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {30, 30, 30}, 0));
  Tensor y = mul(leaf({2}), 1.0);
  autograd::register_hook(y, [](const Tensor&) { return zeros({5}, DType::Float64); });
  EXPECT_TRUE(contains(error_message([&] { autograd::backward(sum(y)); }),
                       "register_hook: the hook returned a gradient of shape [5]"));
}

TEST(AutogradEngine, RetainGradKeepsANonLeafGradient) {
  Tensor x = leaf({2});
  Tensor h = mul(x, 2.0);
  autograd::retain_grad(h);
  Tensor k = mul(x, 5.0);  // not retained
  autograd::backward(sum(add(mul(h, h), k)));
  EXPECT_TRUE(all_close(to_doubles(h.grad()), to_doubles(mul(h, 2.0)), 1e-12));
  EXPECT_FALSE(k.grad().defined());
}

TEST(AutogradEngine, DetachAndGradModeStopRecording) {
  Tensor x = leaf({3});
  Tensor d = autograd::detach(x);
  EXPECT_FALSE(d.requires_grad());
  EXPECT_EQ(d.data_ptr(), x.data_ptr());  // shares data
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(mul(x, 2.0).requires_grad());
    EXPECT_FALSE(x.t().requires_grad());
    EnableGradGuard enable;
    EXPECT_TRUE(mul(x, 2.0).requires_grad());
  }
  EXPECT_TRUE(mul(x, 2.0).requires_grad());
  EXPECT_FALSE(mul(d, 2.0).requires_grad());
  EXPECT_EQ(std::string(mul(x, 2.0).grad_fn()->name()), "MulBackward");
  EXPECT_FALSE(gt(x, 0.0).requires_grad());  // bool results carry no gradient
}

TEST(AutogradEngine, GraphAndSavedTensorsAreFreedByBackward) {
  std::weak_ptr<autograd::Node> node;
  Tensor x = leaf({1000});
  {
    Tensor y = mul(x, x);
    node = y.grad_fn();
    autograd::backward(sum(y));
  }
  EXPECT_TRUE(node.expired());  // nothing keeps the graph once its outputs are gone
  EXPECT_EQ(x.grad().numel(), 1000);
}

// Note [The leaf keeps its accumulator]: one accumulator per leaf, across graphs.
TEST(AutogradEngine, ALeafKeepsOneAccumulatorAcrossGraphs) {
  Tensor w = leaf({3});
  std::shared_ptr<autograd::Node> first = mul(w, 2.0).grad_fn()->next_edges()[0].node;
  ASSERT_TRUE(first != nullptr);
  EXPECT_EQ(std::string(first->name()), "AccumulateGrad");
  // The first graph is gone; the next op on w finds the same accumulator.
  EXPECT_EQ(mul(w, 3.0).grad_fn()->next_edges()[0].node, first);
  EXPECT_EQ(add(w, w).grad_fn()->next_edges()[1].node, first);
  autograd::backward(sum(mul(w, 3.0)));
  EXPECT_TRUE(all_close(to_doubles(w.grad()), {3, 3, 3}, 0));
}

// The graph holds a leaf whose handles are all gone: its hooks still run at backward. Nothing
// holds it after that, so the leaf and its accumulator do not keep each other alive.
TEST(AutogradEngine, AGraphKeepsItsLeavesAliveAndNoLonger) {
  Tensor w = leaf({4});
  const std::vector<double> wv = to_doubles(w);
  std::vector<double> seen;
  autograd::register_hook(w, [&](const Tensor& g) {
    seen = to_doubles(g);
    return Tensor();
  });
  const std::weak_ptr<TensorImpl> alive = w.weak_impl();
  std::weak_ptr<autograd::Node> accumulator;
  {
    Tensor loss = sum(mul(w, w));
    accumulator = loss.grad_fn()->next_edges()[0].node->next_edges()[0].node;
    w = Tensor();
    EXPECT_FALSE(alive.expired());  // the graph holds it
    autograd::backward(loss);
  }
  std::vector<double> expected;
  for (double v : wv) expected.push_back(2 * v);
  EXPECT_TRUE(all_close(seen, expected, 1e-12));
  EXPECT_TRUE(alive.expired());
  EXPECT_TRUE(accumulator.expired());
  // The same without backward: dropping the graph and the handle frees both.
  Tensor v = leaf({2});
  const std::weak_ptr<TensorImpl> v_alive = v.weak_impl();
  std::weak_ptr<autograd::Node> v_accumulator = mul(v, 2.0).grad_fn()->next_edges()[0].node;
  EXPECT_FALSE(v_accumulator.expired());  // v keeps it
  v = Tensor();
  EXPECT_TRUE(v_alive.expired());
  EXPECT_TRUE(v_accumulator.expired());
}

// A backward that throws part-way must not leave a gradient in a leaf's accumulator, which
// outlives the graph (Note [The leaf keeps its accumulator]).
TEST(AutogradEngine, AFailedBackwardLeavesNoGradientInTheAccumulator) {
  Tensor w = leaf({3});
  Tensor a = mul(w, 2.0);  // recorded first, so its node runs after b's
  Tensor b = mul(w, 3.0);
  autograd::register_hook(a, [](const Tensor&) -> Tensor { throw ValueError("hook failed"); });
  std::shared_ptr<autograd::Node> accumulator = b.grad_fn()->next_edges()[0].node;
  EXPECT_TRUE(contains(error_message([&] { autograd::backward(sum(add(a, b))); }), "hook failed"));
  EXPECT_FALSE(w.grad().defined());
  for (const Tensor& g : accumulator->pass_state().buffer) EXPECT_FALSE(g.defined());
  // The next backward through the accumulator starts clean.
  autograd::backward(sum(mul(w, 5.0)));
  EXPECT_TRUE(all_close(to_doubles(w.grad()), {5, 5, 5}, 0));
}

TEST(AutogradErrors, BackwardOfATensorThatDoesNotRequireGrad) {
  const Tensor c = ones({2}, DType::Float64);
  EXPECT_THROW(autograd::backward(sum(c)), ValueError);
  EXPECT_TRUE(contains(error_message([&] { autograd::backward(sum(c)); }),
                       "backward: output 0 does not require grad"));
}

TEST(AutogradErrors, SecondBackwardThroughAFreedGraph) {
  Tensor x = leaf({3});
  Tensor y = sum(mul(x, x));
  autograd::backward(y);
  const std::string message = error_message([&] { autograd::backward(y); });
  EXPECT_TRUE(contains(message, "MulBackward a second time")) << message;
  EXPECT_TRUE(contains(message, "retain_graph")) << message;
  // With retain_graph the second backward works and accumulates.
  Tensor z = sum(mul(x, x));
  x.set_grad(Tensor());
  autograd::backward(z, Tensor(), true);
  autograd::backward(z);
  std::vector<double> expected;
  for (double v : to_doubles(x)) expected.push_back(4 * v);
  EXPECT_TRUE(all_close(to_doubles(x.grad()), expected, 1e-12));
}

TEST(AutogradErrors, InPlaceChangeOfASavedTensor) {
  Tensor x = leaf({3});
  Tensor h = mul(x, 2.0);
  Tensor y = mul(h, h);  // saves h
  {
    NoGradGuard no_grad;
    add_(h, ones({3}, DType::Float64));
  }
  const std::string message = error_message([&] { autograd::backward(sum(y)); });
  EXPECT_TRUE(contains(message, "modified by an in-place operation")) << message;
  EXPECT_TRUE(contains(message, "MulBackward")) << message;
}

TEST(AutogradErrors, GradOutputOfTheWrongShape) {
  Tensor y = mul(leaf({2, 3}), 2.0);
  const std::string message = error_message([&] {
    autograd::backward(y, ones({3, 2}, DType::Float64));
  });
  EXPECT_TRUE(contains(message,
                       "backward: grad_output 0 has shape [3, 2] but the output has "
                       "shape [2, 3]"))
      << message;
  EXPECT_TRUE(
      contains(error_message([&] { autograd::backward(y); }), "only for one-element outputs"));
}

TEST(AutogradErrors, InPlaceOnALeafAndRequiresGradOnIntegers) {
  Tensor x = leaf({3});
  EXPECT_TRUE(contains(error_message([&] { add_(x, ones({3}, DType::Float64)); }),
                       "add_: a leaf tensor that requires grad"));
  {
    NoGradGuard no_grad;  // how optimizers update parameters
    EXPECT_NO_THROW(add_(x, ones({3}, DType::Float64)));
  }
  EXPECT_TRUE(contains(error_message([] { ones({2}, DType::Int64).requires_grad_(); }),
                       "only floating point tensors can require gradients"));
  Tensor h = mul(x, 1.0);
  EXPECT_THROW(h.requires_grad_(false), ValueError);
  // Random fills are in-place writes too: refused on the leaf, recorded (no gradient flows
  // back through the overwritten values) on a non-leaf.
  EXPECT_TRUE(contains(error_message([&] { uniform_(x); }), "uniform_: a leaf tensor"));
  EXPECT_TRUE(contains(error_message([&] { normal_(x); }), "normal_: a leaf tensor"));
  Tensor k = mul(x, 2.0);
  normal_(k);
  autograd::backward(sum(mul(k, x)));  // x's gradient is k's new values only
  EXPECT_TRUE(all_close(to_doubles(x.grad()), to_doubles(k), 1e-12));
}

TEST(AutogradInPlace, AddAndMulInPlaceRecord) {
  EXPECT_TRUE(gradcheck(
      [](const TensorList& x) {
        Tensor h = mul(x[0], 1.0);
        add_(h, x[1], 2.0);
        mul_(h, x[1]);
        return h;
      },
      {leaf({3, 4}), leaf({4})}));
  EXPECT_TRUE(gradcheck(
      [](const TensorList& x) {
        Tensor h = zeros({2, 3}, DType::Float64);
        copy_(h, x[0]);  // broadcast source
        return mul(h, h);
      },
      {leaf({3})}));
  Tensor base = mul(leaf({4}), 1.0);
  EXPECT_TRUE(contains(error_message([&] { add_(base.slice(0, 0, 2), leaf({2})); }),
                       "add_: in-place changes of a view are not recorded"));
}

}  // namespace
}  // namespace rcuda::test
