// Gradient of index_put_ against float64 central differences (tests/autograd/gradcheck.h): self
// keeps the gradient outside the written positions (all of it with accumulate), values get it at
// the positions they went to, summed over their broadcast and over duplicates.
#include "autograd/gradcheck.h"

namespace rcuda::test {
namespace {

Tensor longs(const std::vector<double>& v, const Shape& shape) {
  return tensor_of(v, shape, DType::Int64);
}
Tensor longs(const std::vector<double>& v) { return longs(v, {static_cast<int64_t>(v.size())}); }

// f(self, values) = index_put_(clone(self), indices, values): the clone keeps the leaf intact.
std::function<Tensor(const TensorList&)> put(IndexList indices, bool accumulate = false) {
  return [indices, accumulate](const TensorList& x) {
    const Tensor self = clone(x[0]);
    index_put_(self, indices, x[1], accumulate);
    return self;
  };
}

TEST(GradIndexPut, SelfAndValues) {
  // Distinct positions (negative ones included): without accumulate a repeated position's
  // winner is unspecified, which has no derivative.
  EXPECT_TRUE(gradcheck(put({longs({3, -5, 1})}), {leaf({5, 4}), leaf({3, 4})}));
  EXPECT_TRUE(gradcheck(put({longs({3, -5, 1})}), {leaf({5, 4}), leaf({4})}));  // a row, broadcast
  EXPECT_TRUE(gradcheck(put({longs({0, 2})}), {leaf({3, 2}), leaf({})}));       // one number
  // Pairs, an outer product, a whole dim between two indices, a 2-d index.
  EXPECT_TRUE(gradcheck(put({longs({0, 2, 1}), longs({3, 0, 3})}), {leaf({3, 4}), leaf({3})}));
  EXPECT_TRUE(gradcheck(put({longs({2, 0}, {2, 1}), longs({1, 3, 0}, {1, 3})}),
                        {leaf({3, 4}), leaf({2, 1})}));
  EXPECT_TRUE(gradcheck(put({longs({1, 0}), std::nullopt, longs({2, 2})}),
                        {leaf({2, 3, 4}), leaf({2, 3})}));
  EXPECT_TRUE(
      gradcheck(put({std::nullopt, longs({1, 0, 2, 3}, {2, 2})}), {leaf({2, 4}), leaf({2, 2, 2})}));
  // Non-contiguous self and values.
  EXPECT_TRUE(gradcheck(put({longs({1, 3})}), {leaf_transposed({4, 3}), leaf_transposed({2, 3})}));
}

TEST(GradIndexPut, Masks) {
  const Tensor mask = tensor_of({1, 0, 1, 1, 0, 0}, {2, 3}, DType::Bool);
  EXPECT_TRUE(gradcheck(put({mask}), {leaf({2, 3}), leaf({3})}));
  EXPECT_TRUE(gradcheck(put({mask}), {leaf({2, 3, 2}), leaf({1, 2})}));  // leading dims
  EXPECT_TRUE(gradcheck(put({std::nullopt, tensor_of({0, 1, 1}, {3}, DType::Bool)}),
                        {leaf({2, 3}), leaf({2, 1})}));
}

TEST(GradIndexPut, AccumulateSumsDuplicates) {
  EXPECT_TRUE(gradcheck(put({longs({1, 1, 0, 1})}, true), {leaf({3, 2}), leaf({4, 2})}));
  EXPECT_TRUE(gradcheck(put({longs({2, 2, -1})}, true), {leaf({3}), leaf({})}));
  EXPECT_TRUE(gradcheck(put({longs({0, 0}), longs({1, 1})}, true), {leaf({2, 2}), leaf({2})}));
}

TEST(GradIndexPut, OnlyOneSideRequiresGrad) {
  // Values into a tensor that needs no gradient, and a constant written into one that does.
  EXPECT_TRUE(gradcheck(
      [](const TensorList& x) {
        const Tensor self = zeros({4, 2}, TensorOptions(DType::Float64));
        index_put_(self, {longs({3, 0})}, x[0]);
        return self;
      },
      {leaf({2, 2})}));
  const Tensor constant = random_tensor({2}, DType::Float64);
  EXPECT_TRUE(gradcheck(put({longs({2, 0})}), {leaf({4}), constant}));
}

TEST(GradIndexPut, DuplicatesWithoutAccumulateEachGetTheGradient) {
  // As torch: every value written to a repeated position gets that position's gradient.
  const Tensor self = zeros({3}, TensorOptions(DType::Float64));
  const Tensor values = tensor_of({5, 7}, {2}, DType::Float64).requires_grad_();
  index_put_(self, {longs({1, 1})}, values);
  EXPECT_STREQ(self.grad_fn()->name(), "IndexPutBackward");
  autograd::backward(sum(mul(self, tensor_of({1, 2, 3}, {3}, DType::Float64))));
  EXPECT_TRUE(all_close(to_doubles(values.grad()), {2, 2}, 0));
}

TEST(GradIndexPut, RefusesLeavesAndViewsWhileRecording) {
  const Tensor values = leaf({2});
  const Tensor x = leaf({4});
  EXPECT_THROW(index_put_(x, {longs({0, 1})}, values), ValueError);
  const Tensor y = clone(x);
  const std::string message = error_message([&] {
    index_put_(y.slice(0, 1, 4), {longs({0, 1})}, values);
  });
  EXPECT_NE(message.find("index_put_: in-place changes of a view"), std::string::npos) << message;
  // With grad mode off nothing is recorded and both are allowed.
  NoGradGuard no_grad;
  index_put_(x, {longs({0, 1})}, values);
  index_put_(y.slice(0, 1, 4), {longs({0, 1})}, values);
  EXPECT_TRUE(all_close(
      to_doubles(x),
      {to_doubles(values)[0], to_doubles(values)[1], to_doubles(x)[2], to_doubles(x)[3]}, 0));
}

}  // namespace
}  // namespace rcuda::test
