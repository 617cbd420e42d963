// rcuda::nn's pools and norms: the same values as the ops they record over (themselves checked
// against double loops in tests/ops/test_pool.cpp and test_norm.cpp), the recorded nodes and
// their gradients (gradcheck), weights of a third dtype cast with their gradient flowing back,
// running statistics updated through the nn call, and a few steps of a small model whose loss
// falls.
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "ops/layer_test_util.h"
#include "rcuda/autograd.h"
#include "rcuda/nn/functional.h"

namespace rcuda::test {
namespace {

TEST(NnPool, MatchOpsAndRecord) {
  const Tensor x = random_tensor({2, 3, 8, 7}, DType::Float32);
  x.requires_grad_();
  const Tensor y = nn::max_pool2d(x, {3}, {2}, {1});
  EXPECT_TRUE(all_close(to_doubles(y), to_doubles(ops::max_pool2d(x, {3}, {2}, {1})), 0));
  EXPECT_EQ(std::string(y.grad_fn()->name()), "MaxPool2DWithIndicesBackward");
  const auto [values, indices] = nn::max_pool2d_with_indices(x, {2});
  EXPECT_TRUE(
      all_close(to_doubles(indices), to_doubles(ops::max_pool2d_with_indices(x, {2}).indices), 0));
  EXPECT_TRUE(all_close(to_doubles(nn::avg_pool2d(x, {2}, {1}, {1}, false, false)),
                        to_doubles(ops::avg_pool2d(x, {2}, {1}, {1}, false, false)), 0));
  EXPECT_EQ(std::string(nn::adaptive_avg_pool2d(x, {1}).grad_fn()->name()),
            "AdaptiveAvgPool2DBackward");
  const Tensor a = nn::adaptive_max_pool2d(x, {2, 3});
  EXPECT_TRUE(all_close(to_doubles(a), to_doubles(ops::adaptive_max_pool2d(x, {2, 3}).out), 0));
  const Tensor x1 = random_tensor({2, 3, 9}, DType::Float32);
  EXPECT_TRUE(all_close(to_doubles(nn::max_pool1d(x1, 3)), to_doubles(ops::max_pool1d(x1, 3)), 0));
  EXPECT_TRUE(all_close(to_doubles(nn::avg_pool1d(x1, 3, 1, 1)),
                        to_doubles(ops::avg_pool1d(x1, 3, 1, 1)), 0));
  EXPECT_TRUE(all_close(to_doubles(nn::max_pool1d_with_indices(x1, 2).second),
                        to_doubles(ops::max_pool1d_with_indices(x1, 2).indices), 0));
  {
    NoGradGuard no_grad;  // nothing records under no_grad
    EXPECT_FALSE(nn::max_pool2d(x, {2}).requires_grad());
  }
}

TEST(NnNorm, MatchOpsAndUpdateRunningStats) {
  const Tensor x = random_tensor({4, 3, 5}, DType::Float32);
  const Tensor w = random_tensor({3}, DType::Float32), b = random_tensor({3}, DType::Float32);
  const Tensor rm = ops::zeros({3}, {DType::Float32}), rv = ops::ones({3}, {DType::Float32});
  const Tensor rm2 = ops::zeros({3}, {DType::Float32}), rv2 = ops::ones({3}, {DType::Float32});
  const Tensor y = nn::batch_norm(x, rm, rv, w, b, true, 0.2);
  const Tensor expected = ops::batch_norm(x, rm2, rv2, w, b, true, 0.2);
  EXPECT_TRUE(all_close(to_doubles(y), to_doubles(expected), 0));
  EXPECT_TRUE(all_close(to_doubles(rm), to_doubles(rm2), 0));
  EXPECT_TRUE(all_close(to_doubles(rv), to_doubles(rv2), 0));
  EXPECT_TRUE(all_close(to_doubles(nn::group_norm(x, 3, w, b)),
                        to_doubles(ops::group_norm(x, 3, w, b)), 0));
  EXPECT_TRUE(all_close(to_doubles(nn::instance_norm(x, Tensor(), Tensor(), w, b)),
                        to_doubles(ops::instance_norm(x, Tensor(), Tensor(), w, b)), 0));
  EXPECT_THROW(nn::batch_norm(random_tensor({1, 3}, DType::Float32), rm, rv, w, b, true),
               ValueError);
}

// A float64 weight and bias for a float32 input are cast (recorded), and their gradients come
// back in float64, equal to those of the float32 parameters.
TEST(NnNorm, ParametersOfAnotherDtype) {
  const Tensor x = random_tensor({3, 4, 2, 2}, DType::Float32);
  const Tensor w64 = random_tensor({4}, DType::Float64), b64 = random_tensor({4}, DType::Float64);
  w64.requires_grad_();
  b64.requires_grad_();
  const Tensor w32 = to(w64.alias(), DType::Float32), b32 = to(b64.alias(), DType::Float32);
  w32.requires_grad_();
  b32.requires_grad_();
  autograd::backward(sum(mul(nn::group_norm(x, 2, w64, b64), x)));
  autograd::backward(sum(mul(nn::group_norm(x, 2, w32, b32), x)));
  ASSERT_TRUE(w64.grad().defined());
  EXPECT_EQ(w64.grad().dtype(), DType::Float64);
  EXPECT_TRUE(all_close(to_doubles(w64.grad()), to_doubles(w32.grad()), 1e-6));
  EXPECT_TRUE(all_close(to_doubles(b64.grad()), to_doubles(b32.grad()), 1e-6));
}

TEST(NnNorm, GradientsThroughNn) {
  const Tensor rm = random_tensor({3}, DType::Float64),
               rv = random_tensor({3}, DType::Float64, 0.5, 2);
  EXPECT_TRUE(
      gradcheck([&](const TensorList& v) { return nn::batch_norm(v[0], rm, rv, v[1], v[2], true); },
                {leaf({4, 3, 2}), leaf({3}), leaf({3})}));
  EXPECT_TRUE(gradcheck([](const TensorList& v) { return nn::group_norm(v[0], 3, v[1], v[2]); },
                        {leaf({2, 6, 3}), leaf({6}), leaf({6})}));
  EXPECT_TRUE(gradcheck([](const TensorList& v) { return nn::avg_pool2d(nn::relu(v[0]), {2}); },
                        {leaf({2, 2, 4, 4})}));
}

// conv-free small model: batch_norm -> relu -> max_pool -> mean, with SGD by hand on the
// norm's weight and bias; the loss (distance to a target) must fall.
TEST(NnNorm, SmallModelTrains) {
  const Tensor x = random_tensor({8, 2, 6, 6}, DType::Float32);
  const Tensor target = random_tensor({8, 2, 3, 3}, DType::Float32, 0, 1);
  Tensor w = ops::ones({2}, {DType::Float32}), b = ops::zeros({2}, {DType::Float32});
  const Tensor rm = ops::zeros({2}, {DType::Float32}), rv = ops::ones({2}, {DType::Float32});
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    w.requires_grad_();
    b.requires_grad_();
    const Tensor out = nn::max_pool2d(nn::relu(nn::batch_norm(x, rm, rv, w, b, true)), {2});
    const Tensor loss = mean(mul(sub(out, target), sub(out, target)));
    const double value = item(loss).to_double();
    if (step == 0) first = value;
    last = value;
    autograd::backward(loss);
    NoGradGuard no_grad;
    w = ops::sub(w, ops::mul(w.grad(), 0.5));
    b = ops::sub(b, ops::mul(b.grad(), 0.5));
  }
  EXPECT_LT(last, 0.8 * first);
}

}  // namespace
}  // namespace rcuda::test
