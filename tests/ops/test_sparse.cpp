// Sparse COO tensors (rcuda/ops/sparse.h, docs/sparse.md): every op against the dense result of
// plain double loops over the entries, with repeated indices, no entries, non-contiguous values
// and both floating dtypes; the product's gradients against loops and central differences.
#include <gtest/gtest.h>

#include <map>

#include "rcuda/autograd/sparse.h"
#include "support/reference.h"
#include "support/sparse_reference.h"

namespace rcuda::test {
namespace {

// The dense matrix of a 2-D COO tensor, summed in double by a loop over the entries.
std::vector<double> dense_reference(const Tensor& indices, const Tensor& values, int64_t rows,
                                    int64_t cols) {
  const std::vector<double> idx = to_doubles(indices), v = to_doubles(values);
  const size_t nnz = v.size();
  std::vector<double> out(static_cast<size_t>(rows * cols), 0.0);
  for (size_t i = 0; i < nnz; ++i) {
    const auto r = static_cast<int64_t>(idx[i]), c = static_cast<int64_t>(idx[nnz + i]);
    out[static_cast<size_t>(r * cols + c)] += v[i];
  }
  return out;
}

std::vector<double> matmul_reference(const std::vector<double>& a, const std::vector<double>& b,
                                     int64_t n, int64_t m, int64_t k) {
  std::vector<double> out(static_cast<size_t>(n * k), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < m; ++p)
      for (int64_t j = 0; j < k; ++j)
        out[static_cast<size_t>(i * k + j)] +=
            a[static_cast<size_t>(i * m + p)] * b[static_cast<size_t>(p * k + j)];
  return out;
}

TEST(Sparse, ToDenseSumsRepeatedIndices) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor indices = random_indices(4, 5, 30);  // 30 entries in 20 places: repeats
    const Tensor values = random_tensor({30}, dtype);
    const SparseCooTensor s = ops::sparse_coo_tensor(indices, values, Shape{4, 5});
    EXPECT_FALSE(s.coalesced);
    const Tensor dense = ops::to_dense(s);
    EXPECT_EQ(dense.shape(), (Shape{4, 5}));
    EXPECT_EQ(dense.dtype(), dtype);
    EXPECT_TRUE(
        all_close(to_doubles(dense), dense_reference(indices, values, 4, 5), tolerance(dtype)));
  }
}

TEST(Sparse, CoalesceSortsAndSumsRepeats) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor indices = random_indices(3, 4, 25);
    const Tensor values = random_tensor({25}, dtype);
    const SparseCooTensor c = ops::coalesce(ops::sparse_coo_tensor(indices, values, Shape{3, 4}));
    EXPECT_TRUE(c.coalesced);
    // Expected: one entry per distinct place, in row-major order, values summed.
    std::map<std::pair<int64_t, int64_t>, double> sums;
    const std::vector<double> idx = to_doubles(indices), v = to_doubles(values);
    for (size_t i = 0; i < v.size(); ++i)
      sums[{static_cast<int64_t>(idx[i]), static_cast<int64_t>(idx[v.size() + i])}] += v[i];
    std::vector<double> want_idx(2 * sums.size()), want_values;
    size_t i = 0;
    for (const auto& [place, sum] : sums) {
      want_idx[i] = static_cast<double>(place.first);
      want_idx[sums.size() + i] = static_cast<double>(place.second);
      want_values.push_back(sum);
      ++i;
    }
    EXPECT_EQ(c.nnz(), static_cast<int64_t>(sums.size()));
    EXPECT_EQ(to_doubles(c.indices), want_idx);
    EXPECT_TRUE(all_close(to_doubles(c.values), want_values, tolerance(dtype)));
    // Coalescing again changes nothing.
    const SparseCooTensor again = ops::coalesce(c);
    EXPECT_TRUE(again.indices.is_same(c.indices));
  }
}

TEST(Sparse, HybridValuesAndNonContiguousValues) {
  // Values [nnz, 3] taken as a transposed view: one sparse dim, one dense dim.
  const Tensor base = random_tensor({3, 6}, DType::Float64);
  const Tensor values = base.t();  // [6, 3], not contiguous
  ASSERT_FALSE(values.is_contiguous());
  const Tensor indices = tensor_of({4, 0, 4, 2, 1, 0}, {1, 6}, DType::Int64);
  const SparseCooTensor s = ops::sparse_coo_tensor(indices, values, std::nullopt);
  EXPECT_EQ(s.size, (Shape{5, 3}));
  EXPECT_EQ(s.sparse_dim(), 1);
  EXPECT_EQ(s.dense_dim(), 1);
  const std::vector<double> v = to_doubles(values), idx = to_doubles(indices);
  std::vector<double> want(15, 0.0);
  for (size_t i = 0; i < 6; ++i)
    for (size_t j = 0; j < 3; ++j) want[static_cast<size_t>(idx[i]) * 3 + j] += v[i * 3 + j];
  EXPECT_TRUE(all_close(to_doubles(ops::to_dense(s)), want, 1e-12));
  EXPECT_TRUE(all_close(to_doubles(ops::to_dense(ops::coalesce(s))), want, 1e-12));
}

TEST(Sparse, ToSparseKeepsNonzerosInOrder) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    std::vector<double> d = to_doubles(random_tensor({3, 4, 2}, dtype));
    for (size_t i = 0; i < d.size(); ++i)
      if (rng()() % 2 == 0) d[i] = 0;
    for (size_t j = 0; j < 2; ++j) d[(1 * 4 + 2) * 2 + j] = 0;  // one whole block of zeros
    const Tensor x = tensor_of(d, {3, 4, 2}, dtype);
    const SparseCooTensor full = ops::to_sparse(x);
    EXPECT_TRUE(full.coalesced);
    EXPECT_EQ(full.sparse_dim(), 3);
    std::vector<double> want_values;
    for (double value : d)
      if (value != 0) want_values.push_back(value);
    EXPECT_EQ(to_doubles(full.values), want_values);
    EXPECT_EQ(to_doubles(ops::to_dense(full)), d);
    // Two sparse dims: a [3, 4] pattern of blocks of 2, a block kept when any element is nonzero.
    const SparseCooTensor blocks = ops::to_sparse(x, 2);
    EXPECT_EQ(blocks.dense_dim(), 1);
    int64_t kept = 0;
    for (size_t p = 0; p < 12; ++p) kept += (d[2 * p] != 0 || d[2 * p + 1] != 0) ? 1 : 0;
    EXPECT_EQ(blocks.nnz(), kept);
    EXPECT_EQ(to_doubles(ops::to_dense(blocks)), d);
    // A transposed (non-contiguous) input.
    const Tensor xt = transposed_copy(x);
    EXPECT_EQ(to_doubles(ops::to_dense(ops::to_sparse(xt))), to_doubles(xt));
  }
}

TEST(Sparse, EmptyTensors) {
  const SparseCooTensor s = ops::sparse_coo_tensor(Tensor::empty({2, 0}, DType::Int64),
                                                   Tensor::empty({0}, DType::Float32), Shape{3, 4});
  EXPECT_EQ(s.nnz(), 0);
  EXPECT_TRUE(s.coalesced);
  EXPECT_EQ(to_doubles(ops::to_dense(s)), std::vector<double>(12, 0.0));
  EXPECT_EQ(ops::coalesce(s).nnz(), 0);
  const Tensor out = ops::sparse_mm(s, random_tensor({4, 2}, DType::Float32));
  EXPECT_EQ(out.shape(), (Shape{3, 2}));
  EXPECT_EQ(to_doubles(out), std::vector<double>(6, 0.0));
  EXPECT_EQ(ops::to_sparse(ops::zeros({2, 3})).nnz(), 0);
  EXPECT_EQ(ops::to_sparse(ops::zeros({0, 3})).nnz(), 0);
  // No size: each sparse size is 0.
  EXPECT_EQ(ops::sparse_coo_tensor(Tensor::empty({2, 0}, DType::Int64),
                                   Tensor::empty({0}, DType::Float32))
                .size,
            (Shape{0, 0}));
}

TEST(Sparse, SparseMmMatchesDenseProduct) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const int64_t n = 7, m = 5, k = 6;
    const Tensor indices = random_indices(n, m, 20);
    const Tensor values = random_tensor({20}, dtype);
    const SparseCooTensor s = ops::sparse_coo_tensor(indices, values, Shape{n, m});
    const std::vector<double> a = dense_reference(indices, values, n, m);
    const Tensor b = random_tensor({m, k}, dtype);
    const Tensor out = ops::sparse_mm(s, b);
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_TRUE(all_close(to_doubles(out), matmul_reference(a, to_doubles(b), n, m, k),
                          10 * tolerance(dtype)));
    // A non-contiguous dense operand.
    const Tensor bt = transposed_copy(b);
    EXPECT_TRUE(all_close(to_doubles(ops::sparse_mm(s, bt)),
                          matmul_reference(a, to_doubles(bt), n, m, k), 10 * tolerance(dtype)));
  }
}

TEST(Sparse, SparseMmGradients) {
  const int64_t n = 4, m = 3, k = 5;
  const Tensor indices = random_indices(n, m, 9);
  const Tensor values = random_tensor({9}, DType::Float64).requires_grad_();
  const Tensor b = random_tensor({m, k}, DType::Float64).requires_grad_();
  const Tensor weights = random_tensor({n, k}, DType::Float64);
  const SparseCooTensor s = ops::sparse_coo_tensor(indices, values, Shape{n, m});
  const Tensor out = sparse_mm(s, b);
  ASSERT_TRUE(out.requires_grad());
  autograd::backward(sum(mul(out, weights)));
  // d/db sum(W * (A b)) = A^T W; d/dv_i = sum_j W[r_i, j] b[c_i, j].
  const std::vector<double> a = dense_reference(indices, values, n, m), w = to_doubles(weights),
                            bv = to_doubles(b), idx = to_doubles(indices);
  std::vector<double> want_b(static_cast<size_t>(m * k), 0.0), want_v(9, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < m; ++p)
      for (int64_t j = 0; j < k; ++j)
        want_b[static_cast<size_t>(p * k + j)] +=
            a[static_cast<size_t>(i * m + p)] * w[static_cast<size_t>(i * k + j)];
  for (size_t e = 0; e < 9; ++e)
    for (int64_t j = 0; j < k; ++j)
      want_v[e] += w[static_cast<size_t>(static_cast<int64_t>(idx[e]) * k + j)] *
                   bv[static_cast<size_t>(static_cast<int64_t>(idx[9 + e]) * k + j)];
  EXPECT_TRUE(all_close(to_doubles(b.grad()), want_b, 1e-12));
  EXPECT_TRUE(all_close(to_doubles(values.grad()), want_v, 1e-12));

  // Central differences of the dense side, through the no-grad op.
  const double h = 1e-6;
  std::vector<double> bd = to_doubles(b);
  const SparseCooTensor plain =
      ops::sparse_coo_tensor(indices, autograd::detach(values), Shape{n, m});
  for (size_t e = 0; e < bd.size(); e += 4) {
    std::vector<double> up = bd, down = bd;
    up[e] += h;
    down[e] -= h;
    const double f_up =
        item(ops::sum(
                 ops::mul(ops::sparse_mm(plain, tensor_of(up, {m, k}, DType::Float64)), weights)))
            .to_double();
    const double f_down =
        item(ops::sum(
                 ops::mul(ops::sparse_mm(plain, tensor_of(down, {m, k}, DType::Float64)), weights)))
            .to_double();
    EXPECT_NEAR((f_up - f_down) / (2 * h), want_b[e], 1e-6);
  }
}

TEST(Sparse, ToDenseGradientGathersAtIndices) {
  const Tensor indices = tensor_of({0, 2, 0, 1, 1, 1}, {2, 3}, DType::Int64);  // (0,1) twice
  const Tensor values = random_tensor({3}, DType::Float64).requires_grad_();
  const Tensor weights = random_tensor({3, 2}, DType::Float64);
  const Tensor dense = to_dense(ops::sparse_coo_tensor(indices, values, Shape{3, 2}));
  autograd::backward(sum(mul(dense, weights)));
  const std::vector<double> w = to_doubles(weights);
  EXPECT_TRUE(all_close(to_doubles(values.grad()), {w[1], w[5], w[1]}, 1e-12));
}

TEST(Sparse, BadInputNamesTheOpAndArgument) {
  const Tensor values = random_tensor({3}, DType::Float32);
  const Tensor idx = tensor_of({0, 1, 2, 0, 1, 3}, {2, 3}, DType::Int64);
  EXPECT_THROW(ops::sparse_coo_tensor(idx, values, Shape{3, 3}), IndexError);
  EXPECT_NE(error_message([&] {
              ops::sparse_coo_tensor(idx, values, Shape{3, 3});
            }).find("sparse_coo_tensor: indices[1, 2] = 3 is out of range for size 3 of dim 1"),
            std::string::npos);
  EXPECT_THROW(ops::sparse_coo_tensor(tensor_of({-1, 0}, {2, 1}, DType::Int64),
                                      random_tensor({1}, DType::Float32), Shape{2, 2}),
               IndexError);
  EXPECT_THROW(ops::sparse_coo_tensor(tensor_of({0, 1, 2}, {3}, DType::Int64), values), ShapeError);
  EXPECT_THROW(ops::sparse_coo_tensor(idx, random_tensor({4}, DType::Float32)), ShapeError);
  EXPECT_THROW(ops::sparse_coo_tensor(tensor_of({0, 1}, {2, 1}, DType::Float32),
                                      random_tensor({1}, DType::Float32)),
               DTypeError);
  EXPECT_THROW(ops::sparse_coo_tensor(idx, values, Shape{3, 4, 2}), ShapeError);
  const SparseCooTensor s = ops::sparse_coo_tensor(idx, values, Shape{3, 4});
  EXPECT_NE(error_message([&] {
              ops::sparse_mm(s, random_tensor({3, 2}, DType::Float32));
            }).find("sparse_mm: shapes [3, 4] and [3, 2] cannot be multiplied"),
            std::string::npos);
  EXPECT_THROW(ops::sparse_mm(s, random_tensor({4, 2}, DType::Float64)), DTypeError);
  EXPECT_THROW(ops::sparse_mm(s, random_tensor({4}, DType::Float32)), ShapeError);
  EXPECT_THROW(ops::to_sparse(random_tensor({2, 2}, DType::Float32), 3), IndexError);
}

}  // namespace
}  // namespace rcuda::test
