// Gradients of the pools and norms against float64 central differences (gradcheck), for every
// pool and norm, with contiguous, channels-last and strided inputs; max pools over distinct
// values so that each window's maximum, and so the gradient, is defined.
#include <algorithm>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "ops/layer_test_util.h"
#include "rcuda/autograd.h"

namespace rcuda::test {
namespace {

// A float64 leaf of distinct values (a shuffled ramp with gaps far above gradcheck's step).
Tensor distinct_leaf(const Shape& shape, Layout layout) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = -2 + 0.05 * static_cast<double>(i);
  std::shuffle(v.begin(), v.end(), rng());
  Tensor t = in_layout(tensor_of(v, shape, DType::Float64), layout);
  t.requires_grad_();
  return t;
}

Tensor random_leaf(const Shape& shape, Layout layout, double low = -2, double high = 2) {
  Tensor t = in_layout(random_tensor(shape, DType::Float64, low, high), layout);
  t.requires_grad_();
  return t;
}

TEST(GradPool, MaxPools) {
  for (Layout layout : all_layouts()) {
    SCOPED_TRACE(layout_name(layout));
    EXPECT_TRUE(gradcheck([](const TensorList& x) { return max_pool2d(x[0], {3}, {2}, {1}); },
                          {distinct_leaf({2, 3, 7, 6}, layout)}));
    EXPECT_TRUE(gradcheck(
        [](const TensorList& x) {
          return max_pool2d(x[0], {2, 3}, {1, 2}, {1, 1}, {2, 1}, true);
        },
        {distinct_leaf({1, 2, 6, 7}, layout)}));
    EXPECT_TRUE(gradcheck([](const TensorList& x) { return max_pool1d(x[0], 3, 2, 1, 1, true); },
                          {distinct_leaf({2, 3, 9}, layout)}));
    EXPECT_TRUE(gradcheck(
        [](const TensorList& x) {
          return adaptive_max_pool2d(x[0], {3, 2}).first;
        },
        {distinct_leaf({2, 2, 7, 5}, layout)}));
  }
  // Overlapping windows (stride 1) send several gradients to one maximum; no batch dim.
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return max_pool2d(x[0], {3}, {1}); },
                        {distinct_leaf({2, 5, 5}, Layout::Contiguous)}));
}

TEST(GradPool, AveragePools) {
  for (Layout layout : all_layouts()) {
    SCOPED_TRACE(layout_name(layout));
    EXPECT_TRUE(gradcheck([](const TensorList& x) { return avg_pool2d(x[0], {3}, {2}, {1}); },
                          {random_leaf({2, 3, 7, 6}, layout)}));
    EXPECT_TRUE(gradcheck(
        [](const TensorList& x) {
          return avg_pool2d(x[0], {3, 2}, {2, 1}, {1, 1}, true, false);
        },
        {random_leaf({1, 2, 6, 5}, layout)}));
    EXPECT_TRUE(gradcheck(
        [](const TensorList& x) { return avg_pool2d(x[0], {2}, {2}, {0}, true, true, 3); },
        {random_leaf({2, 2, 5, 5}, layout)}));
    EXPECT_TRUE(gradcheck([](const TensorList& x) { return avg_pool1d(x[0], 4, 3, 2, true); },
                          {random_leaf({2, 3, 10}, layout)}));
    EXPECT_TRUE(gradcheck(
        [](const TensorList& x) {
          return adaptive_avg_pool2d(x[0], {3, 4});
        },
        {random_leaf({2, 2, 7, 5}, layout)}));
  }
}

TEST(GradPool, IndicesCarryNoGradient) {
  const Tensor x = distinct_leaf({1, 2, 4, 4}, Layout::Contiguous);
  const auto [out, indices] = max_pool2d_with_indices(x, {2});
  EXPECT_TRUE(out.requires_grad());
  EXPECT_FALSE(indices.requires_grad());
  EXPECT_EQ(std::string(out.grad_fn()->name()), "MaxPool2DWithIndicesBackward");
}

TEST(GradNorm, BatchNorm) {
  for (Layout layout : all_layouts()) {
    for (bool training : {true, false}) {
      SCOPED_TRACE(std::string(layout_name(layout)) + (training ? " training" : " eval"));
      const Tensor rm = random_tensor({3}, DType::Float64),
                   rv = random_tensor({3}, DType::Float64, 0.5, 2);
      EXPECT_TRUE(gradcheck(
          [&](const TensorList& x) {
            return batch_norm(x[0], rm, rv, x[1], x[2], training, 0.1, 1e-3);
          },
          {random_leaf({4, 3, 3, 2}, layout), random_leaf({3}, Layout::Contiguous),
           random_leaf({3}, Layout::Contiguous)}));
      EXPECT_TRUE(gradcheck(
          [&](const TensorList& x) {
            return batch_norm(x[0], rm, rv, Tensor(), Tensor(), training);
          },
          {random_leaf({5, 3, 4}, layout)}));
    }
  }
  // (N, C) input, no running statistics.
  EXPECT_TRUE(gradcheck(
      [](const TensorList& x) {
        return batch_norm(x[0], Tensor(), Tensor(), x[1], Tensor(), true);
      },
      {random_leaf({6, 4}, Layout::Contiguous), random_leaf({4}, Layout::Contiguous)}));
}

TEST(GradNorm, GroupNorm) {
  for (Layout layout : all_layouts()) {
    SCOPED_TRACE(layout_name(layout));
    EXPECT_TRUE(gradcheck([](const TensorList& x) { return group_norm(x[0], 2, x[1], x[2], 1e-3); },
                          {random_leaf({3, 6, 2, 3}, layout), random_leaf({6}, Layout::Contiguous),
                           random_leaf({6}, Layout::Contiguous)}));
    EXPECT_TRUE(gradcheck([](const TensorList& x) { return group_norm(x[0], 1); },
                          {random_leaf({2, 4, 5}, layout)}));
  }
}

TEST(GradNorm, InstanceNorm) {
  for (Layout layout : all_layouts()) {
    SCOPED_TRACE(layout_name(layout));
    const Tensor rm = random_tensor({3}, DType::Float64),
                 rv = random_tensor({3}, DType::Float64, 0.5, 2);
    EXPECT_TRUE(gradcheck(
        [&](const TensorList& x) { return instance_norm(x[0], rm, rv, x[1], x[2], true); },
        {random_leaf({2, 3, 3, 3}, layout), random_leaf({3}, Layout::Contiguous),
         random_leaf({3}, Layout::Contiguous)}));
    EXPECT_TRUE(gradcheck(
        [&](const TensorList& x) { return instance_norm(x[0], rm, rv, x[1], x[2], false); },
        {random_leaf({2, 3, 4}, layout), random_leaf({3}, Layout::Contiguous),
         random_leaf({3}, Layout::Contiguous)}));
  }
}

// Saved statistics are version-checked: changing the running mean in place between an
// evaluation forward (which normalised with it) and its backward is refused.
TEST(GradNorm, EvaluationStatisticsAreVersionChecked) {
  const Tensor x = random_leaf({4, 3, 2}, Layout::Contiguous);
  const Tensor rm = random_tensor({3}, DType::Float64),
               rv = random_tensor({3}, DType::Float64, 0.5, 2);
  const Tensor y = batch_norm(x, rm, rv, Tensor(), Tensor(), false);
  fill_(rm, 0.5);
  EXPECT_THROW(autograd::backward({sum(y)}), ValueError);
}

}  // namespace
}  // namespace rcuda::test
