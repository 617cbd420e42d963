// Gradients of the factorisations (rcuda/autograd/linalg_factor.h) against float64 central
// differences (tests/autograd/gradcheck.h). Inputs are shifted so that every function is smooth
// where it is checked: well-conditioned matrices for solve, inv and det, positive-definite
// ones for cholesky, distinct eigenvalues and singular values (random matrices almost surely).
// Eigenvectors and singular vectors are defined up to sign, so the checked functions are ones
// the sign does not change (V * V, U @ Vh), as PyTorch's own gradchecks do.
#include "autograd/gradcheck.h"
#include "ops/linalg_reference.h"

namespace rcuda::test {
namespace {

// A float64 leaf of well-conditioned matrices (values in [-1, 1) plus n on the diagonal).
Tensor matrix_leaf(const Shape& shape, bool transposed = false) {
  Tensor t = well_conditioned(shape, DType::Float64);
  if (transposed) t = transposed_copy(t);
  t.requires_grad_();
  return t;
}

Tensor sym(const Tensor& x) { return add(x, x.transpose(-2, -1)); }

TEST(GradLinalgFactor, Solve) {
  auto f = [](const TensorList& x) { return linalg_solve(x[0], x[1]); };
  EXPECT_TRUE(gradcheck(f, {matrix_leaf({3, 3}), leaf({3, 2})}));
  EXPECT_TRUE(gradcheck(f, {matrix_leaf({2, 3, 3}), leaf({3})}));           // a vector, broadcast
  EXPECT_TRUE(gradcheck(f, {matrix_leaf({2, 1, 3, 3}), leaf({4, 3, 2})}));  // batch broadcast
  EXPECT_TRUE(gradcheck(f, {matrix_leaf({4, 4}, true), leaf_transposed({4, 2})}));
}

TEST(GradLinalgFactor, InvDetSlogdet) {
  EXPECT_TRUE(
      gradcheck([](const TensorList& x) { return linalg_inv(x[0]); }, {matrix_leaf({2, 4, 4})}));
  EXPECT_TRUE(
      gradcheck([](const TensorList& x) { return linalg_det(x[0]); }, {matrix_leaf({3, 3, 3})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return linalg_det(x[0]); }, {leaf({4, 4})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return linalg_slogdet(x[0]).logabsdet; },
                        {leaf({2, 4, 4})}));
}

TEST(GradLinalgFactor, Cholesky) {
  // A = x x^T + 3 I is positive-definite for every x.
  for (bool upper : {false, true}) {
    auto f = [upper](const TensorList& x) {
      const Tensor a =
          add(matmul(x[0], x[0].transpose(-2, -1)), mul(eye(3, 3, DType::Float64), 3.0));
      return linalg_cholesky(a, upper);
    };
    EXPECT_TRUE(gradcheck(f, {leaf({2, 3, 3})})) << "upper " << upper;
  }
}

TEST(GradLinalgFactor, QrReducedTallSquareAndWide) {
  for (const Shape& shape : {Shape{5, 3}, Shape{2, 3, 3}, Shape{3, 5}}) {
    EXPECT_TRUE(gradcheck([](const TensorList& x) { return linalg_qr(x[0]).Q; }, {leaf(shape)}))
        << shape_str(shape);
    EXPECT_TRUE(gradcheck([](const TensorList& x) { return linalg_qr(x[0]).R; }, {leaf(shape)}))
        << shape_str(shape);
    EXPECT_TRUE(gradcheck(
        [](const TensorList& x) {
          const QrResult r = linalg_qr(x[0]);
          return add(sum(r.Q), sum(r.R));
        },
        {leaf(shape)}))
        << shape_str(shape);
  }
}

TEST(GradLinalgFactor, QrCompleteTallRefusesBackward) {
  const Tensor x = leaf({4, 2});
  const QrResult r = linalg_qr(x, "complete");
  EXPECT_NE(error_message([&] { autograd::backward(sum(r.Q)); }).find("mode='complete'"),
            std::string::npos);
}

TEST(GradLinalgFactor, EighValuesAndVectors) {
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return linalg_eigh(sym(x[0])).eigenvalues; },
                        {leaf({2, 4, 4})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return linalg_eigvalsh(sym(x[0]), "U"); },
                        {leaf({4, 4})}));
  EXPECT_TRUE(gradcheck(
      [](const TensorList& x) {
        const Tensor v = linalg_eigh(sym(x[0])).eigenvectors;
        return mul(v, v);
      },
      {leaf({3, 3})}, 1e-6, 1e-5));
}

TEST(GradLinalgFactor, SvdValuesAndVectors) {
  for (const Shape& shape : {Shape{4, 3}, Shape{3, 5}, Shape{2, 3, 3}}) {
    EXPECT_TRUE(gradcheck([](const TensorList& x) { return linalg_svdvals(x[0]); }, {leaf(shape)}))
        << shape_str(shape);
    EXPECT_TRUE(gradcheck(
        [](const TensorList& x) {
          const SvdResult s = linalg_svd(x[0], false);
          return matmul(s.U, s.Vh);
        },
        {leaf(shape)}, 1e-6, 1e-5))
        << shape_str(shape);
    EXPECT_TRUE(gradcheck(
        [](const TensorList& x) {
          const SvdResult s = linalg_svd(x[0], false);
          return add(sum(mul(s.U, s.U), {-1}), sum(mul(s.S, s.S)));
        },
        {leaf(shape)}, 1e-6, 1e-5))
        << shape_str(shape);
  }
  // full_matrices: the gradient of S and of the first k vectors is the reduced one.
  EXPECT_TRUE(
      gradcheck([](const TensorList& x) { return linalg_svd(x[0], true).S; }, {leaf({4, 2})}));
}

TEST(GradLinalgFactor, ComposedPinvCondTensorinvTensorsolve) {
  EXPECT_TRUE(
      gradcheck([](const TensorList& x) { return linalg_pinv(x[0]); }, {leaf({4, 3})}, 1e-6, 1e-5));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return linalg_pinv(sym(x[0]), {}, true); },
                        {matrix_leaf({3, 3})}, 1e-6, 1e-5));
  EXPECT_TRUE(
      gradcheck([](const TensorList& x) { return linalg_cond(x[0]); }, {matrix_leaf({3, 3})}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return linalg_tensorinv(x[0], 1); }, {[] {
                          Tensor t = reshape(well_conditioned({4, 4}, DType::Float64), {4, 2, 2});
                          t.requires_grad_();
                          return t;
                        }()}));
  EXPECT_TRUE(gradcheck([](const TensorList& x) { return linalg_tensorsolve(x[0], x[1]); },
                        {[] {
                           Tensor t = reshape(well_conditioned({4, 4}, DType::Float64), {2, 2, 4});
                           t.requires_grad_();
                           return t;
                         }(),
                         leaf({2, 2})}));
}

TEST(GradLinalgFactor, NodesAreNamedAfterTorchsAndNoGradRecordsNothing) {
  const Tensor x = matrix_leaf({3, 3});
  EXPECT_STREQ(linalg_inv(x).grad_fn()->name(), "LinalgInvExBackward");
  EXPECT_STREQ(linalg_svd(x).S.grad_fn()->name(), "LinalgSvdBackward");
  NoGradGuard guard;
  EXPECT_EQ(linalg_det(x).grad_fn(), nullptr);
}

}  // namespace
}  // namespace rcuda::test
