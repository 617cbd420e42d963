// LU-based ops: lu_factor, lu, solve, inv, det, slogdet, tensorinv, tensorsolve
// (rcuda/ops/linalg_factor.h). One getrf per matrix; solve and inv add one getrs.
#include <algorithm>
#include <functional>
#include <numeric>
#include <string>

#include "linalg_util.h"
#include "ops_util.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/indexing.h"
#include "rcuda/ops/linalg_factor.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::ops {
namespace {

using linalg::column_major;
using linalg::count;
using linalg::from_column_major;
using linalg::with_dims;

std::string singular_for_solve(int32_t) {
  return "The solver failed because the input matrix is singular.";
}
std::string singular_for_inv(int32_t info) {
  return detail::concat("The diagonal element ", info,
                        " is zero, the inversion could not be completed because the input "
                        "matrix is singular.");
}

// X = A^-1 B for A [batch, n, n] and B [batch, n, k] of one batch shape, one dtype and device,
// and getrf's info [batch]. With `singular` set, a singular A is a ValueError it words (a host
// read, Note [Solver errors]); without, the result holds what getrs gives (inf or nan).
ExResult lu_solve(const char* op, const Tensor& A, const Tensor& B,
                  std::string (*singular)(int32_t)) {
  const Shape batch = linalg::batch_shape(A);
  const int64_t n = A.shape()[A.dim() - 1], k = B.shape()[B.dim() - 1];
  if (count(batch) == 0 || n == 0 || k == 0)
    return {zeros(B.shape(), {B.dtype(), B.device()}), zeros(batch, {DType::Int32, A.device()})};
  Tensor lu = column_major(A);
  Tensor pivots = empty({count(batch), n}, {DType::Int32, A.device()});
  Tensor info = linalg::info_buffer(count(batch), A.device());
  Solver& solver = solver_for(A.device());
  solver.lu_factor(lu, pivots, info);
  if (singular != nullptr) linalg::check_info(op, info, !batch.empty(), singular);
  Tensor rhs = column_major(B);
  solver.lu_solve(lu, pivots, rhs);
  return {from_column_major(rhs, batch), info.view(batch)};
}

// The sign of the permutation in getrf's pivots [..., k]: (-1)^(number of actual swaps).
Tensor permutation_sign(const Tensor& pivots, DType dtype) {
  const int64_t k = pivots.shape()[pivots.dim() - 1];
  const Tensor identity = arange(1, k + 1, 1, DType::Int32, pivots.device());
  const Tensor swaps = sum(ne(pivots, identity), {-1}, false, DType::Int64);
  // 1 - 2 * (swaps mod 2)
  return to(sub(ones_like(swaps), mul(remainder(swaps, Scalar(2)), Scalar(2))), dtype);
}

}  // namespace

LuFactorResult linalg_lu_factor(const Tensor& A) {
  const char* op = "linalg.lu_factor";
  linalg::check_matrix(op, "A", A);
  const Shape batch = linalg::batch_shape(A);
  const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1], k = std::min(m, n);
  Shape pivot_shape = batch;
  pivot_shape.push_back(k);
  if (count(batch) == 0 || k == 0)
    return {clone(A), zeros(pivot_shape, {DType::Int32, A.device()})};
  Tensor lu = column_major(A);
  Tensor pivots = empty({count(batch), k}, {DType::Int32, A.device()});
  Tensor info = linalg::info_buffer(count(batch), A.device());
  solver_for(A.device()).lu_factor(lu, pivots, info);  // a zero pivot is a valid factorisation
  return {from_column_major(lu, batch), pivots.view(pivot_shape)};
}

LuResult linalg_lu(const Tensor& A) {
  const char* op = "linalg.lu";
  linalg::check_matrix(op, "A", A);
  const int64_t m = A.shape()[A.dim() - 2], n = A.shape()[A.dim() - 1], k = std::min(m, n);
  const LuFactorResult f = linalg_lu_factor(A);
  const Tensor eye_mk = eye(m, k, {A.dtype(), A.device()});
  const Tensor L = add(linalg::tril(f.LU.narrow(-1, 0, k), -1), eye_mk);
  const Tensor U = linalg::triu(f.LU.narrow(-2, 0, k));
  const Shape batch = linalg::batch_shape(A);
  Tensor P;
  if (count(batch) == 0 || k == 0) {
    P = linalg::batched_eye(batch, m, m, A);
  } else {
    Tensor perm = empty({count(batch), m}, {DType::Int64, A.device()});
    solver_for(A.device())
        .pivots_to_permutation(contiguous(f.pivots).view({count(batch), k}), perm);
    // one_hot(perm)[b][i][perm[i]] = 1 is P^T (Note on pivots_to_permutation in solver.h).
    P = reshape(linalg::mT(to(one_hot(perm, m), A.dtype())), with_dims(batch, {m, m}));
  }
  return {P, L, U};
}

namespace {

ExResult solve_impl(const Tensor& A, const Tensor& B, bool check) {
  const char* op = "linalg.solve";
  linalg::check_matrix(op, "A", A, /*square=*/true);
  RCUDA_CHECK(B.dim() >= 1, ShapeError, op, ": B must have at least 1 dimension, got a 0-d tensor");
  RCUDA_CHECK(B.dtype() == A.dtype(), DTypeError, op,
              ": Expected A and B to have the same dtype, but found A of type ",
              dtype_name(A.dtype()), " and B of type ", dtype_name(B.dtype()), " instead");
  check_same_device(op, {A, B});
  const int64_t n = A.shape()[A.dim() - 1];
  // torch's rule: B is a (batch of) vector(s) when it is 1-D or has A's batch shape plus one.
  const Shape a_batch_n(A.shape().begin(), A.shape().end() - 1);
  const bool vector = B.dim() == 1 || (B.dim() == A.dim() - 1 && B.shape() == a_batch_n);
  const Tensor B2 = vector ? B.unsqueeze(-1) : B;
  RCUDA_CHECK(B2.dim() >= 2 && B2.shape()[B2.dim() - 2] == n, ShapeError, op,
              ": Incompatible shapes of A and B for the equation AX = B (", shape_str(A.shape()),
              " and ", shape_str(B.shape()), ")");
  const int64_t k = B2.shape()[B2.dim() - 1];
  const Shape batch = broadcast_shapes(linalg::batch_shape(A), linalg::batch_shape(B2), op);
  ExResult r = lu_solve(op, A.expand(with_dims(batch, {n, n})), B2.expand(with_dims(batch, {n, k})),
                        check ? singular_for_solve : nullptr);
  if (vector) r.result = r.result.squeeze(-1);
  return r;
}

ExResult inv_impl(const Tensor& A, bool check) {
  const char* op = "linalg.inv";
  linalg::check_matrix(op, "A", A, /*square=*/true);
  const int64_t n = A.shape()[A.dim() - 1];
  const Tensor identity = linalg::eye_like(n, A).expand(A.shape());
  return lu_solve(op, A, identity, check ? singular_for_inv : nullptr);
}

}  // namespace

Tensor linalg_solve(const Tensor& A, const Tensor& B) { return solve_impl(A, B, true).result; }
ExResult linalg_solve_ex(const Tensor& A, const Tensor& B) { return solve_impl(A, B, false); }
Tensor linalg_inv(const Tensor& A) { return inv_impl(A, true).result; }
ExResult linalg_inv_ex(const Tensor& A) { return inv_impl(A, false); }

Tensor linalg_det(const Tensor& A) {
  linalg::check_matrix("linalg.det", "A", A, /*square=*/true);
  const LuFactorResult f = linalg_lu_factor(A);
  const Tensor diagonal_product = prod(f.LU.diagonal(0, -2, -1), {-1});
  return mul(diagonal_product, permutation_sign(f.pivots, A.dtype()));
}

SlogdetResult linalg_slogdet(const Tensor& A) {
  linalg::check_matrix("linalg.slogdet", "A", A, /*square=*/true);
  const LuFactorResult f = linalg_lu_factor(A);
  const Tensor diagonal = f.LU.diagonal(0, -2, -1);
  const Tensor sign_value =
      mul(prod(ops::sign(diagonal), {-1}), permutation_sign(f.pivots, A.dtype()));
  return {sign_value, sum(log(abs(diagonal)), {-1})};
}

namespace {
int64_t product(const Shape& s, size_t from, size_t to) {
  return std::accumulate(s.begin() + from, s.begin() + to, int64_t{1}, std::multiplies<>());
}
}  // namespace

Tensor linalg_tensorinv(const Tensor& A, int64_t ind) {
  const char* op = "linalg.tensorinv";
  RCUDA_CHECK(ind > 0, ValueError, op, ": Expected a strictly positive integer for 'ind', but got ",
              ind);
  RCUDA_CHECK(ind <= A.dim(), ValueError, op, ": ind = ", ind, " is more than A's ", A.dim(),
              " dims");
  const Shape& s = A.shape();
  const int64_t rows = product(s, 0, ind), cols = product(s, ind, s.size());
  RCUDA_CHECK(rows == cols, ShapeError, op,
              ": Expected self to satisfy the requirement prod(self.shape[ind:]) == "
              "prod(self.shape[:ind]), but got ",
              cols, " != ", rows, " for shape ", shape_str(s));
  Shape out(s.begin() + ind, s.end());
  out.insert(out.end(), s.begin(), s.begin() + ind);
  return reshape(linalg_inv(reshape(A, {rows, cols})), out);
}

Tensor linalg_tensorsolve(const Tensor& A, const Tensor& B,
                          const std::optional<std::vector<int64_t>>& dims) {
  const char* op = "linalg.tensorsolve";
  Tensor a = A;
  if (dims && !dims->empty()) {
    // Move the given dims of A to the end, in their order.
    std::vector<int64_t> order, moved;
    for (int64_t d : *dims) {
      RCUDA_CHECK(d >= -A.dim() && d < A.dim(), IndexError, op, ": dim ", d,
                  " out of range for A with ", A.dim(), " dims");
      moved.push_back(d < 0 ? d + A.dim() : d);
    }
    for (int64_t d = 0; d < A.dim(); ++d)
      if (std::find(moved.begin(), moved.end(), d) == moved.end()) order.push_back(d);
    order.insert(order.end(), moved.begin(), moved.end());
    a = A.permute(order);
  }
  const Shape& s = a.shape();
  RCUDA_CHECK(B.dim() <= a.dim() && Shape(s.begin(), s.begin() + B.dim()) == B.shape(), ShapeError,
              op, ": Expected A's leading dims to be B's shape ", shape_str(B.shape()),
              ", got A of shape ", shape_str(s));
  const int64_t rows = B.numel(), cols = product(s, B.dim(), s.size());
  RCUDA_CHECK(rows == cols, ShapeError, op,
              ": Expected self to satisfy the requirement prod(result.shape) == prod(other.shape), "
              "but got ",
              cols, " != ", rows);
  const Shape out(s.begin() + B.dim(), s.end());
  return reshape(linalg_solve(reshape(a, {rows, cols}), reshape(B, {rows})), out);
}

}  // namespace rcuda::ops
