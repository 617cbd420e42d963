// The data-parallel reducer (rcuda/dist/data_parallel.h) on 2 and 3 ranks of an in-process
// group (fake_group.h), against single-process training on the whole batch from the same
// initial weights: with a mean loss and equal shards, the average of the ranks' gradients is
// the whole batch's gradient, so the weights after a few SGD steps agree to rounding.
#include <functional>
#include <map>

#include "dist_unit/fake_group.h"
#include "rcuda/dist/data_parallel.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

using dist::DataParallel;
using dist::DataParallelOptions;
using Named = std::vector<std::pair<std::string, Tensor>>;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A model as data: named parameters and buffers, and a loss of one shard.
struct Model {
  Named parameters, buffers;
  std::function<Tensor(const Model&, const Tensor& x, const Tensor& y)> loss;

  Tensor param(const std::string& name) const {
    for (const auto& [n, t] : parameters)
      if (n == name) return t;
    return Tensor();
  }
  Tensor buffer(const std::string& name) const {
    for (const auto& [n, t] : buffers)
      if (n == name) return t;
    return Tensor();
  }
  std::vector<Tensor> tensors() const {
    std::vector<Tensor> out;
    for (const auto& entry : parameters) out.push_back(entry.second);
    return out;
  }
  // An independent copy (leaves that require grad where these do).
  Model clone() const {
    Model m{{}, {}, loss};
    for (const auto& [n, t] : parameters) {
      Tensor c = ops::clone(t);
      if (t.requires_grad()) c.requires_grad_();
      m.parameters.emplace_back(n, c);
    }
    for (const auto& [n, t] : buffers) m.buffers.emplace_back(n, ops::clone(t));
    return m;
  }
};

Tensor param_leaf(const Shape& shape) {
  Tensor t = random_tensor(shape, DType::Float64, -0.5, 0.5);
  t.requires_grad_();
  return t;
}

Model mlp() {
  Model m;
  m.parameters = {{"fc1.weight", param_leaf({6, 5})},
                  {"fc1.bias", param_leaf({6})},
                  {"fc2.weight", param_leaf({3, 6})},
                  {"fc2.bias", param_leaf({3})}};
  m.loss = [](const Model& m, const Tensor& x, const Tensor& y) {
    const Tensor h = nn::relu(nn::linear(x, m.param("fc1.weight"), m.param("fc1.bias")));
    return nn::mse_loss(nn::linear(h, m.param("fc2.weight"), m.param("fc2.bias")), y);
  };
  return m;
}

// conv 2 -> 3 channels (3x3), batch norm with running statistics, relu, linear to 2.
Model cnn() {
  Model m;
  m.parameters = {{"conv.weight", param_leaf({3, 2, 3, 3})},
                  {"conv.bias", param_leaf({3})},
                  {"bn.weight", param_leaf({3})},
                  {"bn.bias", param_leaf({3})},
                  {"fc.weight", param_leaf({2, 48})},
                  {"fc.bias", param_leaf({2})}};
  m.buffers = {{"bn.running_mean", random_tensor({3}, DType::Float64, -0.1, 0.1)},
               {"bn.running_var", random_tensor({3}, DType::Float64, 0.9, 1.1)}};
  m.loss = [](const Model& m, const Tensor& x, const Tensor& y) {
    Tensor h = nn::conv2d(x, m.param("conv.weight"), m.param("conv.bias"));
    h = nn::batch_norm(h, m.buffer("bn.running_mean"), m.buffer("bn.running_var"),
                       m.param("bn.weight"), m.param("bn.bias"), /*training=*/true);
    h = flatten(nn::relu(h), 1);
    return nn::mse_loss(nn::linear(h, m.param("fc.weight"), m.param("fc.bias")), y);
  };
  return m;
}

// Each step's shard of each rank: data[step][rank] = (x, y).
using Data = std::vector<std::vector<std::pair<Tensor, Tensor>>>;
Data make_data(int steps, int ranks, const Shape& x_shape, const Shape& y_shape) {
  Data data(static_cast<size_t>(steps));
  for (auto& step : data)
    for (int r = 0; r < ranks; ++r)
      step.emplace_back(random_tensor(x_shape, DType::Float64),
                        random_tensor(y_shape, DType::Float64));
  return data;
}

Tensor cat_of(const std::vector<std::pair<Tensor, Tensor>>& shards, bool x) {
  std::vector<Tensor> parts;
  parts.reserve(shards.size());
  for (const auto& s : shards) parts.push_back(x ? s.first : s.second);
  return ops::cat(parts, 0);
}

optim::SGDOptions sgd_options() {
  optim::SGDOptions o;
  o.lr = 0.1;
  o.momentum = 0.9;
  return o;
}

::testing::AssertionResult same_values(const Named& actual, const Named& expected, double tol) {
  for (size_t i = 0; i < expected.size(); ++i) {
    ::testing::AssertionResult r =
        all_close(to_doubles(actual[i].second), to_doubles(expected[i].second), tol);
    if (!r) return r << " (" << expected[i].first << ")";
  }
  return ::testing::AssertionSuccess();
}

// Single-process training on the whole batch. With batch norm (per_shard), each shard is a
// forward of its own, as on its rank, and the loss is the mean of the shards' losses; the
// running statistics follow rank 0's shard only, since rank 0's are broadcast before each
// forward.
Model train_reference(const Model& initial, const Data& data, bool per_shard) {
  Model m = initial.clone();
  optim::SGD sgd(m.tensors(), sgd_options());
  for (const auto& step : data) {
    Tensor loss;
    if (!per_shard) {
      loss = m.loss(m, cat_of(step, true), cat_of(step, false));
    } else {
      for (size_t r = 0; r < step.size(); ++r) {
        Model view = m;
        if (r > 0)
          for (auto& b : view.buffers) b.second = ops::clone(b.second);
        const Tensor l = m.loss(view, step[r].first, step[r].second);
        loss = loss.defined() ? add(loss, l) : l;
      }
      loss = div(loss, static_cast<double>(step.size()));
    }
    autograd::backward(loss);
    sgd.step();
    sgd.zero_grad();
  }
  return m;
}

DataParallelOptions small_buckets() {
  DataParallelOptions o;
  o.first_bucket_bytes = 64;
  o.bucket_bytes = 256;
  return o;
}

void expect_training_matches(const std::function<Model()>& make, int ranks, const Shape& x_shape,
                             const Shape& y_shape, bool per_shard) {
  // Every rank starts from weights of its own: the reducer broadcasts rank 0's.
  std::vector<Model> initial;
  initial.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) initial.push_back(make());
  const Data data = make_data(3, ranks, x_shape, y_shape);
  const Model expected = train_reference(initial[0], data, per_shard);
  std::vector<Model> trained(static_cast<size_t>(ranks));
  const std::vector<std::string> errors = run_ranks(ranks, [&](int rank, const GroupPtr& group) {
    Model m = initial[static_cast<size_t>(rank)].clone();
    DataParallel ddp(group, m.parameters, m.buffers, small_buckets());
    EXPECT_TRUE(same_values(m.parameters, initial[0].parameters, 0)) << "rank " << rank;
    EXPECT_TRUE(same_values(m.buffers, initial[0].buffers, 0)) << "rank " << rank;
    optim::SGD sgd(m.tensors(), sgd_options());
    for (const auto& step : data) {
      ddp.before_forward();
      const auto& [x, y] = step[static_cast<size_t>(rank)];
      autograd::backward(m.loss(m, x, y));
      sgd.step();
      sgd.zero_grad();
    }
    ddp.before_forward();  // rank 0's running statistics everywhere
    trained[static_cast<size_t>(rank)] = m;
  });
  for (int r = 0; r < ranks; ++r) {
    ASSERT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    EXPECT_TRUE(same_values(trained[r].parameters, expected.parameters, 1e-12)) << "rank " << r;
    EXPECT_TRUE(same_values(trained[r].buffers, expected.buffers, 1e-12)) << "rank " << r;
  }
}

TEST(DataParallel, MlpOnTwoAndThreeRanksTrainsAsTheWholeBatch) {
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    expect_training_matches(mlp, ranks, {4, 5}, {4, 3}, /*per_shard=*/false);
  }
}

TEST(DataParallel, CnnWithBatchNormOnTwoAndThreeRanks) {
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    expect_training_matches(cnn, ranks, {2, 2, 6, 6}, {2, 2}, /*per_shard=*/true);
  }
}

TEST(DataParallel, NoSyncAccumulatesAndTheNextBackwardReducesTheSum) {
  const int ranks = 2;
  std::vector<Model> initial{mlp(), mlp()};
  const Data micro = make_data(2, ranks, {3, 5}, {3, 3});
  // Reference: both micro-batches' whole-batch gradients accumulated, then one step.
  Model expected = initial[0].clone();
  {
    optim::SGD sgd(expected.tensors(), sgd_options());
    for (const auto& step : micro)
      autograd::backward(expected.loss(expected, cat_of(step, true), cat_of(step, false)));
    sgd.step();
  }
  auto world = std::make_shared<FakeWorld>(ranks);
  std::vector<Model> trained(ranks);
  const std::vector<std::string> errors = run_ranks(
      ranks,
      [&](int rank, const GroupPtr& group) {
        Model m = initial[static_cast<size_t>(rank)].clone();
        DataParallel ddp(group, m.parameters, {}, small_buckets());
        optim::SGD sgd(m.tensors(), sgd_options());
        const auto& [x0, y0] = micro[0][static_cast<size_t>(rank)];
        const auto& [x1, y1] = micro[1][static_cast<size_t>(rank)];
        const int64_t before = world->completed();
        {
          DataParallel::NoSync no_sync(ddp);
          ddp.before_forward();
          autograd::backward(m.loss(m, x0, y0));
        }
        EXPECT_EQ(world->completed(), before) << "no collective inside no_sync";
        ddp.before_forward();
        autograd::backward(m.loss(m, x1, y1));
        sgd.step();
        trained[static_cast<size_t>(rank)] = m;
      },
      world);
  for (int r = 0; r < ranks; ++r) {
    ASSERT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    EXPECT_TRUE(same_values(trained[r].parameters, expected.parameters, 1e-12)) << "rank " << r;
  }
}

// The MLP with a head that the loss leaves out.
Model mlp_with_unused() {
  Model m = mlp();
  m.parameters.emplace_back("head.unused", param_leaf({2}));
  return m;
}

TEST(DataParallel, AParameterWithoutGradientIsAnErrorNamingIt) {
  const Model initial = mlp_with_unused();
  const Data data = make_data(1, 2, {4, 5}, {4, 3});
  std::vector<std::string> second_pass(2);
  const std::vector<std::string> errors = run_ranks(2, [&](int rank, const GroupPtr& group) {
    Model m = initial.clone();
    DataParallel ddp(group, m.parameters, {}, small_buckets());
    const Tensor& x = data[0][static_cast<size_t>(rank)].first;
    const Tensor& y = data[0][static_cast<size_t>(rank)].second;
    const std::string message = error_message([&] { autograd::backward(m.loss(m, x, y)); });
    EXPECT_TRUE(contains(message, "'head.unused'")) << message;
    EXPECT_TRUE(contains(message, "find_unused_parameters = TRUE")) << message;
    EXPECT_FALSE(contains(message, "fc1")) << message;
    // The failed pass leaves nothing behind: a pass that uses every parameter reduces.
    for (const Tensor& p : m.tensors()) p.set_grad(Tensor());
    const Tensor u = m.param("head.unused");
    autograd::backward(add(m.loss(m, x, y), sum(mul(u, u))));
    second_pass[static_cast<size_t>(rank)] = "done";
    EXPECT_TRUE(all_close(to_doubles(u.grad()), to_doubles(mul(u, 2.0)), 1e-12));
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    EXPECT_EQ(second_pass[static_cast<size_t>(r)], "done");
  }
}

TEST(DataParallel, FindUnusedParametersCountsThemAsZero) {
  // head.extra is used on rank 0 only (gradient c), head.unused on no rank.
  Model initial = mlp_with_unused();
  initial.parameters.emplace_back("head.extra", param_leaf({2}));
  const Tensor c = tensor_of({0.25, -1.5}, {2}, DType::Float64);
  const Data data = make_data(1, 2, {4, 5}, {4, 3});
  Model expected = initial.clone();
  autograd::backward(expected.loss(expected, cat_of(data[0], true), cat_of(data[0], false)));
  std::vector<Model> reduced(2);
  const std::vector<std::string> errors = run_ranks(2, [&](int rank, const GroupPtr& group) {
    Model m = initial.clone();
    DataParallelOptions options = small_buckets();
    options.find_unused_parameters = true;
    DataParallel ddp(group, m.parameters, {}, options);
    const auto& [x, y] = data[0][static_cast<size_t>(rank)];
    Tensor loss = m.loss(m, x, y);
    if (rank == 0) loss = add(loss, sum(mul(m.param("head.extra"), c)));
    autograd::backward(loss);
    reduced[static_cast<size_t>(rank)] = m;
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    const Model& m = reduced[r];
    for (const char* name : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"})
      EXPECT_TRUE(all_close(to_doubles(m.param(name).grad()),
                            to_doubles(expected.param(name).grad()), 1e-12))
          << name << " on rank " << r;
    EXPECT_TRUE(all_close(to_doubles(m.param("head.extra").grad()), {0.125, -0.75}, 1e-15));
    ASSERT_TRUE(m.param("head.unused").grad().defined());
    EXPECT_TRUE(all_close(to_doubles(m.param("head.unused").grad()), {0, 0}, 0));
  }
}

TEST(DataParallel, BucketsFollowTheCapsInReverseOrderWithoutMixingDTypes) {
  auto f64 = [](int64_t n) { return param_leaf({n}); };
  Tensor e = random_tensor({4}, DType::Float32).requires_grad_();
  const Named parameters = {{"a", f64(10)},  // 80 bytes
                            {"b", f64(5)},   // 40
                            {"frozen", random_tensor({7}, DType::Float64)},
                            {"c", f64(20)},  // 160
                            {"d", f64(3)},   // 24
                            {"e", e}};       // float32, 16
  using Buckets = std::vector<std::vector<std::string>>;
  std::map<std::pair<int64_t, int64_t>, Buckets> seen;
  const std::vector<std::string> errors = run_ranks(2, [&](int rank, const GroupPtr& group) {
    const std::vector<std::pair<int64_t, int64_t>> caps = {{100, 150}, {8, 8}, {1 << 20, 1 << 20}};
    for (const auto& [first, rest] : caps) {
      DataParallelOptions options;
      options.first_bucket_bytes = first;
      options.bucket_bytes = rest;
      Named mine;
      for (const auto& [n, t] : parameters) {
        Tensor copy = ops::clone(t);
        if (t.requires_grad()) copy.requires_grad_();
        mine.emplace_back(n, copy);
      }
      DataParallel ddp(group, mine, {}, options);
      if (rank == 0) seen[{first, rest}] = ddp.buckets();
    }
  });
  for (const std::string& error : errors) ASSERT_EQ(error, "");
  // float64, reversed: d (24) + c (160) passes the first cap of 100; b + a (120) stay under
  // 150 until the end. The float32 e fills a bucket of its own.
  EXPECT_EQ((seen[{100, 150}]), (Buckets{{"e"}, {"d", "c"}, {"b", "a"}}));
  EXPECT_EQ((seen[{8, 8}]), (Buckets{{"e"}, {"d"}, {"c"}, {"b"}, {"a"}}));
  EXPECT_EQ((seen[{1 << 20, 1 << 20}]), (Buckets{{"e"}, {"d", "c", "b", "a"}}));
}

TEST(DataParallel, RanksWithDifferentParametersFailAtConstruction) {
  struct Case {
    std::vector<Named> by_rank;
    std::string expected;
  };
  auto p = [](const Shape& shape) { return param_leaf(shape); };
  const std::vector<Case> cases = {
      {{{{"w", p({3, 4})}, {"b", p({4})}}, {{"w", p({4, 3})}, {"b", p({4})}}},
       "parameter 0 is 'w' [3, 4] float64 on rank 0 but 'w' [4, 3] float64 on rank 1"},
      {{{{"w", p({3, 4})}, {"b", p({4})}}, {{"w", p({3, 4})}, {"bias", p({4})}}},
       "parameter 1 is 'b' [4] float64 on rank 0 but 'bias' [4] float64 on rank 1"},
      {{{{"w", p({3, 4})}}, {{"w", p({3, 4})}, {"b", p({4})}}},
       "rank 0: 1 parameters, 0 buffers; rank 1: 2 parameters, 0 buffers"},
  };
  for (const Case& c : cases) {
    const std::vector<std::string> errors = run_ranks(2, [&](int rank, const GroupPtr& group) {
      try {
        DataParallel ddp(group, c.by_rank[static_cast<size_t>(rank)]);
      } catch (const dist::DistError& e) {
        throw std::runtime_error(std::string("DistError: ") + e.what());
      }
    });
    for (const std::string& error : errors) {
      EXPECT_TRUE(contains(error, "DistError: DataParallel: the ranks passed different")) << error;
      EXPECT_TRUE(contains(error, c.expected)) << error;
    }
  }
}

TEST(DataParallel, RefusesTheSameTensorTwiceAndNonLeaves) {
  const std::vector<std::string> errors = run_ranks(1, [&](int, const GroupPtr& group) {
    const Tensor w = param_leaf({2});
    EXPECT_TRUE(contains(error_message([&] {
                           DataParallel ddp(group, Named{{"a", w}, {"b", w}});
                         }),
                         "parameters 'a' and 'b' are the same tensor"));
    EXPECT_TRUE(contains(error_message([&] {
                           DataParallel ddp(group, Named{{"h", mul(w, 2.0)}});
                         }),
                         "parameter 'h' is computed by an op, not a leaf"));
  });
  EXPECT_EQ(errors[0], "");
}

}  // namespace
}  // namespace rcuda::test
