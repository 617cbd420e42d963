// The sort family (sort, argsort, topk, kthvalue, median, mode, unique, randperm) against
// std::stable_sort and plain loops in double: ties keep their order, NaN sorts above +inf, as
// torch; every dtype, every dim, transposed and stepped views, 0-dim and empty tensors.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "support/reference.h"

namespace rcuda::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// a < b with NaN above everything, NaNs equal: torch's sort order.
bool nan_last_less(double a, double b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return a < b;
}

// Row-major coordinates of x's shape, element by element.
struct Lines {
  int64_t outer = 1, n = 1, inner = 1;  // x viewed as [outer, n, inner] around dim d
};
Lines lines_of(const Shape& shape, int64_t d) {
  Lines l;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < d) l.outer *= shape[i];
    if (i == d) l.n = shape[i];
    if (i > d) l.inner *= shape[i];
  }
  return l;
}

// Reference sort along d: (values, indices) in x's row-major order.
std::pair<std::vector<double>, std::vector<double>> reference_sort(const std::vector<double>& x,
                                                                   const Shape& shape, int64_t d,
                                                                   bool descending) {
  const Lines l = lines_of(shape, d);
  std::vector<double> values(x.size()), indices(x.size());
  for (int64_t o = 0; o < l.outer; ++o)
    for (int64_t i = 0; i < l.inner; ++i) {
      auto at = [&](int64_t j) { return (o * l.n + j) * l.inner + i; };
      std::vector<int64_t> order(l.n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return descending ? nan_last_less(x[at(b)], x[at(a)]) : nan_last_less(x[at(a)], x[at(b)]);
      });
      for (int64_t j = 0; j < l.n; ++j) {
        values[at(j)] = x[at(order[j])];
        indices[at(j)] = static_cast<double>(order[j]);
      }
    }
  return {values, indices};
}

// Values with many ties (small integers) and, for floating dtypes, NaN and infinities.
Tensor tied_tensor(const Shape& shape, DType dtype) {
  Tensor t = random_tensor(shape, dtype, 0, 4);
  if (!is_floating(dtype)) return t;
  std::vector<double> v = to_doubles(t);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint64_t r = rng()() % 10;
    if (r == 0) v[i] = kNaN;
    if (r == 1) v[i] = kInf;
    if (r == 2) v[i] = -kInf;
  }
  return tensor_of(v, shape, dtype);
}

TEST(Sort, EveryDtypeDimAndDirectionAgainstStableSort) {
  for (DType dtype : all_dtypes()) {
    for (int64_t dim : {0, 1, 2, -1}) {
      for (bool descending : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " dim " + std::to_string(dim) +
                     (descending ? " descending" : " ascending"));
        const Tensor x = tied_tensor({3, 5, 4}, dtype);
        auto [values, indices] = sort(x, dim, descending);
        EXPECT_EQ(values.dtype(), dtype);
        EXPECT_EQ(indices.dtype(), DType::Int64);
        EXPECT_EQ(values.shape(), x.shape());
        const int64_t d = dim < 0 ? dim + 3 : dim;
        auto [ev, ei] = reference_sort(to_doubles(x), x.shape(), d, descending);
        EXPECT_TRUE(all_close(to_doubles(values), ev, 0));
        EXPECT_EQ(to_doubles(indices), ei);
        EXPECT_EQ(to_doubles(argsort(x, dim, descending)), ei);
      }
    }
  }
}

TEST(Sort, NaNLastAscendingFirstDescendingAndLongRows) {
  const Tensor x = tensor_of({2, kNaN, -kInf, 1, kNaN, kInf, 1}, {7}, DType::Float32);
  EXPECT_TRUE(all_close(to_doubles(sort(x).first), {-kInf, 1, 1, 2, kInf, kNaN, kNaN}, 0));
  EXPECT_EQ(to_doubles(sort(x).second), (std::vector<double>{2, 3, 6, 0, 5, 1, 4}));
  EXPECT_EQ(to_doubles(sort(x, 0, true).second), (std::vector<double>{1, 4, 5, 0, 3, 6, 2}));
  const Tensor long_row = random_tensor({2, 3000}, DType::Float64);
  auto [ev, ei] = reference_sort(to_doubles(long_row), long_row.shape(), 1, false);
  EXPECT_EQ(to_doubles(sort(long_row, 1).second), ei);
}

TEST(Sort, NonContiguousZeroDimAndEmpty) {
  const Tensor t = transposed_copy(tied_tensor({6, 5}, DType::Float64));
  ASSERT_FALSE(t.is_contiguous());
  for (int64_t d : {0, 1}) {
    auto [ev, ei] = reference_sort(to_doubles(t), t.shape(), d, true);
    EXPECT_TRUE(all_close(to_doubles(sort(t, d, true).first), ev, 0));
    EXPECT_EQ(to_doubles(sort(t, d, true).second), ei);
  }
  const Tensor stepped = random_tensor({20}, DType::Int32, -50, 50).slice(0, 1, 20, 3);
  auto [sv, si] = reference_sort(to_doubles(stepped), stepped.shape(), 0, false);
  EXPECT_EQ(to_doubles(sort(stepped).first), sv);
  EXPECT_EQ(to_doubles(sort(stepped).second), si);
  const Tensor scalar = tensor_of({3.5}, {}, DType::Float32);
  EXPECT_EQ(to_doubles(sort(scalar).first), (std::vector<double>{3.5}));
  EXPECT_EQ(sort(scalar).second.dim(), 0);
  auto [empty_values, empty_indices] = sort(Tensor::empty({0, 4}, DType::Float32), 1);
  EXPECT_EQ(empty_values.shape(), (Shape{0, 4}));
  EXPECT_EQ(empty_indices.dtype(), DType::Int64);
  EXPECT_THROW(sort(t, 2), IndexError);
}

TEST(Sort, TopkLargestAndSmallest) {
  for (DType dtype : {DType::Float32, DType::Int64, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = transposed_copy(random_tensor({7, 4}, dtype, -10, 10));
    for (bool largest : {true, false}) {
      auto [values, indices] = topk(x, 3, 0, largest);
      EXPECT_EQ(values.shape(), (Shape{3, 4}));
      auto [ev, ei] = reference_sort(to_doubles(x), x.shape(), 0, largest);
      ev.resize(12);
      ei.resize(12);
      EXPECT_TRUE(all_close(to_doubles(values), ev, 0));
      EXPECT_EQ(to_doubles(indices), ei);
    }
  }
  const Tensor x = random_tensor({5}, DType::Float32);
  EXPECT_EQ(topk(x, 0).first.numel(), 0);
  EXPECT_THROW(topk(x, 6), IndexError);
}

TEST(Sort, KthvalueMedianAndModeAlongEachDim) {
  const Tensor x = transposed_copy(tied_tensor({5, 6}, DType::Float64));
  const std::vector<double> xv = to_doubles(x);
  for (int64_t d : {0, 1}) {
    SCOPED_TRACE(d);
    const Lines l = lines_of(x.shape(), d);
    auto [sorted, order] = reference_sort(xv, x.shape(), d, false);
    std::vector<double> kth, kth_index, med, med_index, mode_value, mode_count;
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t i = 0; i < l.inner; ++i) {
        auto at = [&](int64_t j) { return (o * l.n + j) * l.inner + i; };
        kth.push_back(sorted[at(1)]);
        kth_index.push_back(order[at(1)]);
        int64_t nans = 0, first_nan = -1;
        for (int64_t j = 0; j < l.n; ++j)
          if (std::isnan(xv[at(j)])) {
            ++nans;
            if (first_nan < 0) first_nan = j;
          }
        med.push_back(nans ? kNaN : sorted[at((l.n - 1) / 2)]);
        med_index.push_back(nans ? first_nan : order[at((l.n - 1) / 2)]);
        // Mode: the smallest of the most frequent values (NaNs each count once).
        std::map<double, int> counts;
        for (int64_t j = 0; j < l.n; ++j)
          if (!std::isnan(xv[at(j)])) ++counts[xv[at(j)]];
        double best = kNaN;
        int best_count = 0;
        for (auto [v, c] : counts)
          if (c > best_count) best = v, best_count = c;
        if (best_count <= 1) best = sorted[at(0)];  // all distinct: the smallest
        mode_value.push_back(best);
        mode_count.push_back(best_count);
      }
    auto [kv, ki] = kthvalue(x, 2, d);
    EXPECT_TRUE(all_close(to_doubles(kv), kth, 0));
    EXPECT_EQ(to_doubles(ki), kth_index);
    auto [mv, mi] = median(x, d, true);
    EXPECT_EQ(mv.dim(), 2);
    EXPECT_TRUE(all_close(to_doubles(mv), med, 0));
    EXPECT_EQ(to_doubles(mi), med_index);
    auto [ov, oi] = mode(x, d);
    EXPECT_TRUE(all_close(to_doubles(ov), mode_value, 0));
    // The index names an occurrence of the mode: its last one.
    const std::vector<double> ovv = to_doubles(ov), oiv = to_doubles(oi);
    for (size_t k = 0; k < ovv.size(); ++k) {
      const int64_t o = d == 0 ? 0 : static_cast<int64_t>(k), i = d == 0 ? k : 0;
      auto at = [&](int64_t j) { return (o * l.n + j) * l.inner + i; };
      const int64_t j = static_cast<int64_t>(oiv[k]);
      EXPECT_TRUE(xv[at(j)] == ovv[k]);
      for (int64_t later = j + 1; later < l.n; ++later) EXPECT_FALSE(xv[at(later)] == ovv[k]);
    }
  }
  EXPECT_TRUE(all_close(to_doubles(median(tensor_of({4, 1, 3, 2}, {2, 2}, DType::Int32))), {2}, 0));
  EXPECT_THROW(kthvalue(x, 7, 0), IndexError);
  EXPECT_THROW(median(Tensor::empty({0}, DType::Float32)), ValueError);
}

TEST(Sort, UniqueWithInverseAndCounts) {
  for (DType dtype : {DType::Int64, DType::Float32, DType::Bool, DType::Float16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = transposed_copy(random_tensor({4, 6}, dtype, -3, 3));
    const std::vector<double> xv = to_doubles(x);
    std::map<double, int> counts;
    for (double v : xv) ++counts[v];
    std::vector<double> values, count_values;
    for (auto [v, c] : counts) values.push_back(v), count_values.push_back(c);
    const UniqueResult u = unique(x);
    EXPECT_EQ(u.values.dtype(), dtype);
    EXPECT_EQ(to_doubles(u.values), values);
    EXPECT_EQ(to_doubles(u.counts), count_values);
    EXPECT_EQ(u.inverse.shape(), x.shape());
    const std::vector<double> inverse = to_doubles(u.inverse);
    for (size_t i = 0; i < xv.size(); ++i)
      EXPECT_EQ(values[static_cast<size_t>(inverse[i])], xv[i]);
  }
  const UniqueResult nans = unique(tensor_of({kNaN, 1, kNaN}, {3}, DType::Float64));
  EXPECT_EQ(nans.values.numel(), 3);  // NaNs are all distinct, as torch
  EXPECT_EQ(unique(Tensor::empty({0}, DType::Float32)).values.numel(), 0);
}

TEST(Sort, RandpermIsAPermutationThatFollowsTheSeed) {
  manual_seed(test_seed());
  const Tensor p = randperm(1000);
  EXPECT_EQ(p.dtype(), DType::Int64);
  std::vector<double> v = to_doubles(p);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_NE(v, sorted);  // 1 in 1000! chance of failing by luck
  manual_seed(test_seed());
  EXPECT_EQ(to_doubles(randperm(1000)), v);
  EXPECT_EQ(randperm(0).numel(), 0);
  EXPECT_EQ(randperm(5, TensorOptions(DType::Float32)).dtype(), DType::Float32);
  EXPECT_THROW(randperm(-1), ValueError);
}

TEST(Sort, BucketizeAgainstLowerAndUpperBound) {
  const std::vector<double> edges = {-1, 0, 0.5, 2};
  const Tensor boundaries = tensor_of(edges, {4}, DType::Float64);
  Tensor x = random_tensor({3, 5}, DType::Float32, -3, 3);
  std::vector<double> xv = to_doubles(x);
  xv[0] = 0;  // on an edge
  xv[1] = 2;
  x = tensor_of(xv, {3, 5}, DType::Float32);
  for (bool right : {false, true}) {
    std::vector<double> expected;
    for (double v : xv)
      expected.push_back(right ? std::upper_bound(edges.begin(), edges.end(), v) - edges.begin()
                               : std::lower_bound(edges.begin(), edges.end(), v) - edges.begin());
    const Tensor out = bucketize(x, boundaries, false, right);
    EXPECT_EQ(out.dtype(), DType::Int64);
    EXPECT_EQ(to_doubles(out), expected);
    EXPECT_EQ(bucketize(x, boundaries, true, right).dtype(), DType::Int32);
  }
  EXPECT_THROW(bucketize(x, tensor_of({1, 2, 3, 4}, {2, 2}, DType::Float32)), ShapeError);
}

TEST(Sort, HistcAgainstLoops) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = random_tensor({50}, dtype, -1.5, 1.5);
    const std::vector<double> xv = to_doubles(x);
    std::vector<double> expected(7, 0);
    for (double v : xv) {
      if (v < -1 || v > 1) continue;
      expected[std::min<int64_t>(6, static_cast<int64_t>(std::floor((v + 1) * 7 / 2)))] += 1;
    }
    const Tensor h = histc(x, 7, -1, 1);
    EXPECT_EQ(h.dtype(), dtype);
    EXPECT_EQ(to_doubles(h), expected);
  }
  // min == max: the data's own range; max lands in the last bin.
  EXPECT_EQ(to_doubles(histc(tensor_of({1, 2, 1, 4}, {4}, DType::Float32), 3)),
            (std::vector<double>{2, 1, 1}));
  EXPECT_THROW(histc(tensor_of({1}, {1}, DType::Int32)), DTypeError);
  EXPECT_THROW(histc(tensor_of({1}, {1}, DType::Float32), 0), ValueError);
}

}  // namespace
}  // namespace rcuda::test
