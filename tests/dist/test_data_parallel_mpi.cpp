// The data-parallel reducer (rcuda/dist/data_parallel.h) over the MPI backend: every rank trains
// its shard, and checks its weights against single-process training on the whole batch, which it
// computes on its own from every rank's values (dist_support.h). tests/dist_unit has the same
// checks, and more, on an in-process group.
#include "dist/dist_support.h"
#include "rcuda/dist/data_parallel.h"
#include "rcuda/rcuda.h"

namespace rcuda::test::dist {

namespace {

using rcuda::dist::DataParallel;
using Named = std::vector<std::pair<std::string, Tensor>>;

Tensor values(int rank, int call, const Shape& shape, bool requires_grad = false) {
  std::vector<double> v = rank_values(rank, call, rcuda::numel(shape), DType::Float64);
  for (double& x : v) x *= 0.5;
  Tensor t = make_tensor(v, shape, DType::Float64);
  if (requires_grad) t.requires_grad_();
  return t;
}

// fc1 5 -> 6, relu, fc2 6 -> 3, and a head that only the unused-parameter test leaves out.
struct Mlp {
  Named parameters;
  explicit Mlp(int rank) {
    parameters = {{"fc1.weight", values(rank, 1, {6, 5}, true)},
                  {"fc1.bias", values(rank, 2, {6}, true)},
                  {"fc2.weight", values(rank, 3, {3, 6}, true)},
                  {"fc2.bias", values(rank, 4, {3}, true)},
                  {"head.weight", values(rank, 5, {3}, true)}};
  }
  const Tensor& at(size_t i) const { return parameters[i].second; }
  std::vector<Tensor> tensors() const {
    std::vector<Tensor> out;
    for (const auto& entry : parameters) out.push_back(entry.second);
    return out;
  }
  Tensor loss(const Tensor& x, const Tensor& y, bool use_head = true) const {
    Tensor out = nn::linear(nn::relu(nn::linear(x, at(0), at(1))), at(2), at(3));
    if (use_head) out = mul(out, at(4));
    return nn::mse_loss(out, y);
  }
};

// Rank q's shard of step s.
Tensor shard_x(int q, int step) { return values(q, 100 + step, {4, 5}); }
Tensor shard_y(int q, int step) { return values(q, 200 + step, {4, 3}); }
Tensor whole(Tensor (*shard)(int, int), int size, int step) {
  std::vector<Tensor> parts;
  parts.reserve(static_cast<size_t>(size));
  for (int q = 0; q < size; ++q) parts.push_back(shard(q, step));
  return ops::cat(parts, 0);
}

rcuda::dist::DataParallelOptions small_buckets() {
  rcuda::dist::DataParallelOptions o;
  o.first_bucket_bytes = 64;
  o.bucket_bytes = 256;
  return o;
}

void expect_same(const Mlp& actual, const Mlp& expected) {
  for (size_t i = 0; i < expected.parameters.size(); ++i) {
    const std::vector<double> a = read_tensor(actual.at(i)), e = read_tensor(expected.at(i));
    ASSERT_EQ(a.size(), e.size());
    for (size_t k = 0; k < a.size(); ++k)
      ASSERT_NEAR(a[k], e[k], 1e-12 * std::max(1.0, std::abs(e[k])))
          << expected.parameters[i].first << " element " << k;
  }
}

}  // namespace

TEST(DataParallelMpi, TrainsAsTheWholeBatchFromRankZerosWeights) {
  auto g = group();
  const int size = g->size(), rank = g->rank();
  Mlp mine(rank), expected(0);  // each rank starts from its own weights
  DataParallel ddp(g, mine.parameters, {}, small_buckets());
  expect_same(mine, expected);  // rank 0's, broadcast
  optim::SGDOptions options;
  options.lr = 0.1;
  options.momentum = 0.9;
  optim::SGD sgd(mine.tensors(), options), reference(expected.tensors(), options);
  for (int step = 0; step < 3; ++step) {
    ddp.before_forward();
    autograd::backward(mine.loss(shard_x(rank, step), shard_y(rank, step)));
    sgd.step();
    sgd.zero_grad();
    autograd::backward(expected.loss(whole(shard_x, size, step), whole(shard_y, size, step)));
    reference.step();
    reference.zero_grad();
  }
  expect_same(mine, expected);
}

TEST(DataParallelMpi, NoSyncThenASyncedBackwardReducesTheSum) {
  auto g = group();
  const int size = g->size(), rank = g->rank();
  Mlp mine(rank), expected(0);
  DataParallel ddp(g, mine.parameters, {}, small_buckets());
  {
    DataParallel::NoSync no_sync(ddp);
    autograd::backward(mine.loss(shard_x(rank, 0), shard_y(rank, 0)));
  }
  autograd::backward(mine.loss(shard_x(rank, 1), shard_y(rank, 1)));
  for (int step = 0; step < 2; ++step)
    autograd::backward(expected.loss(whole(shard_x, size, step), whole(shard_y, size, step)));
  for (size_t i = 0; i < expected.parameters.size(); ++i) {
    const std::vector<double> a = read_tensor(mine.at(i).grad());
    const std::vector<double> e = read_tensor(expected.at(i).grad());
    for (size_t k = 0; k < a.size(); ++k)
      ASSERT_NEAR(a[k], e[k], 1e-12 * std::max(1.0, std::abs(e[k])))
          << expected.parameters[i].first << " element " << k;
  }
}

TEST(DataParallelMpi, AnUnusedParameterIsAnErrorUnlessFindUnusedParameters) {
  auto g = group();
  const int rank = g->rank();
  {
    Mlp mine(rank);
    DataParallel ddp(g, mine.parameters, {}, small_buckets());
    try {
      autograd::backward(mine.loss(shard_x(rank, 0), shard_y(rank, 0), /*use_head=*/false));
      ADD_FAILURE() << "no error";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("'head.weight'"), std::string::npos) << e.what();
    }
  }
  Mlp mine(rank);
  rcuda::dist::DataParallelOptions options = small_buckets();
  options.find_unused_parameters = true;
  DataParallel ddp(g, mine.parameters, {}, options);
  autograd::backward(mine.loss(shard_x(rank, 0), shard_y(rank, 0), /*use_head=*/false));
  EXPECT_EQ(read_tensor(mine.at(4).grad()), std::vector<double>(3, 0.0));
  EXPECT_TRUE(mine.at(0).grad().defined());
}

}  // namespace rcuda::test::dist
