// Gradients of joining, splitting and indexing against float64 central differences
// (tests/autograd/gradcheck.h), on fresh random indices and masks, with duplicates where the op
// accumulates them, non-contiguous inputs, negative dims and empty tensors.
#include <algorithm>
#include <numeric>

#include "autograd/gradcheck.h"

namespace rcuda::test {
namespace {

using F = std::function<Tensor(const TensorList&)>;

// Random int64 indices in [0, high): duplicates likely.
Tensor random_index(const Shape& shape, int64_t high) {
  return random_tensor(shape, DType::Int64, 0, static_cast<double>(high));
}

// Indices in [0, size) that never repeat along `dim` (a prefix of a random permutation per
// line), so that scatter without accumulate writes each place once and the gradient does not
// depend on which duplicate wins.
Tensor distinct_index(const Shape& shape, int64_t dim, int64_t size) {
  const int64_t n = numel(shape), inner = numel(Shape(shape.begin() + dim + 1, shape.end()));
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t line = 0; shape[dim] > 0 && line < n / shape[dim]; ++line) {
    std::vector<int64_t> order(static_cast<size_t>(size));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng());
    const int64_t outer = line / inner, inner_pos = line % inner;
    for (int64_t j = 0; j < shape[dim]; ++j)
      v[(outer * shape[dim] + j) * inner + inner_pos] = static_cast<double>(order[j]);
  }
  return tensor_of(v, shape, DType::Int64);
}

Tensor random_mask(const Shape& shape) { return random_tensor(shape, DType::Bool); }

TEST(GradIndexing, CatSplitsTheGradientBack) {
  const F cat0 = [](const TensorList& x) { return cat(x, 0); };
  const F cat1 = [](const TensorList& x) { return cat(x, 1); };
  const F cat_last = [](const TensorList& x) { return cat(x, -1); };
  EXPECT_TRUE(gradcheck(cat0, {leaf({2, 3}), leaf({4, 3}), leaf_transposed({1, 3})}));
  EXPECT_TRUE(gradcheck(cat1, {leaf({2, 3}), leaf_transposed({2, 4})}));
  EXPECT_TRUE(gradcheck(cat_last, {leaf({2, 2, 3}), leaf({2, 2, 1})}));
  // An empty 1-D input is skipped by cat; its gradient is empty too.
  EXPECT_TRUE(gradcheck(cat0, {leaf({0}), leaf({2, 3}), leaf({0}), leaf({1, 3})}));
  // Empty along the joined dim, and an input that is a constant.
  EXPECT_TRUE(gradcheck(cat1, {leaf({2, 0}), leaf({2, 3})}));
  EXPECT_TRUE(gradcheck(cat0, {leaf({2, 3}), random_tensor({2, 3}, DType::Float64)}));
  // Every input skipped: an empty result whose gradient is empty.
  Tensor a = leaf({0});
  autograd::backward(sum(cat({a, a})));
  EXPECT_EQ(a.grad().shape(), (Shape{0}));

  Tensor x = leaf({2}), y = leaf({3});
  const Tensor joined = cat({x, y});
  EXPECT_STREQ(joined.grad_fn()->name(), "CatBackward");
  autograd::backward(joined, tensor_of({1, 2, 3, 4, 5}, {5}, DType::Float64));
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {1, 2}, 0));
  EXPECT_TRUE(all_close(to_doubles(y.grad()), {3, 4, 5}, 0));
}

TEST(GradIndexing, StackSelectsTheGradientBack) {
  for (const int64_t dim : {0, 1, 2, -1, -3}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    EXPECT_TRUE(gradcheck([dim](const TensorList& x) { return stack(x, dim); },
                          {leaf({2, 3}), leaf_transposed({2, 3}), leaf({2, 3})}));
  }
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return stack(x, 0); }, {leaf({}), leaf({})}));
  EXPECT_TRUE(
      gradcheck([](const TensorList& x) { return stack(x, 1); }, {leaf({0, 2}), leaf({0, 2})}));
}

TEST(GradIndexing, SplitAndChunkPiecesAreViewsWithGradients) {
  // Each piece weighted differently, then joined back: every element's gradient is its piece's
  // weight.
  const F split_sizes = [](const TensorList& x) {
    const std::vector<Tensor> p = split(x[0], std::vector<int64_t>{1, 3, 0, 1}, -1);
    return cat({mul(p[1], 2.0), p[0], mul(p[3], -1.5), p[2]}, -1);
  };
  const F split_size = [](const TensorList& x) {
    const std::vector<Tensor> p = split(x[0], 2, 0);  // 2, 2, 1 rows
    return add(sum(mul(p[0], p[1])), sum(p[2]));
  };
  const F chunked = [](const TensorList& x) {
    const std::vector<Tensor> p = chunk(x[0], 3, 1);  // 2, 2, 1 columns
    return cat({mul(p[2], 3.0), p[0]}, 1);
  };
  for (const auto& [name, f] : std::vector<std::pair<const char*, F>>{
           {"split sizes", split_sizes}, {"split size", split_size}, {"chunk", chunked}}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(gradcheck(f, {leaf({5, 5})}));
    EXPECT_TRUE(gradcheck(f, {leaf_transposed({5, 5})}));
  }
  Tensor x = leaf({4});
  const std::vector<Tensor> pieces = chunk(x, 2);
  EXPECT_STREQ(pieces[1].grad_fn()->name(), "SliceBackward");
  autograd::backward(sum(mul(pieces[1], 3.0)));
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {0, 0, 3, 3}, 0));
}

TEST(GradIndexing, IndexSelectAddsBackDuplicates) {
  for (const int64_t dim : {0, 1, -1}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    const Tensor index = random_index({7}, 4);  // 7 picks of 4: duplicates certain
    const F f = [&](const TensorList& x) { return index_select(x[0], dim, index); };
    EXPECT_TRUE(gradcheck(f, {leaf({4, 4})}));
    EXPECT_TRUE(gradcheck(f, {leaf_transposed({4, 4})}));
    EXPECT_TRUE(gradcheck(f, {leaf({4, 4, 4})}));
  }
  const Tensor one = tensor_of({2}, {}, DType::Int64);
  EXPECT_TRUE(
      gradcheck([&](const TensorList& x) { return index_select(x[0], 1, one); }, {leaf({3, 4})}));
  const Tensor zero = tensor_of({0}, {}, DType::Int64);
  EXPECT_TRUE(
      gradcheck([&](const TensorList& x) { return index_select(x[0], 0, zero); }, {leaf({})}));
  const Tensor none = tensor_of({}, {0}, DType::Int64);
  EXPECT_TRUE(
      gradcheck([&](const TensorList& x) { return index_select(x[0], 0, none); }, {leaf({3, 2})}));
  // By hand: index [2, 0, 2] of 3 rows sends rows 2 twice and row 0 once.
  Tensor x = leaf({3, 2});
  const Tensor index = tensor_of({2, 0, 2}, {3}, DType::Int64);
  autograd::backward(sum(index_select(x, 0, index)));
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {1, 1, 0, 0, 2, 2}, 0));
}

TEST(GradIndexing, GatherScattersBackWithDuplicates) {
  for (const int64_t dim : {0, 1, -1}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    // index larger than x along dim, smaller in the other dim.
    const Shape shape = dim == 0 ? Shape{6, 3} : Shape{3, 6};
    const Tensor index = random_index(shape, 4);
    const F f = [&](const TensorList& x) { return gather(x[0], dim, index); };
    EXPECT_TRUE(gradcheck(f, {leaf({4, 4})}));
    EXPECT_TRUE(gradcheck(f, {leaf_transposed({4, 4})}));
    EXPECT_TRUE(
        gradcheck([&](const TensorList& x) { return gather(x[0], dim, transposed_copy(index)); },
                  {leaf({4, 4})}));
  }
  const Tensor index3 = random_index({2, 3, 2}, 3);
  EXPECT_TRUE(
      gradcheck([&](const TensorList& x) { return gather(x[0], 1, index3); }, {leaf({2, 3, 4})}));
  const Tensor scalar_index = tensor_of({0}, {}, DType::Int64);
  EXPECT_TRUE(
      gradcheck([&](const TensorList& x) { return gather(x[0], 0, scalar_index); }, {leaf({})}));
  EXPECT_TRUE(gradcheck(
      [&](const TensorList& x) {
        return gather(x[0], 0, random_index({0, 2}, 3));
      },
      {leaf({3, 2})}));
}

TEST(GradIndexing, ScatterSendsOverwrittenPlacesToSrc) {
  for (const int64_t dim : {0, 1, -1}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    // x [4, 5]; index writes 3 distinct places per line along dim; src larger than index.
    const int64_t d = dim < 0 ? dim + 2 : dim;
    const Tensor index = distinct_index({3, 4}, d, d == 0 ? 4 : 5);
    const F f = [&](const TensorList& x) { return scatter(x[0], dim, index, x[1]); };
    EXPECT_TRUE(gradcheck(f, {leaf({4, 5}), leaf({3, 4})}));
    EXPECT_TRUE(gradcheck(f, {leaf_transposed({4, 5}), leaf({5, 6})}));  // src larger
    EXPECT_TRUE(gradcheck(f, {leaf({4, 5}), random_tensor({3, 4}, DType::Float64)}));
    EXPECT_TRUE(gradcheck(f, {random_tensor({4, 5}, DType::Float64), leaf_transposed({4, 6})}));
    const F with_value = [&](const TensorList& x) { return scatter(x[0], dim, index, 2.5); };
    EXPECT_TRUE(gradcheck(with_value, {leaf_transposed({4, 5})}));
  }
  // By hand: the written places get no gradient in x; src gets the gradient read there.
  Tensor x = leaf({4}), src = leaf({3});
  const Tensor index = tensor_of({3, 0}, {2}, DType::Int64);
  const Tensor out = scatter(x, 0, index, src);
  EXPECT_STREQ(out.grad_fn()->name(), "ScatterBackward");
  autograd::backward(out, tensor_of({1, 2, 3, 4}, {4}, DType::Float64));
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {0, 2, 3, 0}, 0));
  EXPECT_TRUE(all_close(to_doubles(src.grad()), {4, 1, 0}, 0));
  // 0-dim and empty indices.
  const Tensor scalar_index = tensor_of({0}, {}, DType::Int64);
  EXPECT_TRUE(gradcheck([&](const TensorList& t) { return scatter(t[0], 0, scalar_index, t[1]); },
                        {leaf({}), leaf({})}));
  const Tensor none = tensor_of({}, {0, 2}, DType::Int64);
  EXPECT_TRUE(gradcheck([&](const TensorList& t) { return scatter(t[0], 0, none, t[1]); },
                        {leaf({3, 2}), leaf({1, 2})}));
}

TEST(GradIndexing, ScatterAddPassesTheGradientToBoth) {
  for (const int64_t dim : {0, 1, -1}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    const int64_t d = dim < 0 ? dim + 2 : dim;
    const Tensor index = random_index({5, 5}, d == 0 ? 3 : 4);  // duplicates certain
    const F f = [&](const TensorList& x) { return scatter_add(x[0], dim, index, x[1]); };
    const Shape x_shape = d == 0 ? Shape{3, 5} : Shape{5, 4};
    EXPECT_TRUE(gradcheck(f, {leaf(x_shape), leaf({5, 5})}));
    EXPECT_TRUE(gradcheck(f, {leaf(x_shape), leaf_transposed({6, 6})}));  // src larger
  }
  Tensor x = leaf({3}), src = leaf({4});
  const Tensor index = tensor_of({1, 1, 2, 1}, {4}, DType::Int64);
  autograd::backward(scatter_add(x, 0, index, src), tensor_of({1, 2, 3}, {3}, DType::Float64));
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {1, 2, 3}, 0));
  EXPECT_TRUE(all_close(to_doubles(src.grad()), {2, 2, 3, 2}, 0));
}

TEST(GradIndexing, MaskedFillZeroesTheFilledPlaces) {
  const Tensor mask = random_mask({3, 4});
  const Tensor row_mask = random_mask({4});
  EXPECT_TRUE(gradcheck([&](const TensorList& x) { return masked_fill(x[0], mask, -1.0); },
                        {leaf({3, 4})}));
  EXPECT_TRUE(gradcheck([&](const TensorList& x) { return masked_fill(x[0], row_mask, 7.0); },
                        {leaf_transposed({3, 4})}));
  EXPECT_TRUE(gradcheck(
      [&](const TensorList& x) {
        return masked_fill(x[0], random_mask({0, 4}), 1.0);
      },
      {leaf({0, 4})}));
  Tensor x = leaf({3});
  autograd::backward(sum(masked_fill(x, tensor_of({1, 0, 1}, {3}, DType::Bool), 5.0)));
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {0, 1, 0}, 0));
}

TEST(GradIndexing, MaskedSelectScattersBackThroughTheMask) {
  const Tensor mask = random_mask({3, 4});
  const F f = [&](const TensorList& x) { return masked_select(x[0], mask); };
  EXPECT_TRUE(gradcheck(f, {leaf({3, 4})}));
  EXPECT_TRUE(gradcheck(f, {leaf_transposed({3, 4})}));
  // x broadcast against the mask: each element's gradient sums over the places it fills.
  EXPECT_TRUE(gradcheck(f, {leaf({3, 1})}));
  EXPECT_TRUE(gradcheck(f, {leaf({4})}));
  // The mask broadcast against x.
  const Tensor row_mask = random_mask({4});
  EXPECT_TRUE(gradcheck([&](const TensorList& x) { return masked_select(x[0], row_mask); },
                        {leaf({2, 3, 4})}));
  // Nothing selected, and an empty input.
  const Tensor none = tensor_of(std::vector<double>(12, 0.0), {3, 4}, DType::Bool);
  EXPECT_TRUE(
      gradcheck([&](const TensorList& x) { return masked_select(x[0], none); }, {leaf({3, 4})}));
  EXPECT_TRUE(gradcheck([&](const TensorList& x) { return masked_select(x[0], random_mask({0})); },
                        {leaf({0})}));
  // By hand: the k-th selected element gets the k-th gradient.
  Tensor x = leaf({2, 3});
  const Tensor picked = masked_select(x, tensor_of({0, 1, 1, 1, 0, 1}, {2, 3}, DType::Bool));
  EXPECT_STREQ(picked.grad_fn()->name(), "MaskedSelectBackward");
  autograd::backward(picked, tensor_of({1, 2, 3, 4}, {4}, DType::Float64));
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {0, 1, 2, 3, 0, 4}, 0));
}

TEST(GradIndexing, IndexResultsCarryNoGradient) {
  Tensor x = leaf({3, 4});
  EXPECT_FALSE(nonzero(x).requires_grad());
  EXPECT_FALSE(one_hot(tensor_of({0, 2}, {2}, DType::Int64), 3).requires_grad());
  // Saved indices are version-checked: changing one in place before backward is an error.
  Tensor index = tensor_of({0, 1}, {2}, DType::Int64);
  const Tensor out = index_select(x, 0, index);
  {
    NoGradGuard no_grad;
    fill_(index, 2);
  }
  EXPECT_NE(error_message([&] { autograd::backward(sum(out)); }).find("IndexSelectBackward"),
            std::string::npos);
}

}  // namespace
}  // namespace rcuda::test
