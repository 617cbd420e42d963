// Tests for rcuda/ops/linalg.h (matmul, mm, bmm, addmm) and the CPU backend's gemm: every
// product is checked against plain double-precision loops over the inputs' values, read back
// by hand with to_doubles (support/reference.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "support/reference.h"

namespace rcuda::test {
namespace {

// Relative tolerance of a K-term dot product. The inputs are exact in their dtype, so the error
// is the accumulation's: each of the K additions rounds once, and for random signs these errors
// add up like a random walk, growing as sqrt(K) rather than K. float16/bfloat16 accumulate in
// float32 and round once at the end, which tolerance(dtype) already covers.
double product_tolerance(DType dtype, int64_t k) {
  return tolerance(dtype) * std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
}

struct Expected {
  Shape shape;
  std::vector<double> values;
};

// torch.matmul's rules written out independently: a 1-D left operand is a row [1, K], a 1-D
// right operand a column [K, 1]; batch dims broadcast from the right; the added dims are dropped.
Expected reference_matmul(const Tensor& a, const Tensor& b) {
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const std::vector<double> av = to_doubles(a), bv = to_doubles(b);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const size_t nba = as.size() - 2, nbb = bs.size() - 2, nb = std::max(nba, nbb);
  Shape batch(nb), batch_a(nb, 1), batch_b(nb, 1);  // batch_a/b: sizes aligned right
  for (size_t i = 0; i < nb; ++i) {
    if (i + nba >= nb) batch_a[i] = as[i + nba - nb];
    if (i + nbb >= nb) batch_b[i] = bs[i + nbb - nb];
    batch[i] = std::max(batch_a[i], batch_b[i]);
  }
  Expected e;
  e.shape = batch;
  if (a.dim() >= 2) e.shape.push_back(m);
  if (b.dim() >= 2) e.shape.push_back(n);
  std::vector<int64_t> index(nb, 0);
  const int64_t count = numel(batch);
  for (int64_t bi = 0; bi < count; ++bi) {
    int64_t ia = 0, ib = 0;  // row-major batch offsets of a and b
    for (size_t d = 0; d < nb; ++d) {
      ia = ia * batch_a[d] + (batch_a[d] == 1 ? 0 : index[d]);
      ib = ib * batch_b[d] + (batch_b[d] == 1 ? 0 : index[d]);
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += av[static_cast<size_t>(ia * m * k + i * k + p)] *
               bv[static_cast<size_t>(ib * k * n + p * n + j)];
        e.values.push_back(s);
      }
    for (size_t d = nb; d-- > 0;) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  return e;
}

void expect_matmul(const Tensor& a, const Tensor& b) {
  const Tensor c = matmul(a, b);
  const Expected e = reference_matmul(a, b);
  EXPECT_EQ(c.shape(), e.shape) << shape_str(a.shape()) << " @ " << shape_str(b.shape());
  EXPECT_EQ(c.dtype(), a.dtype());
  EXPECT_TRUE(all_close(to_doubles(c), e.values, product_tolerance(a.dtype(), a.size(-1))))
      << shape_str(a.shape()) << " @ " << shape_str(b.shape()) << " in " << dtype_name(a.dtype());
}

// A [rows, cols] view whose elements are neither row- nor column-contiguous: every 2nd row and
// 3rd column of a larger random matrix.
Tensor stepped(int64_t rows, int64_t cols, DType dtype) {
  return random_tensor({2 * rows, 3 * cols}, dtype)
      .slice(0, 0, 2 * rows, 2)
      .slice(1, 0, 3 * cols, 3);
}

TEST(MatmulTest, MatrixTimesMatrixEveryFloatingDtype) {
  const std::vector<Shape> mkn = {{1, 1, 1}, {7, 13, 5}, {64, 100, 33}, {3, 257, 2}};
  for (DType dtype : floating_dtypes())
    for (const Shape& s : mkn)
      expect_matmul(random_tensor({s[0], s[1]}, dtype), random_tensor({s[1], s[2]}, dtype));
}

TEST(MatmulTest, EveryRankCombination) {
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16}) {
    expect_matmul(random_tensor({13}, dtype), random_tensor({13}, dtype));      // dot -> 0-dim
    expect_matmul(random_tensor({7}, dtype), random_tensor({7, 5}, dtype));     // 1-2
    expect_matmul(random_tensor({4, 7}, dtype), random_tensor({7}, dtype));     // 2-1
    expect_matmul(random_tensor({4, 7}, dtype), random_tensor({7, 5}, dtype));  // 2-2
    expect_matmul(random_tensor({3, 4, 7}, dtype), random_tensor({3, 7, 5}, dtype));     // 3-3
    expect_matmul(random_tensor({2, 1, 4, 7}, dtype), random_tensor({3, 7, 5}, dtype));  // 4-3
    expect_matmul(random_tensor({3, 4, 7}, dtype), random_tensor({7}, dtype));           // 3-1
    expect_matmul(random_tensor({7}, dtype), random_tensor({3, 7, 5}, dtype));           // 1-3
    expect_matmul(random_tensor({2, 3, 4, 7}, dtype), random_tensor({7, 5}, dtype));     // 4-2
    expect_matmul(random_tensor({4, 7}, dtype), random_tensor({2, 3, 7, 5}, dtype));     // 2-4
    expect_matmul(random_tensor({1, 3, 4, 7}, dtype), random_tensor({2, 1, 7, 5}, dtype));
  }
  EXPECT_EQ(matmul(random_tensor({13}, DType::Float32), random_tensor({13}, DType::Float32)).dim(),
            0);
}

TEST(MatmulTest, TransposedOperandsGoToBlasWithoutCopies) {
  for (DType dtype : floating_dtypes()) {
    const Tensor a = random_tensor({13, 7}, dtype).t();  // [7, 13], column-major
    const Tensor b = random_tensor({5, 13}, dtype).t();  // [13, 5]
    expect_matmul(a, b);
    expect_matmul(a, random_tensor({13, 5}, dtype));
    expect_matmul(random_tensor({7, 13}, dtype), b);
    expect_matmul(transposed_copy(random_tensor({7, 13}, dtype)),
                  transposed_copy(random_tensor({13, 5}, dtype)));
    // Batched: the matrix dims of a [B, K, M] tensor transposed.
    expect_matmul(random_tensor({3, 13, 7}, dtype).transpose(1, 2),
                  random_tensor({3, 5, 13}, dtype).transpose(1, 2));
  }
}

TEST(MatmulTest, StridesNoBlasLayoutFits) {
  for (DType dtype : floating_dtypes()) {
    expect_matmul(stepped(7, 13, dtype), stepped(13, 5, dtype));
    expect_matmul(stepped(7, 13, dtype), random_tensor({13, 5}, dtype));
    expect_matmul(stepped(1, 13, dtype), stepped(13, 1, dtype));
    // An expanded matrix dim (stride 0 inside the matrix).
    expect_matmul(random_tensor({1, 13}, dtype).expand({7, 13}), stepped(13, 5, dtype));
  }
}

TEST(MatmulTest, BatchDimsThatDoNotCollapse) {
  for (DType dtype : {DType::Float32, DType::Float16}) {
    // Batch dims [2, 3] swapped out of memory order: no single batch stride covers them.
    const Tensor a = random_tensor({3, 2, 4, 7}, dtype).transpose(0, 1);
    expect_matmul(a, random_tensor({2, 3, 7, 5}, dtype));
    expect_matmul(a, random_tensor({7, 5}, dtype));  // cannot fold a's rows: batched path
    expect_matmul(a, random_tensor({3, 7, 5}, dtype).expand({2, 3, 7, 5}));
  }
}

TEST(MatmulTest, ManySmallMatrices) {
  // Small products spread over threads by batch; large ones use OpenBLAS's own threads.
  expect_matmul(random_tensor({64, 8, 9}, DType::Float32),
                random_tensor({64, 9, 6}, DType::Float32));
  expect_matmul(random_tensor({64, 8, 9}, DType::Float64),
                random_tensor({9, 6}, DType::Float64).expand({64, 9, 6}));
  expect_matmul(random_tensor({2, 130, 140}, DType::Float32),
                random_tensor({2, 140, 150}, DType::Float32));
}

TEST(MatmulTest, EmptyDims) {
  for (DType dtype : floating_dtypes()) {
    // K == 0: an empty sum is zero.
    const Tensor c = matmul(random_tensor({3, 0}, dtype), random_tensor({0, 4}, dtype));
    EXPECT_EQ(c.shape(), (Shape{3, 4}));
    EXPECT_TRUE(all_close(to_doubles(c), std::vector<double>(12, 0.0), 0));
    EXPECT_TRUE(all_close(to_doubles(matmul(random_tensor({0}, dtype), random_tensor({0}, dtype))),
                          {0.0}, 0));
    EXPECT_EQ(matmul(random_tensor({0, 5}, dtype), random_tensor({5, 4}, dtype)).shape(),
              (Shape{0, 4}));
    EXPECT_EQ(matmul(random_tensor({3, 5}, dtype), random_tensor({5, 0}, dtype)).shape(),
              (Shape{3, 0}));
    EXPECT_EQ(matmul(random_tensor({0, 3, 5}, dtype), random_tensor({5, 2}, dtype)).shape(),
              (Shape{0, 3, 2}));
    EXPECT_EQ(bmm(random_tensor({2, 3, 0}, dtype), random_tensor({2, 0, 4}, dtype)).shape(),
              (Shape{2, 3, 4}));
  }
}

TEST(LinalgTest, MmAndBmm) {
  for (DType dtype : floating_dtypes()) {
    const Tensor a = random_tensor({7, 13}, dtype), b = random_tensor({13, 5}, dtype);
    EXPECT_TRUE(all_close(to_doubles(mm(a, b)), reference_matmul(a, b).values,
                          product_tolerance(dtype, 13)));
    const Tensor x = random_tensor({4, 6, 9}, dtype), y = random_tensor({4, 9, 3}, dtype);
    const Tensor z = bmm(x, y);
    EXPECT_EQ(z.shape(), (Shape{4, 6, 3}));
    EXPECT_TRUE(
        all_close(to_doubles(z), reference_matmul(x, y).values, product_tolerance(dtype, 9)));
  }
}

TEST(LinalgTest, AddmmBroadcastsInputWithBetaAndAlpha) {
  const int64_t m = 7, k = 13, n = 5;
  for (DType dtype : floating_dtypes()) {
    const Tensor a = random_tensor({m, k}, dtype), b = random_tensor({k, n}, dtype);
    const std::vector<double> product = reference_matmul(a, b).values;
    for (const Shape& input_shape : std::vector<Shape>{{m, n}, {n}, {m, 1}, {1, n}, {}}) {
      const Tensor input = random_tensor(input_shape, dtype);
      const std::vector<double> iv = to_doubles(input);
      std::vector<double> expected;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          // Index of input's element broadcast to (i, j).
          const int64_t r = input.dim() == 2 && input.size(0) == m ? i : 0;
          const int64_t cols = input.dim() >= 1 ? input.size(-1) : 1;
          const int64_t c = cols == n ? j : 0;
          expected.push_back(0.5 * iv[static_cast<size_t>(r * cols + c)] +
                             2.0 * product[static_cast<size_t>(i * n + j)]);
        }
      EXPECT_TRUE(all_close(to_doubles(addmm(input, a, b, 0.5, 2.0)), expected,
                            product_tolerance(dtype, k)))
          << dtype_name(dtype) << " input " << shape_str(input_shape);
    }
    // Transposed and stepped operands, the default beta = alpha = 1.
    const Tensor at = transposed_copy(a), bs = stepped(k, n, dtype);
    const Tensor input = random_tensor({m, n}, dtype);
    const std::vector<double> p2 = reference_matmul(at, bs).values, iv = to_doubles(input);
    std::vector<double> expected(p2.size());
    for (size_t i = 0; i < p2.size(); ++i) expected[i] = iv[i] + p2[i];
    EXPECT_TRUE(all_close(to_doubles(addmm(input, at, bs)), expected, product_tolerance(dtype, k)));
  }
}

TEST(LinalgTest, AddmmBetaZeroIgnoresNaNInput) {
  for (DType dtype : floating_dtypes()) {
    const Tensor a = random_tensor({6, 11}, dtype), b = random_tensor({11, 4}, dtype);
    const Tensor input =
        tensor_of(std::vector<double>(24, std::numeric_limits<double>::quiet_NaN()), {6, 4}, dtype);
    const std::vector<double> got = to_doubles(addmm(input, a, b, 0.0, 1.0));
    for (double v : got) EXPECT_TRUE(std::isfinite(v)) << dtype_name(dtype);
    EXPECT_TRUE(all_close(got, reference_matmul(a, b).values, product_tolerance(dtype, 11)));
  }
}

TEST(LinalgTest, AddmmWithEmptyInnerDimScalesInput) {
  const Tensor input = random_tensor({3, 4}, DType::Float32);
  std::vector<double> expected = to_doubles(input);
  for (double& v : expected) v *= 0.25;
  const Tensor c = addmm(input, random_tensor({3, 0}, DType::Float32),
                         random_tensor({0, 4}, DType::Float32), 0.25, 3.0);
  EXPECT_TRUE(all_close(to_doubles(c), expected, tolerance(DType::Float32)));
}

// The backend's gemm writes into any output layout and honours beta over old values.
TEST(LinalgTest, GemmIntoColumnMajorAndSteppedOutputs) {
  Backend& cpu = backend_for(Device());
  for (DType dtype : floating_dtypes()) {
    const int64_t m = 7, k = 13, n = 5;
    const Tensor a = random_tensor({m, k}, dtype), b = random_tensor({k, n}, dtype);
    const std::vector<double> product = reference_matmul(a, b).values;
    const Tensor column_major = transposed_copy(random_tensor({m, n}, dtype));
    const Tensor stepped_out = stepped(m, n, dtype);
    for (const Tensor& out : {column_major, stepped_out}) {
      const std::vector<double> old = to_doubles(out);
      cpu.gemm(out.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0), 1.5, -0.5);
      std::vector<double> expected(old.size());
      for (size_t i = 0; i < old.size(); ++i) expected[i] = 1.5 * product[i] - 0.5 * old[i];
      EXPECT_TRUE(all_close(to_doubles(out), expected, product_tolerance(dtype, k)))
          << dtype_name(dtype);
    }
  }
}

TEST(MatmulTest, ErrorsNameTheOpAndTheValues) {
  const Tensor a = random_tensor({2, 3}, DType::Float32), b = random_tensor({4, 5}, DType::Float32);
  EXPECT_THROW(matmul(a, b), ShapeError);
  EXPECT_EQ(error_message([&] { matmul(a, b); }),
            "matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
  EXPECT_EQ(error_message([&] { mm(a, b); }),
            "mm: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)");
  EXPECT_THROW(matmul(random_tensor({3}, DType::Float32), random_tensor({4}, DType::Float32)),
               ShapeError);
  EXPECT_THROW(
      matmul(random_tensor({2, 2, 3, 4}, DType::Float32), random_tensor({3, 4, 5}, DType::Float32)),
      ShapeError);  // batch [2, 2] and [3] do not broadcast
  EXPECT_THROW(
      matmul(random_tensor({2, 3, 4}, DType::Float32), random_tensor({5, 4, 2}, DType::Float32)),
      ShapeError);  // batch 2 vs 5

  const Tensor d = random_tensor({3, 5}, DType::Float64);
  EXPECT_THROW(matmul(a, d), DTypeError);
  EXPECT_EQ(error_message([&] { matmul(a, d); }),
            "matmul: expected both operands to have the same dtype, got float32 and float64");
  const Tensor i = random_tensor({3, 5}, DType::Int64);
  EXPECT_THROW(matmul(random_tensor({2, 3}, DType::Int64), i), DTypeError);
  const std::string int_message = error_message([&] {
    matmul(random_tensor({2, 3}, DType::Int64), i);
  });
  EXPECT_NE(int_message.find("matmul"), std::string::npos) << int_message;
  EXPECT_NE(int_message.find("int64"), std::string::npos) << int_message;
  EXPECT_NE(int_message.find("convert"), std::string::npos) << int_message;
  EXPECT_THROW(matmul(random_tensor({2}, DType::Bool), random_tensor({2}, DType::Bool)),
               DTypeError);

  const Tensor zero_dim = random_tensor({}, DType::Float32);
  EXPECT_THROW(matmul(zero_dim, a), ShapeError);
  EXPECT_THROW(matmul(a, zero_dim), ShapeError);
  EXPECT_THROW(mm(random_tensor({2, 2, 3}, DType::Float32), a.t()), ShapeError);
  EXPECT_THROW(bmm(a, a.t()), ShapeError);
  EXPECT_EQ(
      error_message([&] {
        bmm(random_tensor({2, 3, 4}, DType::Float32), random_tensor({3, 4, 5}, DType::Float32));
      }),
      "bmm: batch sizes of shapes [2, 3, 4] and [3, 4, 5] differ (2 != 3)");
  EXPECT_THROW(
      addmm(random_tensor({3, 5}, DType::Float32), a, random_tensor({3, 5}, DType::Float32)),
      ShapeError);  // input [3, 5] vs product [2, 5]
  EXPECT_THROW(
      addmm(random_tensor({2, 5}, DType::Float64), a, random_tensor({3, 5}, DType::Float32)),
      DTypeError);
}

}  // namespace
}  // namespace rcuda::test
