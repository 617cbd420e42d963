// The NCCL backend on CUDA tensors against the same references as the MPI backend's tests, at
// whatever world size runs (one rank per GPU; the GPU machine runs it at world size 1). Skipped
// where CUDA or NCCL was not built or this rank has no GPU.
#include "dist/dist_support.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/ops/copy.h"

namespace rcuda::test::dist {

namespace {

using rcuda::dist::ReduceOp;

// Makes the NCCL group the default for the test, and the MPI one again after it.
class NcclGroup : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!rcuda::cuda::is_built() || rcuda::cuda::device_count() == 0)
      GTEST_SKIP() << "no CUDA device";
    if (rcuda::dist::launch_info().local_rank >= rcuda::cuda::device_count())
      GTEST_SKIP() << "more ranks on this machine than GPUs";
    rcuda::dist::destroy_process_group();
    rcuda::dist::ProcessGroupOptions options;
    options.backend = rcuda::dist::Backend::Nccl;
    options.timeout = std::chrono::seconds(60);
    try {
      group_ = rcuda::dist::init_process_group(options);
    } catch (const ValueError& e) {
      restart_group();
      GTEST_SKIP() << e.what();
    }
    device_ = Device(DeviceType::CUDA, rcuda::dist::launch_info().local_rank);
  }
  void TearDown() override {
    if (!group_) return;
    group_.reset();
    restart_group();
  }
  Tensor on_gpu(const Tensor& t) const { return ops::to(t, device_); }
  static Tensor on_cpu(const Tensor& t) { return ops::to(t, Device()); }

  std::shared_ptr<rcuda::dist::ProcessGroup> group_;
  Device device_;
};

}  // namespace

TEST_F(NcclGroup, AllReduceEveryOpAndDtype) {
  auto& g = group_;
  EXPECT_EQ(g->backend(), rcuda::dist::Backend::Nccl);
  int call = 0;
  for (DType dtype : {DType::Bool, DType::UInt8, DType::Int8, DType::Int32, DType::Int64,
                      DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg}) {
      if (op == ReduceOp::Avg && !is_floating(dtype)) continue;
      ++call;
      Tensor t = on_gpu(make_tensor(rank_values(g->rank(), call, 40, dtype), {4, 10}, dtype));
      g->all_reduce(t, op)->wait();
      const double tol = op != ReduceOp::Avg        ? tolerance(dtype)
                         : dtype == DType::Float16  ? 1e-3
                         : dtype == DType::BFloat16 ? 8e-3
                                                    : tolerance(dtype);
      expect_close(read_tensor(on_cpu(t)), reference(call, 40, dtype, op, g->size()), tol,
                   std::string(dtype_name(dtype)) + " " + reduce_op_name(op));
    }
  }
  EXPECT_THROW(g->all_reduce(on_gpu(Tensor::empty({2}, DType::Int16)), ReduceOp::Sum), DTypeError);
  EXPECT_THROW(g->all_reduce(Tensor::empty({2}, DType::Float32), ReduceOp::Sum), DeviceError);
}

TEST_F(NcclGroup, BroadcastAllGatherReduceScatterBarrier) {
  auto& g = group_;
  const int size = g->size();
  for (DType dtype : all_dtypes()) {
    Tensor t = on_gpu(random_bytes(g->rank(), 1, {3, 5}, dtype));
    g->broadcast(t, size - 1)->wait();
    EXPECT_EQ(bytes_of(on_cpu(t)), bytes_of(random_bytes(size - 1, 1, {3, 5}, dtype)))
        << dtype_name(dtype);

    Tensor in = on_gpu(random_bytes(g->rank(), 2, {2, 3}, dtype));
    Tensor out = Tensor::empty({2 * size, 3}, dtype, device_);
    g->all_gather(out, in)->wait();
    std::vector<uint8_t> expected;
    for (int r = 0; r < size; ++r) {
      const auto b = bytes_of(random_bytes(r, 2, {2, 3}, dtype));
      expected.insert(expected.end(), b.begin(), b.end());
    }
    EXPECT_EQ(bytes_of(on_cpu(out)), expected) << dtype_name(dtype);
  }
  const int64_t n = 2 * size * 4;
  Tensor in = on_gpu(
      make_tensor(rank_values(g->rank(), 3, n, DType::Float32), {2 * size, 4}, DType::Float32));
  Tensor out = Tensor::empty({2, 4}, DType::Float32, device_);
  g->reduce_scatter(out, in, ReduceOp::Avg)->wait();
  const auto all = reference(3, n, DType::Float32, ReduceOp::Avg, size);
  expect_close(read_tensor(on_cpu(out)),
               std::vector<double>(all.begin() + g->rank() * 8, all.begin() + (g->rank() + 1) * 8),
               1e-6, "float32 reduce_scatter avg");
  auto work = g->barrier();
  work->wait();
  rcuda::cuda::synchronize(device_.index);
  EXPECT_TRUE(work->completed());
  Tensor empty = Tensor::empty({0, 2}, DType::Float32, device_);
  g->all_reduce(empty, ReduceOp::Sum)->wait();
}

}  // namespace rcuda::test::dist
