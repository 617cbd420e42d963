// The CUDA solver (cuSOLVER) against the CPU's (LAPACK, itself checked against double loops in
// tests/ops/test_linalg_factor.cpp): the same fresh random matrices on both devices, the same
// op, results compared where they are unique (solve, inv, det, cholesky, eigenvalues, singular
// values, lu's factors, R up to the signs of its rows) and checked by reconstruction where
// they are not (Q, U, V up to signs). Also errors (which read info from the device) and
// gradients. Skipped without a GPU.
#include <cmath>
#include <string>
#include <vector>

#include "ops/linalg_reference.h"
#include "support/devices.h"

namespace rcuda {
namespace {

using test::error_message;
using test::kCpu;
using test::kCuda;
using test::Mat;
using test::matrices;
using test::on_cuda;
using test::random_tensor;

double tol(DType dtype) { return dtype == DType::Float32 ? 2e-4 : 1e-10; }

const std::vector<DType>& dtypes() {
  static const std::vector<DType> d = {DType::Float32, DType::Float64};
  return d;
}

::testing::AssertionResult same(const Tensor& gpu, const Tensor& cpu, double tolerance) {
  if (gpu.device() != kCuda) return ::testing::AssertionFailure() << "result not on cuda:0";
  if (gpu.shape() != cpu.shape())
    return ::testing::AssertionFailure()
           << "shape " << shape_str(gpu.shape()) << " != " << shape_str(cpu.shape());
  return test::all_close(test::values(gpu), test::to_doubles(cpu), tolerance);
}

TEST(CudaLinalgFactor, SolveInvDetSlogdetMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : dtypes()) {
    const Tensor A = test::well_conditioned({3, 5, 5}, dtype);
    const Tensor B = random_tensor({5, 2}, dtype);
    EXPECT_TRUE(same(linalg_solve(on_cuda(A), on_cuda(B)), linalg_solve(A, B), tol(dtype)));
    EXPECT_TRUE(same(linalg_inv(on_cuda(A)), linalg_inv(A), tol(dtype)));
    const Tensor R = random_tensor({4, 4, 4}, dtype);
    EXPECT_TRUE(same(linalg_det(on_cuda(R)), linalg_det(R), tol(dtype) * 10));
    EXPECT_TRUE(same(linalg_slogdet(on_cuda(R)).sign, linalg_slogdet(R).sign, 0));
    EXPECT_TRUE(
        same(linalg_slogdet(on_cuda(R)).logabsdet, linalg_slogdet(R).logabsdet, tol(dtype) * 10));
  }
}

TEST(CudaLinalgFactor, LuFactorsMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  const Tensor A = random_tensor({2, 6, 4}, DType::Float64);
  const LuResult g = linalg_lu(on_cuda(A)), c = linalg_lu(A);
  // Partial pivoting picks the same rows on both (ties aside, which random inputs avoid).
  EXPECT_TRUE(same(g.P, c.P, 0));
  EXPECT_TRUE(same(g.L, c.L, 1e-10));
  EXPECT_TRUE(same(g.U, c.U, 1e-10));
  EXPECT_TRUE(same(linalg_lu_factor(on_cuda(A)).pivots, linalg_lu_factor(A).pivots, 0));
}

TEST(CudaLinalgFactor, CholeskyAndEigenvaluesMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : dtypes()) {
    const Tensor S = test::positive_definite({3, 6, 6}, dtype);
    EXPECT_TRUE(same(linalg_cholesky(on_cuda(S)), linalg_cholesky(S), tol(dtype)));
    EXPECT_TRUE(same(linalg_cholesky(on_cuda(S), true), linalg_cholesky(S, true), tol(dtype)));
    EXPECT_TRUE(same(linalg_eigvalsh(on_cuda(S)), linalg_eigvalsh(S), tol(dtype) * 10));
    const EighResult e = linalg_eigh(on_cuda(S), "U");
    // V diag(w) V^T rebuilds S.
    const Tensor rebuilt =
        matmul(mul(e.eigenvectors, e.eigenvalues.unsqueeze(-2)), e.eigenvectors.transpose(-2, -1));
    EXPECT_TRUE(same(rebuilt, S, tol(dtype) * 10));
  }
}

TEST(CudaLinalgFactor, QrAndSvdRebuildAndMatchTheCpuUpToSigns) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : dtypes())
    for (const Shape& shape : {Shape{2, 7, 4}, Shape{3, 6}}) {
      const Tensor A = random_tensor(shape, dtype);
      for (const std::string mode : {"reduced", "complete"}) {
        const QrResult g = linalg_qr(on_cuda(A), mode), c = linalg_qr(A, mode);
        EXPECT_TRUE(same(matmul(g.Q, g.R), A, tol(dtype)));
        EXPECT_TRUE(same(abs(g.R), abs(c.R), tol(dtype) * 10));
      }
      for (bool full : {false, true}) {
        const SvdResult g = linalg_svd(on_cuda(A), full), c = linalg_svd(A, full);
        EXPECT_TRUE(same(g.S, c.S, tol(dtype)));
        const int64_t k = g.S.shape().back();
        const Tensor rebuilt =
            matmul(mul(g.U.narrow(-1, 0, k), g.S.unsqueeze(-2)), g.Vh.narrow(-2, 0, k));
        EXPECT_TRUE(same(rebuilt, A, tol(dtype) * 10));
      }
      EXPECT_TRUE(same(linalg_svdvals(on_cuda(A)), linalg_svdvals(A), tol(dtype)));
      EXPECT_TRUE(same(linalg_pinv(on_cuda(A)), linalg_pinv(A), tol(dtype) * 100));
      EXPECT_TRUE(same(linalg_matrix_rank(on_cuda(A)), linalg_matrix_rank(A), 0));
    }
}

TEST(CudaLinalgFactor, HouseholderLstsqAndTensorOpsMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  const Tensor A = random_tensor({2, 6, 3}, DType::Float64);
  const Tensor tau = random_tensor({2, 2}, DType::Float64);
  EXPECT_TRUE(same(linalg_householder_product(on_cuda(A), on_cuda(tau)),
                   linalg_householder_product(A, tau), 1e-12));
  // cuSOLVER's geqrf against LAPACK's: the same reflectors and R (both take LAPACK's dlarfg
  // convention), and Q from them rebuilds A.
  const GeqrfResult gq = geqrf(on_cuda(A)), cq = geqrf(A);
  EXPECT_TRUE(same(gq.a, cq.a, 1e-10));
  EXPECT_TRUE(same(gq.tau, cq.tau, 1e-10));
  const Tensor B = random_tensor({2, 6, 2}, DType::Float64);
  const LstsqResult g = linalg_lstsq(on_cuda(A), on_cuda(B)), c = linalg_lstsq(A, B);
  EXPECT_TRUE(same(g.solution, c.solution, 1e-10));
  EXPECT_TRUE(same(g.residuals, c.residuals, 1e-10));
  EXPECT_TRUE(same(g.rank, c.rank, 0));
  const Tensor T = reshape(test::well_conditioned({6, 6}, DType::Float64), {6, 2, 3});
  EXPECT_TRUE(same(linalg_tensorinv(on_cuda(T), 1), linalg_tensorinv(T, 1), 1e-10));
}

TEST(CudaLinalgFactor, ErrorsReadTheDeviceInfo) {
  RCUDA_REQUIRE_CUDA();
  const Tensor singular = on_cuda(test::tensor_of({1, 2, 2, 4}, {2, 2}, DType::Float64));
  EXPECT_EQ(error_message([&] { linalg_solve(singular, singular); }),
            "linalg.solve: The solver failed because the input matrix is singular.");
  const Tensor indefinite =
      on_cuda(test::tensor_of({2, 0, 0, 0, 1, 0, 0, 0, -1}, {3, 3}, DType::Float32));
  EXPECT_EQ(error_message([&] {
              linalg_cholesky(stack({indefinite, indefinite}));
            }),
            "linalg.cholesky: (Batch element 0): The factorization could not be completed because "
            "the input is not positive-definite (the leading minor of order 3 is not "
            "positive-definite).");
  // Empty batches never reach cuSOLVER.
  EXPECT_EQ(linalg_inv(on_cuda(Tensor::empty({0, 3, 3}, DType::Float32))).shape(),
            (Shape{0, 3, 3}));
}

TEST(CudaLinalgFactor, GradientsMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  const Tensor A = test::well_conditioned({2, 4, 4}, DType::Float64);
  auto grad_of = [](const Tensor& a, int which) {
    Tensor x = clone(a);
    x.requires_grad_();
    Tensor y;
    switch (which) {
      case 0:
        y = linalg_inv(x);
        break;
      case 1:
        y = linalg_det(x);
        break;
      case 2:
        y = linalg_svdvals(x);
        break;
      case 3:
        y = linalg_eigvalsh(add(x, x.transpose(-2, -1)));
        break;
      case 4:
        y = linalg_qr(x).R;
        break;
      default:
        y = linalg_cholesky(
            add(matmul(x, x.transpose(-2, -1)), eye(4, 4, {DType::Float64, x.device()})));
        break;
    }
    autograd::backward(sum(mul(y, y)));
    return x.grad();
  };
  for (int which = 0; which < 6; ++which)
    EXPECT_TRUE(same(grad_of(on_cuda(A), which), grad_of(A, which), 1e-8)) << "case " << which;
}

}  // namespace
}  // namespace rcuda
