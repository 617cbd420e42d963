// Calls that cannot work: arguments every rank refuses on its own (before any exchange), and
// calls the ranks disagree on, which must be a DistError on every rank naming what differs,
// with the tensors untouched.
#include <cstdlib>

#include "dist/dist_support.h"
#include "rcuda/backend/cuda.h"

namespace rcuda::test::dist {

namespace {

using rcuda::dist::ReduceOp;

// Runs `body` (which every rank calls with its own arguments), expects a DistError containing
// each of `parts` on every rank, then starts a fresh group: the failed one is unusable.
template <typename F>
void expect_disagreement(F&& body, const std::vector<std::string>& parts) {
  const std::string message = dist_error_of(body);
  EXPECT_FALSE(message.empty()) << "no DistError";
  for (const std::string& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  // The failed group refuses every later call.
  EXPECT_THROW(group()->barrier(), rcuda::dist::DistError);
  restart_group();
}

}  // namespace

TEST(DistGroup, RankAndSizeAreTheLaunchersAndMpis) {
  auto g = group();
  const rcuda::dist::LaunchInfo launch = rcuda::dist::launch_info();
  // mpirun in make test; tests/dist/slurm_single_node.sh sets RCUDA_EXPECT_LAUNCHER=slurm.
  const char* expected = std::getenv("RCUDA_EXPECT_LAUNCHER");
  EXPECT_EQ(launch.launcher, expected != nullptr ? expected : "mpirun");
  EXPECT_EQ(g->rank(), launch.rank);
  EXPECT_EQ(g->size(), launch.world_size);
  EXPECT_EQ(g->backend(), rcuda::dist::Backend::Mpi);
  EXPECT_TRUE(rcuda::dist::is_initialized());
  EXPECT_EQ(rcuda::dist::default_group(), g);
}

TEST(DistGroup, ASecondDefaultGroupIsAValueError) {
  EXPECT_THROW(rcuda::dist::init_process_group(), ValueError);
}

TEST(DistGroup, NcclWithoutCudaIsAValueErrorSayingSo) {
  if (rcuda::cuda::is_built()) GTEST_SKIP() << "a CUDA build: NCCL may be built";
  rcuda::dist::destroy_process_group();
  EXPECT_FALSE(rcuda::dist::is_initialized());
  EXPECT_EQ(rcuda::dist::default_group(), nullptr);
  rcuda::dist::ProcessGroupOptions options;
  options.backend = rcuda::dist::Backend::Nccl;
  try {
    rcuda::dist::init_process_group(options);
    ADD_FAILURE() << "no ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("nccl backend was not built"), std::string::npos)
        << e.what();
  }
  restart_group();
}

TEST(DistArguments, NonContiguousTensorsAreRefusedNamingTheArgument) {
  auto g = group();
  Tensor t = Tensor::empty({4, 3}, DType::Float32).t();
  try {
    g->all_reduce(t, ReduceOp::Sum);
    ADD_FAILURE() << "no ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce: tensor must be contiguous"),
              std::string::npos)
        << e.what();
  }
  Tensor out = Tensor::empty({3 * g->size(), 4}, DType::Float32);
  try {
    g->all_gather(out, t);
    ADD_FAILURE() << "no ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("all_gather: in must be contiguous"), std::string::npos)
        << e.what();
  }
  Tensor strided_out = Tensor::empty({3, 2 * g->size()}, DType::Float32).t();
  EXPECT_THROW(g->reduce_scatter(Tensor::empty({2, 3}, DType::Float32), strided_out, ReduceOp::Sum),
               ValueError);
  EXPECT_THROW(g->broadcast(t, 0), ValueError);
  g->barrier()->wait();  // nothing was exchanged: the group still agrees
}

TEST(DistArguments, DtypesRootsAndShapesEveryRankRefuses) {
  auto g = group();
  EXPECT_THROW(g->all_reduce(Tensor::empty({3}, DType::Int32), ReduceOp::Avg), DTypeError);
  EXPECT_THROW(g->all_reduce(Tensor::empty({3}, DType::Complex64), ReduceOp::Sum), DTypeError);
  EXPECT_THROW(g->all_reduce(Tensor::empty({3}, DType::Float8E4M3FN), ReduceOp::Max), DTypeError);
  EXPECT_THROW(g->broadcast(Tensor::empty({3}, DType::Float32), g->size()), IndexError);
  EXPECT_THROW(g->broadcast(Tensor::empty({3}, DType::Float32), -1), IndexError);
  EXPECT_THROW(g->all_gather(Tensor::empty({2 * g->size() + 1}, DType::Float32),
                             Tensor::empty({2}, DType::Float32)),
               ShapeError);
  EXPECT_THROW(g->all_gather(Tensor::empty({2 * g->size()}, DType::Float64),
                             Tensor::empty({2}, DType::Float32)),
               DTypeError);
  EXPECT_THROW(g->reduce_scatter(Tensor::empty({3}, DType::Float32),
                                 Tensor::empty({3 * g->size() - 1}, DType::Float32), ReduceOp::Sum),
               ShapeError);
  EXPECT_THROW(g->all_reduce(Tensor(), ReduceOp::Sum), ValueError);
  // `in` overlapping `out` other than as this rank's rows.
  Tensor out = Tensor::empty({2 * g->size()}, DType::Float32);
  if (g->size() > 1) {
    EXPECT_THROW(g->all_gather(out, out.narrow(0, 2 * ((g->rank() + 1) % g->size()), 2)),
                 ValueError);
  }
  g->barrier()->wait();
}

TEST(DistAgreement, MismatchedShapesAreADistErrorOnEveryRank) {
  const int rank = group()->rank();
  const int64_t n = rank == 0 ? 4 : 5;
  Tensor t = make_tensor(std::vector<double>(n, 7.0), {n}, DType::Float32);
  expect_disagreement([&] { group()->all_reduce(t, ReduceOp::Sum)->wait(); },
                      {"all_reduce #", "ranks disagree on the shape", "rank 0: [4]", ": [5]"});
  EXPECT_EQ(read_tensor(t), std::vector<double>(n, 7.0)) << "the tensor was touched";
}

TEST(DistAgreement, MismatchedDtypes) {
  const DType dtype = group()->rank() == group()->size() - 1 ? DType::Int64 : DType::Float64;
  Tensor t = Tensor::empty({6}, dtype);
  expect_disagreement([&] { group()->broadcast(t, 0)->wait(); },
                      {"broadcast #", "ranks disagree on the dtype", "float64", "int64"});
}

TEST(DistAgreement, MismatchedCollectives) {
  Tensor t = Tensor::empty({6}, DType::Float32);
  expect_disagreement(
      [&] {
        if (group()->rank() == 0)
          group()->broadcast(t, 0)->wait();
        else
          group()->all_reduce(t, ReduceOp::Sum)->wait();
      },
      {"ranks disagree on the collective", "rank 0: broadcast", "all_reduce"});
}

TEST(DistAgreement, MismatchedRootsAndOps) {
  Tensor t = Tensor::empty({2}, DType::Float32);
  expect_disagreement([&] { group()->broadcast(t, group()->rank() == 0 ? 0 : 1)->wait(); },
                      {"ranks disagree on the root"});
  expect_disagreement(
      [&] { group()->all_reduce(t, group()->rank() == 0 ? ReduceOp::Max : ReduceOp::Min)->wait(); },
      {"ranks disagree on the reduce op", "max", "min"});
}

TEST(DistAgreement, MismatchedGatherSizes) {
  const int64_t n = group()->rank() == 1 ? 3 : 2;
  Tensor in = Tensor::empty({n, 2}, DType::Int32);
  Tensor out = Tensor::empty({n * group()->size(), 2}, DType::Int32);
  expect_disagreement([&] { group()->all_gather(out, in)->wait(); },
                      {"all_gather #", "ranks disagree on the shape", "rank 1: [3, 2]"});
}

}  // namespace rcuda::test::dist
