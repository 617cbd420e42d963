// Sparse COO tensors on CUDA against the CPU (itself checked against loops in
// tests/ops/test_sparse.cpp): cuSPARSE's SpMM and its transposed form (the dense gradient),
// coalesce and to_dense through the device-agnostic ops, both floating dtypes.
#include <gtest/gtest.h>

#include "rcuda/autograd/sparse.h"
#include "support/devices.h"
#include "support/sparse_reference.h"

namespace rcuda::test {
namespace {

TEST(CudaSparse, MatchesTheCpu) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const int64_t n = 300, m = 200, k = 33, nnz = 2000;  // repeats likely: coalesce runs
    const Tensor indices = random_indices(n, m, nnz);
    const Tensor entries = random_tensor({nnz}, dtype);
    const Tensor b = random_tensor({m, k}, dtype);
    const SparseCooTensor cpu = ops::sparse_coo_tensor(indices, entries, Shape{n, m});
    const SparseCooTensor gpu =
        ops::sparse_coo_tensor(on_cuda(indices), on_cuda(entries), Shape{n, m});
    const double tol = 10 * backend_tolerance(dtype);
    EXPECT_TRUE(all_close(values(ops::to_dense(gpu)), values(ops::to_dense(cpu)), tol));
    const SparseCooTensor cg = ops::coalesce(gpu), cc = ops::coalesce(cpu);
    EXPECT_EQ(values(cg.indices), values(cc.indices));
    EXPECT_TRUE(all_close(values(cg.values), values(cc.values), tol));
    EXPECT_TRUE(
        all_close(values(ops::sparse_mm(gpu, on_cuda(b))), values(ops::sparse_mm(cpu, b)), tol));
    const Tensor grad = random_tensor({n, k}, dtype);
    EXPECT_TRUE(all_close(values(ops::sparse_mm_backward_dense(gpu, on_cuda(grad))),
                          values(ops::sparse_mm_backward_dense(cpu, grad)), tol));
    EXPECT_TRUE(all_close(values(ops::sparse_mm_backward_values(gpu, on_cuda(b), on_cuda(grad))),
                          values(ops::sparse_mm_backward_values(cpu, b, grad)), tol));
    const Tensor x = ops::to_dense(cpu);
    EXPECT_EQ(values(ops::to_sparse(on_cuda(x)).indices), values(ops::to_sparse(x).indices));
  }
}

TEST(CudaSparse, GradientsMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  const Tensor indices = random_indices(40, 30, 100);
  const Tensor entries = random_tensor({100}, DType::Float64);
  const Tensor b = random_tensor({30, 7}, DType::Float64);
  std::vector<std::vector<double>> grads;
  for (Device device : {kCpu, kCuda}) {
    const Tensor v = to(entries, device).requires_grad_();
    const Tensor bd = to(b, device).requires_grad_();
    const Tensor out = sparse_mm(ops::sparse_coo_tensor(to(indices, device), v, Shape{40, 30}), bd);
    autograd::backward(sum(mul(out, out)));
    grads.push_back(values(v.grad()));
    grads.push_back(values(bd.grad()));
  }
  EXPECT_TRUE(all_close(grads[2], grads[0], 1e-12));
  EXPECT_TRUE(all_close(grads[3], grads[1], 1e-12));
}

TEST(CudaSparse, DeviceMismatchIsAnError) {
  RCUDA_REQUIRE_CUDA();
  const Tensor indices = random_indices(3, 3, 4);
  EXPECT_THROW(ops::sparse_coo_tensor(on_cuda(indices), random_tensor({4}, DType::Float32)),
               DeviceError);
  const SparseCooTensor s = ops::sparse_coo_tensor(indices, random_tensor({4}, DType::Float32));
  EXPECT_THROW(ops::sparse_mm(s, on_cuda(random_tensor({3, 2}, DType::Float32))), DeviceError);
}

}  // namespace
}  // namespace rcuda::test
