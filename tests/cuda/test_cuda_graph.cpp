// CUDA graphs (rcuda/backend/cuda_graph.h, docs/cuda-graphs.md): replays against eager runs of
// the same code, bitwise where the kernels are the same (random draws and optimizer steps
// included), and the errors a capture raises for what it cannot hold.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rcuda/backend/cuda_graph.h"
#include "rcuda/optim/adam.h"
#include "support/devices.h"

namespace rcuda {
namespace {

using test::kCpu;
using test::kCuda;
using test::on_cuda;
using test::random_tensor;
using test::values;

TEST(CudaGraph, ReplayRunsTheCapturedOpsOnNewInputs) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = on_cuda(random_tensor({64, 32}, DType::Float32));
  Tensor y;
  cuda::Graph graph;
  EXPECT_FALSE(graph.captured());
  cuda::capture(graph, [&] { y = relu(add(mul(x, 2.0), sum(x, {0}))); });
  EXPECT_TRUE(graph.captured());
  EXPECT_FALSE(cuda::is_capturing(0));
  for (int replay = 0; replay < 3; ++replay) {
    const Tensor fresh = random_tensor({64, 32}, DType::Float32);
    copy_(x, on_cuda(fresh));
    graph.replay();
    const Tensor expected = relu(add(mul(fresh, 2.0), sum(fresh, {0})));
    EXPECT_TRUE(test::all_close(values(y), values(expected), 1e-5)) << "replay " << replay;
  }
  graph.reset();
  EXPECT_FALSE(graph.captured());
  EXPECT_THROW(graph.replay(), ValueError);
}

TEST(CudaGraph, RandomOpsDrawWhatEagerCallsWouldAtEachReplay) {
  RCUDA_REQUIRE_CUDA();
  manual_seed(3);
  const Tensor first = rand({1000}, TensorOptions(DType::Float32, kCuda));
  const Tensor second = randn({1000}, TensorOptions(DType::Float32, kCuda));
  const Tensor third = rand({1000}, TensorOptions(DType::Float32, kCuda));
  manual_seed(3);
  Tensor u, n;
  cuda::Graph graph;
  cuda::capture(graph, [&] {
    u = rand({1000}, TensorOptions(DType::Float32, kCuda));
    n = randn({1000}, TensorOptions(DType::Float32, kCuda));
  });
  // Capturing draws nothing: the first replay takes the generator's next two steps.
  graph.replay();
  EXPECT_EQ(values(u), values(first));
  EXPECT_EQ(values(n), values(second));
  graph.replay();
  EXPECT_EQ(values(u), values(third));
}

// A small classifier with dropout, trained by Adam.
struct Mlp {
  Tensor w1, b1, w2, b2, w3, b3;
  explicit Mlp(uint64_t seed) {
    manual_seed(seed);
    const auto param = [](const Shape& s) {
      Tensor p = on_cuda(mul(randn(s), 0.2));
      p.requires_grad_();
      return p;
    };
    w1 = param({64, 32});
    b1 = param({64});
    w2 = param({64, 64});
    b2 = param({64});
    w3 = param({10, 64});
    b3 = param({10});
  }
  std::vector<Tensor> parameters() const { return {w1, b1, w2, b2, w3, b3}; }
  Tensor loss(const Tensor& x, const Tensor& y) const {
    Tensor h = nn::dropout(relu(nn::linear(x, w1, b1)), 0.3);
    h = relu(nn::linear(h, w2, b2));
    return nn::cross_entropy(nn::linear(h, w3, b3), y);
  }
};

TEST(CudaGraph, TrainingStepReplaysMatchEagerStepsBitwise) {
  RCUDA_REQUIRE_CUDA();
  constexpr int kWarmup = 2, kSteps = 100, kBatches = 5;
  std::vector<Tensor> xs, ys;
  for (int b = 0; b < kBatches; ++b) {
    xs.push_back(on_cuda(random_tensor({128, 32}, DType::Float32)));
    ys.push_back(on_cuda(randint(0, 10, {128})));
  }
  optim::AdamOptions options;
  options.lr = 2e-3;
  const auto eager_step = [](const Mlp& m, optim::Adam& opt, const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    Tensor loss = m.loss(x, y);
    autograd::backward(loss);
    opt.step();
    return loss;
  };

  Mlp eager(11);
  optim::Adam eager_opt(eager.parameters(), options);
  manual_seed(5);
  std::vector<Tensor> eager_losses;
  for (int s = 0; s < kWarmup + kSteps; ++s) {
    if (s == kWarmup + kSteps / 2) eager_opt.param_groups()[0].options["lr"] = 5e-4;
    eager_losses.push_back(
        autograd::detach(eager_step(eager, eager_opt, xs[s % kBatches], ys[s % kBatches])));
  }

  Mlp graphed(11);
  optim::Adam graphed_opt(graphed.parameters(), options);
  manual_seed(5);
  for (int s = 0; s < kWarmup; ++s) eager_step(graphed, graphed_opt, xs[s], ys[s]);
  const Tensor x = clone(xs[0]), y = clone(ys[0]);
  graphed_opt.zero_grad();
  Tensor loss;
  cuda::Graph graph;
  cuda::capture(graph, [&] {
    loss = graphed.loss(x, y);
    autograd::backward(loss);
    graphed_opt.step();
  });
  // Capturing stepped nothing.
  EXPECT_EQ(graphed_opt.state(graphed.w1)->step, kWarmup);
  for (int s = kWarmup; s < kWarmup + kSteps; ++s) {
    if (s == kWarmup + kSteps / 2) graphed_opt.param_groups()[0].options["lr"] = 5e-4;
    copy_(x, xs[s % kBatches]);
    copy_(y, ys[s % kBatches]);
    graph.replay();
    EXPECT_EQ(values(loss), values(eager_losses[s])) << "step " << s;
  }
  EXPECT_EQ(graphed_opt.state(graphed.w1)->step, kWarmup + kSteps);
  const std::vector<Tensor> a = eager.parameters(), b = graphed.parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(values(a[i]), values(b[i])) << "parameter " << i;
    EXPECT_EQ(values(a[i].grad()), values(b[i].grad())) << "gradient " << i;
  }
}

TEST(CudaGraph, UnsafeOpsRaiseAndTheProcessStaysUsable) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = on_cuda(random_tensor({16}, DType::Float32));
  const auto expect_refused = [&](const std::function<void()>& body, const std::string& op) {
    cuda::Graph graph;
    try {
      cuda::capture(graph, body);
      ADD_FAILURE() << op << ": expected CudaError";
    } catch (const CudaError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(op), std::string::npos) << what;
      EXPECT_NE(what.find("captures a CUDA graph"), std::string::npos) << what;
    }
    EXPECT_FALSE(cuda::is_capturing(0));
    EXPECT_FALSE(graph.captured());
    // The same graph captures again after the failed attempt.
    Tensor z;
    cuda::capture(graph, [&] { z = mul(x, 3.0); });
    graph.replay();
    EXPECT_TRUE(test::all_close(values(z), values(mul(to(x, kCpu), 3.0)), 1e-6)) << op;
  };
  expect_refused([&] { values(add(x, 1.0)); }, "copy to the host");
  expect_refused([&] { cuda::synchronize(0); }, "cuda_synchronize");
  expect_refused([&] { add(x, on_cuda(random_tensor({16}, DType::Float32))); },
                 "copy from the host");
  expect_refused([&] { nonzero(x); }, "nonzero");
  // Eager work goes on.
  EXPECT_TRUE(test::all_close(values(add(x, 1.0)), values(add(to(x, kCpu), 1.0)), 1e-6));
}

TEST(CudaGraph, OptimizerStateMustExistBeforeTheCapture) {
  RCUDA_REQUIRE_CUDA();
  Tensor w = on_cuda(random_tensor({4, 3}, DType::Float32));
  w.requires_grad_();
  const Tensor x = on_cuda(random_tensor({5, 3}, DType::Float32));
  optim::Adam opt({w}, optim::AdamOptions{});
  cuda::Graph graph;
  try {
    cuda::capture(graph, [&] {
      autograd::backward(sum(nn::linear(x, w, Tensor())));
      opt.step();
    });
    ADD_FAILURE() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("run one step before capturing"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(cuda::is_capturing(0));
  EXPECT_TRUE(opt.state(w) == nullptr || opt.state(w)->step == 0);
}

TEST(CudaGraph, BadIndicesInAReplayAreRaisedAtTheNextSynchronisation) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = on_cuda(random_tensor({6, 4}, DType::Float32));
  const Tensor index = on_cuda(test::tensor_of({0, 5}, {2}, DType::Int64));
  Tensor picked;
  cuda::Graph graph;
  cuda::capture(graph, [&] { picked = index_select(x, 0, index); });
  graph.replay();
  EXPECT_NO_THROW(cuda::synchronize(0));
  copy_(index, on_cuda(test::tensor_of({0, 6}, {2}, DType::Int64)));
  graph.replay();
  try {
    cuda::synchronize(0);
    ADD_FAILURE() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("index_select: index 6"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(cuda::synchronize(0));
}

}  // namespace
}  // namespace rcuda
