// Every collective of the MPI backend against a reference each rank computes on its own from
// every rank's values (dist_support.h), for every dtype it accepts, empty and 0-d tensors, and
// several collectives in flight.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "dist/dist_support.h"

namespace rcuda::test::dist {

namespace {

using rcuda::dist::ReduceOp;

// Avg of the half types divides an exact sum once: one rounding of the result.
double avg_tolerance(DType dtype) {
  return dtype == DType::Float16 ? 1e-3 : dtype == DType::BFloat16 ? 8e-3 : tolerance(dtype);
}

std::vector<ReduceOp> ops_for(DType dtype) {
  std::vector<ReduceOp> ops{ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min};
  if (is_floating(dtype)) ops.push_back(ReduceOp::Avg);
  return ops;
}

}  // namespace

TEST(DistAllReduce, EveryOpAndDtypeMatchesTheReductionOverRanks) {
  auto g = group();
  int call = 0;
  for (DType dtype : reducible_dtypes()) {
    for (ReduceOp op : ops_for(dtype)) {
      ++call;
      const Shape shape{3, 7};
      Tensor t = make_tensor(rank_values(g->rank(), call, 21, dtype), shape, dtype);
      g->all_reduce(t, op)->wait();
      const std::string what = std::string(dtype_name(dtype)) + " " + reduce_op_name(op);
      EXPECT_EQ(t.shape(), shape) << what;
      expect_close(read_tensor(t), reference(call, 21, dtype, op, g->size()),
                   op == ReduceOp::Avg ? avg_tolerance(dtype) : tolerance(dtype), what);
    }
  }
}

TEST(DistAllReduce, ALargeFloat32Tensor) {
  auto g = group();
  const int64_t n = 100003;
  Tensor t = make_tensor(rank_values(g->rank(), 1, n, DType::Float32), {n}, DType::Float32);
  g->all_reduce(t, ReduceOp::Sum)->wait();
  expect_close(read_tensor(t), reference(1, n, DType::Float32, ReduceOp::Sum, g->size()), 1e-6,
               "float32 sum");
}

TEST(DistAllReduce, ZeroDimAndEmptyTensors) {
  auto g = group();
  Tensor scalar = make_tensor(rank_values(g->rank(), 1, 1, DType::Float64), {}, DType::Float64);
  g->all_reduce(scalar, ReduceOp::Max)->wait();
  expect_close(read_tensor(scalar), reference(1, 1, DType::Float64, ReduceOp::Max, g->size()), 0,
               "0-d max");
  Tensor empty = Tensor::empty({0, 3}, DType::Float32);
  g->all_reduce(empty, ReduceOp::Avg)->wait();
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
}

TEST(DistAllReduce, SeveralInFlightWaitedInReverse) {
  auto g = group();
  std::vector<Tensor> tensors;
  std::vector<std::shared_ptr<rcuda::dist::Work>> works;
  for (int call = 1; call <= 6; ++call) {
    tensors.push_back(
        make_tensor(rank_values(g->rank(), call, 1000, DType::Int64), {1000}, DType::Int64));
    works.push_back(g->all_reduce(tensors.back(), ReduceOp::Sum));
  }
  for (int i = 5; i >= 0; --i) {
    works[i]->wait();
    EXPECT_TRUE(works[i]->completed());
    expect_close(read_tensor(tensors[i]),
                 reference(i + 1, 1000, DType::Int64, ReduceOp::Sum, g->size()), 0, "int64 sum");
  }
}

TEST(DistAllReduce, CompletedTurnsTrueWithoutWait) {
  auto g = group();
  Tensor t = make_tensor(rank_values(g->rank(), 1, 64, DType::Float32), {64}, DType::Float32);
  auto work = g->all_reduce(t, ReduceOp::Min);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!work->completed() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(work->completed());
  expect_close(read_tensor(t), reference(1, 64, DType::Float32, ReduceOp::Min, g->size()), 0,
               "float32 min");
}

TEST(DistAllReduce, WithoutShapeChecks) {
  rcuda::dist::destroy_process_group();
  rcuda::dist::ProcessGroupOptions options;
  options.check_shapes = false;
  options.timeout = std::chrono::seconds(30);
  auto g = rcuda::dist::init_process_group(options);
  Tensor t = make_tensor(rank_values(g->rank(), 1, 50, DType::Float64), {5, 10}, DType::Float64);
  g->all_reduce(t, ReduceOp::Avg)->wait();
  expect_close(read_tensor(t), reference(1, 50, DType::Float64, ReduceOp::Avg, g->size()), 1e-14,
               "float64 avg");
  g.reset();
  restart_group();
}

TEST(DistBroadcast, FromEveryRootEveryDtype) {
  auto g = group();
  int call = 0;
  for (int root = 0; root < g->size(); ++root) {
    for (DType dtype : all_dtypes()) {
      ++call;
      Tensor t = random_bytes(g->rank(), call, {4, 3}, dtype);
      g->broadcast(t, root)->wait();
      EXPECT_EQ(bytes_of(t), bytes_of(random_bytes(root, call, {4, 3}, dtype)))
          << dtype_name(dtype) << " from root " << root;
    }
  }
  Tensor empty = Tensor::empty({0}, DType::Float32);
  g->broadcast(empty, g->size() - 1)->wait();
}

TEST(DistAllGather, EveryDtypeStacksTheRanksInOrder) {
  auto g = group();
  int call = 0;
  for (DType dtype : all_dtypes()) {
    ++call;
    Tensor in = random_bytes(g->rank(), call, {2, 3}, dtype);
    Tensor out = Tensor::empty({2 * g->size(), 3}, dtype);
    g->all_gather(out, in)->wait();
    std::vector<uint8_t> expected;
    for (int r = 0; r < g->size(); ++r) {
      const auto b = bytes_of(random_bytes(r, call, {2, 3}, dtype));
      expected.insert(expected.end(), b.begin(), b.end());
    }
    EXPECT_EQ(bytes_of(out), expected) << dtype_name(dtype);
  }
}

TEST(DistAllGather, InPlaceZeroDimAndEmpty) {
  auto g = group();
  // `in` as this rank's rows of `out`.
  Tensor out = Tensor::empty({3 * g->size(), 2}, DType::Float32);
  Tensor in = out.narrow(0, 3 * g->rank(), 3);
  Tensor mine = make_tensor(rank_values(g->rank(), 1, 6, DType::Float32), {3, 2}, DType::Float32);
  std::copy_n(mine.data<float>(), 6, in.data<float>());
  g->all_gather(out, in)->wait();
  std::vector<double> expected;
  for (int r = 0; r < g->size(); ++r) {
    auto v = read_tensor(make_tensor(rank_values(r, 1, 6, DType::Float32), {3, 2}, DType::Float32));
    expected.insert(expected.end(), v.begin(), v.end());
  }
  expect_close(read_tensor(out), expected, 0, "in-place all_gather");

  Tensor scalar = make_tensor({static_cast<double>(g->rank())}, {}, DType::Int32);
  Tensor ranks = Tensor::empty({g->size()}, DType::Int32);
  g->all_gather(ranks, scalar)->wait();
  for (int r = 0; r < g->size(); ++r) EXPECT_EQ(ranks.data<int32_t>()[r], r);

  Tensor empty_out = Tensor::empty({0, 4}, DType::Int64);
  g->all_gather(empty_out, Tensor::empty({0, 4}, DType::Int64))->wait();
}

TEST(DistReduceScatter, EachRankGetsItsRowsReduced) {
  auto g = group();
  const int size = g->size();
  int call = 0;
  for (DType dtype : reducible_dtypes()) {
    for (ReduceOp op : ops_for(dtype)) {
      ++call;
      const int64_t rows = 2, cols = 5, n = rows * size * cols;
      Tensor in = make_tensor(rank_values(g->rank(), call, n, dtype), {rows * size, cols}, dtype);
      Tensor out = Tensor::empty({rows, cols}, dtype);
      g->reduce_scatter(out, in, op)->wait();
      const std::vector<double> all = reference(call, n, dtype, op, size);
      const std::vector<double> expected(all.begin() + g->rank() * rows * cols,
                                         all.begin() + (g->rank() + 1) * rows * cols);
      expect_close(read_tensor(out), expected,
                   op == ReduceOp::Avg ? avg_tolerance(dtype) : tolerance(dtype),
                   std::string(dtype_name(dtype)) + " " + reduce_op_name(op));
    }
  }
}

TEST(DistBarrier, WaitsForTheSlowestRank) {
  auto g = group();
  g->barrier()->wait();
  const auto start = std::chrono::steady_clock::now();
  const auto step = std::chrono::milliseconds(150);
  std::this_thread::sleep_for(step * g->rank());
  g->barrier()->wait();
  // Every rank leaves after the last has arrived, (size - 1) steps after the first barrier.
  EXPECT_GE(std::chrono::steady_clock::now() - start, step * (g->size() - 1) - step / 3);
}

}  // namespace rcuda::test::dist
