// Double-precision references for the factorisation tests (tests/ops/test_linalg_factor.cpp,
// tests/autograd/test_grad_linalg_factor.cpp, tests/cuda/test_cuda_linalg_factor.cpp): plain
// loops over matrices read back with to_doubles, independent of LAPACK and of rcuda's ops.
#pragma once

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "rcuda/autograd/linalg_factor.h"
#include "support/reference.h"

namespace rcuda::test {

// A row-major rows x cols matrix of doubles.
struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  double& at(int64_t i, int64_t j) { return v[static_cast<size_t>(i * cols + j)]; }
  double at(int64_t i, int64_t j) const { return v[static_cast<size_t>(i * cols + j)]; }
};

inline Mat zeros_mat(int64_t rows, int64_t cols) {
  return {rows, cols, std::vector<double>(static_cast<size_t>(rows * cols), 0.0)};
}
inline Mat identity_mat(int64_t n) {
  Mat m = zeros_mat(n, n);
  for (int64_t i = 0; i < n; ++i) m.at(i, i) = 1;
  return m;
}

// The matrices of a (batched) tensor on any device, in row-major batch order.
inline std::vector<Mat> matrices(const Tensor& t) {
  const Tensor host = t.device().is_cpu() ? t : to(t, Device());
  const std::vector<double> all = to_doubles(host);
  const int64_t rows = t.shape()[t.dim() - 2], cols = t.shape()[t.dim() - 1];
  const int64_t size = rows * cols;
  const int64_t count = size == 0 ? 0 : static_cast<int64_t>(all.size()) / size;
  std::vector<Mat> out;
  for (int64_t b = 0; b < count; ++b)
    out.push_back(
        {rows, cols, std::vector<double>(all.begin() + b * size, all.begin() + (b + 1) * size)});
  return out;
}

inline Mat matmul_mat(const Mat& a, const Mat& b) {
  Mat c = zeros_mat(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t k = 0; k < a.cols; ++k)
      for (int64_t j = 0; j < b.cols; ++j) c.at(i, j) += a.at(i, k) * b.at(k, j);
  return c;
}
inline Mat transpose_mat(const Mat& a) {
  Mat t = zeros_mat(a.cols, a.rows);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) t.at(j, i) = a.at(i, j);
  return t;
}

// max |a - b| / max(1, max |b|): the error relative to the reference's scale.
inline double max_error(const Mat& a, const Mat& b) {
  double diff = 0, scale = 1;
  for (size_t i = 0; i < b.v.size(); ++i) {
    diff = std::max(diff, std::fabs(a.v[i] - b.v[i]));
    scale = std::max(scale, std::fabs(b.v[i]));
  }
  return a.v.size() == b.v.size() ? diff / scale : INFINITY;
}

inline ::testing::AssertionResult mat_near(const Mat& a, const Mat& b, double tol) {
  if (a.rows != b.rows || a.cols != b.cols)
    return ::testing::AssertionFailure()
           << "shape " << a.rows << "x" << a.cols << " vs " << b.rows << "x" << b.cols;
  const double e = max_error(a, b);
  if (e > tol) return ::testing::AssertionFailure() << "relative error " << e << " > " << tol;
  return ::testing::AssertionSuccess();
}

// Gaussian elimination with partial pivoting: {determinant, A^-1 B} (B may have 0 columns).
inline std::pair<double, Mat> gauss_solve(Mat a, Mat b) {
  const int64_t n = a.rows;
  double det = 1;
  for (int64_t c = 0; c < n; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (std::fabs(a.at(r, c)) > std::fabs(a.at(p, c))) p = r;
    if (p != c) {
      det = -det;
      for (int64_t j = 0; j < n; ++j) std::swap(a.at(p, j), a.at(c, j));
      for (int64_t j = 0; j < b.cols; ++j) std::swap(b.at(p, j), b.at(c, j));
    }
    det *= a.at(c, c);
    if (a.at(c, c) == 0) continue;
    for (int64_t r = c + 1; r < n; ++r) {
      const double f = a.at(r, c) / a.at(c, c);
      for (int64_t j = c; j < n; ++j) a.at(r, j) -= f * a.at(c, j);
      for (int64_t j = 0; j < b.cols; ++j) b.at(r, j) -= f * b.at(c, j);
    }
  }
  for (int64_t c = n - 1; c >= 0; --c)
    for (int64_t j = 0; j < b.cols; ++j) {
      double s = b.at(c, j);
      for (int64_t k = c + 1; k < n; ++k) s -= a.at(c, k) * b.at(k, j);
      b.at(c, j) = s / a.at(c, c);
    }
  return {det, b};
}

// The Cholesky factor by the textbook loops (unique for a positive-definite matrix).
inline Mat cholesky_mat(const Mat& a) {
  const int64_t n = a.rows;
  Mat l = zeros_mat(n, n);
  for (int64_t j = 0; j < n; ++j) {
    double d = a.at(j, j);
    for (int64_t k = 0; k < j; ++k) d -= l.at(j, k) * l.at(j, k);
    l.at(j, j) = std::sqrt(d);
    for (int64_t i = j + 1; i < n; ++i) {
      double s = a.at(i, j);
      for (int64_t k = 0; k < j; ++k) s -= l.at(i, k) * l.at(j, k);
      l.at(i, j) = s / l.at(j, j);
    }
  }
  return l;
}

inline double frobenius2(const Mat& a) {
  double s = 0;
  for (double x : a.v) s += x * x;
  return s;
}

// Fresh random matrices [shape] made well-conditioned: values in [-1, 1) plus n on the diagonal.
inline Tensor well_conditioned(const Shape& shape, DType dtype) {
  const int64_t n = shape.back();
  std::vector<double> v = to_doubles(random_tensor(shape, DType::Float64, -1, 1));
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t within = static_cast<int64_t>(i) % (n * n);
    if (within / n == within % n) v[i] += static_cast<double>(n);
  }
  return tensor_of(v, shape, dtype);
}

// Symmetric positive-definite matrices M M^T + n I from fresh random M.
inline Tensor positive_definite(const Shape& shape, DType dtype) {
  const Tensor m = random_tensor(shape, DType::Float64, -1, 1);
  const int64_t n = shape.back();
  Tensor spd = add(matmul(m, m.transpose(-2, -1)), mul(eye(n, n, DType::Float64), double(n)));
  return to(spd, dtype);
}

}  // namespace rcuda::test
