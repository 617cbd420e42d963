// The engine's post-accumulate hooks and end-of-backward callbacks (rcuda/autograd.h): when they
// run, what they see, removal, errors, and passes nested inside a hook.
#include <string>
#include <vector>

#include "autograd/gradcheck.h"

namespace rcuda::test {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::vector<double> times(const std::vector<double>& v, double k) {
  std::vector<double> out;
  out.reserve(v.size());
  for (double x : v) out.push_back(x * k);
  return out;
}

TEST(PostAccumulateGradHook, SeesTheAccumulatedGradAfterTheGradHooks) {
  Tensor w = leaf({3});
  const std::vector<double> wv = to_doubles(w);
  std::vector<std::string> order;
  std::vector<std::vector<double>> seen;
  // A grad hook doubles the incoming gradient; the post-accumulate hook sees the result in grad.
  autograd::register_hook(w, [&](const Tensor& g) {
    order.push_back("grad hook");
    return mul(g, 2.0);
  });
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor& leaf) {
    order.push_back("post hook");
    EXPECT_TRUE(leaf.is_same(w));
    seen.push_back(to_doubles(leaf.grad()));
  });
  autograd::backward(sum(mul(w, w)));  // grad 2 w, doubled: 4 w
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(all_close(seen[0], times(wv, 4), 1e-12));
  EXPECT_EQ(order, (std::vector<std::string>{"grad hook", "post hook"}));
  // A second pass accumulates first: the hook sees the sum of both passes.
  autograd::backward(sum(mul(w, 3.0)));  // grad 3, doubled: 6
  ASSERT_EQ(seen.size(), 2u);
  std::vector<double> expected = times(wv, 4);
  for (double& v : expected) v += 6;
  EXPECT_TRUE(all_close(seen[1], expected, 1e-12));
}

TEST(PostAccumulateGradHook, SeveralHooksRunInOrderAndRemovalStopsOne) {
  Tensor w = leaf({2});
  std::vector<int> calls;
  const int64_t a =
      autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { calls.push_back(1); });
  const int64_t b =
      autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { calls.push_back(2); });
  EXPECT_NE(a, b);
  autograd::backward(sum(w));
  EXPECT_EQ(calls, (std::vector<int>{1, 2}));
  autograd::remove_post_accumulate_grad_hook(w, a);
  autograd::remove_post_accumulate_grad_hook(w, a);  // removed twice: ignored
  autograd::backward(sum(w));
  EXPECT_EQ(calls, (std::vector<int>{1, 2, 2}));
  autograd::remove_post_accumulate_grad_hook(w, b);
  autograd::backward(sum(w));
  EXPECT_EQ(calls, (std::vector<int>{1, 2, 2}));
  EXPECT_TRUE(all_close(to_doubles(w.grad()), {3, 3}, 0));
}

TEST(PostAccumulateGradHook, NotCalledForLeavesThePassDoesNotReach) {
  Tensor used = leaf({2}), unused = leaf({2});
  int used_calls = 0, unused_calls = 0;
  autograd::register_post_accumulate_grad_hook(used, [&](const Tensor&) { ++used_calls; });
  autograd::register_post_accumulate_grad_hook(unused, [&](const Tensor&) { ++unused_calls; });
  Tensor other = mul(unused, 2.0);  // records unused, but the loss does not use it
  autograd::backward(sum(mul(used, 2.0)));
  EXPECT_EQ(used_calls, 1);
  EXPECT_EQ(unused_calls, 0);
  // grad() accumulates nothing, so no post-accumulate hook runs.
  autograd::grad({sum(mul(used, used))}, {used});
  EXPECT_EQ(used_calls, 1);
}

TEST(PostAccumulateGradHook, RefusesTensorsThatAreNotLeavesRequiringGrad) {
  const auto noop = [](const Tensor&) {};
  EXPECT_TRUE(contains(error_message([&] {
                         autograd::register_post_accumulate_grad_hook(ones({2}, DType::Float64),
                                                                      noop);
                       }),
                       "register_post_accumulate_grad_hook: the tensor must be a leaf"));
  const Tensor h = mul(leaf({2}), 2.0);
  EXPECT_TRUE(contains(
      error_message([&] { autograd::register_post_accumulate_grad_hook(h, noop); }), "not a leaf"));
}

TEST(PostAccumulateGradHook, ADeadLeafsHooksGoWithIt) {
  // A new leaf, possibly at the freed leaf's address, does not inherit its hooks.
  int calls = 0;
  for (int i = 0; i < 50; ++i) {
    Tensor w = leaf({2});
    if (i == 0) autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { ++calls; });
    autograd::backward(sum(w));
  }
  EXPECT_EQ(calls, 1);
}

TEST(QueueCallback, RunsAfterEveryNodeInTheOrderQueued) {
  Tensor a = leaf({2}), b = leaf({2});
  std::vector<std::string> events;
  autograd::register_post_accumulate_grad_hook(a, [&](const Tensor&) {
    events.push_back("a accumulated");
    autograd::queue_callback([&] {
      events.push_back("first");
      // Every leaf has its gradient by now.
      EXPECT_TRUE(a.grad().defined());
      EXPECT_TRUE(b.grad().defined());
    });
    autograd::queue_callback([&] {
      events.push_back("second");
      autograd::queue_callback([&] { events.push_back("queued by a callback"); });
    });
  });
  autograd::register_post_accumulate_grad_hook(
      b, [&](const Tensor&) { events.push_back("b accumulated"); });
  Tensor pb = mul(b, 3.0);
  Tensor pa = mul(a, 2.0);
  autograd::backward(add(sum(pa), sum(pb)));
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[2], "first");
  EXPECT_EQ(events[3], "second");
  EXPECT_EQ(events[4], "queued by a callback");
  // Callbacks belong to one pass: the next runs none of them.
  events.clear();
  autograd::backward(sum(b));
  EXPECT_EQ(events, (std::vector<std::string>{"b accumulated"}));
}

TEST(QueueCallback, OutsideABackwardPassIsAnError) {
  const std::string message = error_message([] { autograd::queue_callback([] {}); });
  EXPECT_TRUE(contains(message, "queue_callback: no backward pass is running")) << message;
  // Nor after a pass has ended.
  Tensor w = leaf({2});
  autograd::backward(sum(w));
  EXPECT_THROW(autograd::queue_callback([] {}), ValueError);
}

TEST(QueueCallback, AnExceptionEndsBackwardAndDropsTheRest) {
  Tensor w = leaf({2});
  int later = 0;
  const int64_t id = autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) {
    autograd::queue_callback([] { throw ValueError("callback failed"); });
    autograd::queue_callback([&] { ++later; });
  });
  EXPECT_TRUE(contains(error_message([&] { autograd::backward(sum(w)); }), "callback failed"));
  EXPECT_EQ(later, 0);
  EXPECT_TRUE(all_close(to_doubles(w.grad()), {1, 1}, 0));  // the nodes had all run
  // The pass is closed: no callback list is left open on this thread.
  EXPECT_THROW(autograd::queue_callback([] {}), ValueError);
  autograd::remove_post_accumulate_grad_hook(w, id);
  autograd::backward(sum(w));
  EXPECT_EQ(later, 0);
  EXPECT_TRUE(all_close(to_doubles(w.grad()), {2, 2}, 0));
}

TEST(QueueCallback, ANestedPassKeepsItsOwnCallbacks) {
  Tensor w = leaf({2}), x = leaf({3});
  std::vector<std::string> events;
  std::vector<double> inner_grad;
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) {
    autograd::queue_callback([&] { events.push_back("outer callback"); });
    {
      // A pass of its own inside the hook, on another graph.
      EnableGradGuard grad_on;
      Tensor y = sum(mul(x, x));
      // x's grad hook queues into this pass's list, not the outer one.
      const autograd::TensorList g = autograd::grad({y}, {x});
      inner_grad = to_doubles(g[0]);
    }
    events.push_back("inner pass done");
  });
  autograd::register_hook(x, [&](const Tensor& g) {
    autograd::queue_callback([&] { events.push_back("inner callback"); });
    return g;
  });
  autograd::backward(sum(w));
  EXPECT_EQ(events,
            (std::vector<std::string>{"inner callback", "inner pass done", "outer callback"}));
  EXPECT_TRUE(all_close(inner_grad, times(to_doubles(x), 2), 1e-12));
}

}  // namespace
}  // namespace rcuda::test
