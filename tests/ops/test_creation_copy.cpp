// Tests for rcuda/ops/creation.h and rcuda/ops/copy.h: values read back by hand with to_doubles
// (support/reference.h) against plain double loops and a hand-written conversion reference,
// for every dtype, non-contiguous and overlapping views, broadcasting and zero-size shapes.
// Conversions and fills are exact (tolerance 0): a value either converts to the right bits or
// not. linspace/arange values are computed in double and rounded once, so they are compared
// with tolerance(dtype) for the floating dtypes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/reference.h"

namespace rcuda::test {
namespace {

// The value `v` of dtype `from` becomes in dtype `to`, as torch converts: floating to integral
// truncates toward zero, anything to bool is != 0, integers wrap modulo 2^bits, floating
// narrowing rounds to nearest even (through float32, as write_element does).
double convert_ref(double v, DType from, DType to) {
  switch (to) {
    case DType::Bool:
      return v != 0 ? 1 : 0;
    case DType::UInt8:
      return static_cast<uint8_t>(static_cast<int64_t>(std::trunc(v)));
    case DType::Int8:
      return static_cast<int8_t>(static_cast<int64_t>(std::trunc(v)));
    case DType::Int16:
      return static_cast<int16_t>(static_cast<int64_t>(std::trunc(v)));
    case DType::Int32:
      return static_cast<int32_t>(static_cast<int64_t>(std::trunc(v)));
    case DType::Int64:
      return static_cast<double>(static_cast<int64_t>(std::trunc(v)));
    default:
      break;
  }
  (void)from;
  char buf[8];
  write_element(buf, to, v);
  return read_element(buf, to);
}

// random_tensor, but uint8 gets a non-negative range (writing a negative double into uint8 is
// undefined behaviour in the reference's writer).
Tensor random_input(const Shape& shape, DType dtype, double low = -2, double high = 2) {
  if (dtype == DType::UInt8) {
    low = std::max(low, 0.0);
    high = std::max(high, low + 3);
  }
  return random_tensor(shape, dtype, low, high);
}

std::vector<double> filled(size_t n, double v) { return std::vector<double>(n, v); }

// ---- filled tensors --------------------------------------------------------------------------

TEST(CreationFill, ZerosOnesFullEmptyEveryDtype) {
  for (DType dtype : all_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const Shape& shape : {Shape{}, Shape{7}, Shape{3, 4}, Shape{2, 0, 5}, Shape{2, 3, 4}}) {
      const size_t n = static_cast<size_t>(numel(shape));
      const Tensor z = zeros(shape, dtype), o = ones(shape, dtype);
      const Tensor f = full(shape, 2.75, dtype), e = empty(shape, dtype);
      for (const Tensor& t : {z, o, f, e}) {
        EXPECT_EQ(t.shape(), shape);
        EXPECT_EQ(t.dtype(), dtype);
        EXPECT_TRUE(t.is_contiguous());
        EXPECT_EQ(t.numel(), static_cast<int64_t>(n));
      }
      EXPECT_TRUE(all_close(to_doubles(z), filled(n, 0), 0));
      EXPECT_TRUE(all_close(to_doubles(o), filled(n, 1), 0));
      EXPECT_TRUE(all_close(to_doubles(f), filled(n, convert_ref(2.75, DType::Float64, dtype)), 0));
    }
    // Integral values into every dtype; a negative int wraps in uint8 as torch.full does.
    EXPECT_TRUE(all_close(to_doubles(full({3}, -3, dtype)),
                          filled(3, convert_ref(-3, DType::Int64, dtype)), 0));
    EXPECT_TRUE(all_close(to_doubles(full({2}, true, dtype)), filled(2, 1), 0));
  }
  // A large fill (parallel path) and the default dtype.
  const Tensor big = full({300, 200}, 0.1);
  EXPECT_EQ(big.dtype(), DType::Float32);
  EXPECT_TRUE(all_close(to_doubles(big), filled(60000, static_cast<float>(0.1)), 0));
  EXPECT_EQ(zeros({2}).dtype(), DType::Float32);
}

TEST(CreationFill, BadSizes) {
  EXPECT_THROW(zeros({2, -1}), ShapeError);
  EXPECT_THROW(ones({-3}), ShapeError);
  EXPECT_THROW(full({-1, 2}, 1.0), ShapeError);
  EXPECT_THROW(empty({4, -2}), ShapeError);
  EXPECT_THROW(Tensor::empty({-1}, DType::Int64), ShapeError);
  const int64_t huge = int64_t{1} << 40;
  EXPECT_THROW(zeros({huge, huge}), ShapeError);
  EXPECT_THROW(empty({huge, huge, 2}, DType::UInt8), ShapeError);
  EXPECT_THROW(empty({int64_t{1} << 62}, DType::Float64), ShapeError);  // bytes past int64
  try {
    empty({3, -5});
    ADD_FAILURE() << "no ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("-5"), std::string::npos) << e.what();
  }
}

TEST(CreationFill, LikeFunctions) {
  for (DType dtype : all_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor src = transposed_copy(random_input({3, 5}, dtype));
    const Tensor z = zeros_like(src), o = ones_like(src), f = full_like(src, 7),
                 e = empty_like(src);
    for (const Tensor& t : {z, o, f, e}) {
      EXPECT_EQ(t.shape(), src.shape());
      EXPECT_EQ(t.dtype(), dtype);
      EXPECT_NE(t.storage(), src.storage());
    }
    EXPECT_TRUE(all_close(to_doubles(z), filled(15, 0), 0));
    EXPECT_TRUE(all_close(to_doubles(o), filled(15, 1), 0));
    EXPECT_TRUE(all_close(to_doubles(f), filled(15, convert_ref(7, DType::Int64, dtype)), 0));
  }
  // full_like with a floating value into an integral tensor truncates.
  EXPECT_TRUE(all_close(to_doubles(full_like(zeros({2}, DType::Int32), 2.9)), {2, 2}, 0));
  EXPECT_EQ(zeros_like(zeros({0, 3}, DType::Int64)).shape(), Shape({0, 3}));
}

TEST(CreationFill, FillNonContiguousView) {
  for (DType dtype : all_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor base = random_input({6, 8}, dtype);
    const std::vector<double> before = to_doubles(base);
    const Tensor view = base.slice(1, 1, 8, 2).slice(0, 0, 6, 3);  // rows 0, 3; odd columns
    EXPECT_EQ(&fill_(view, 1), &view);                             // returns the tensor it filled
    const std::vector<double> after = to_doubles(base);
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < 8; ++j) {
        const size_t k = static_cast<size_t>(i * 8 + j);
        const bool in_view = i % 3 == 0 && j % 2 == 1;
        EXPECT_EQ(after[k], in_view ? 1.0 : before[k]) << i << ", " << j;
      }
    }
    // Through a transposed view every element changes.
    const Tensor t = transposed_copy(random_input({4, 3}, dtype));
    fill_(t, 0);
    EXPECT_TRUE(all_close(to_doubles(t), filled(12, 0), 0));
  }
}

// ---- ranges and identity ---------------------------------------------------------------------

TEST(CreationRange, ArangeIntegers) {
  struct Case {
    int64_t start, end, step;
  };
  for (const Case& c : std::vector<Case>{
           {0, 10, 1}, {0, 10, 3}, {10, 0, -3}, {-5, 5, 2}, {3, 3, 1}, {7, -8, -5}, {0, 1, 7}}) {
    SCOPED_TRACE(std::to_string(c.start) + ":" + std::to_string(c.end) + ":" +
                 std::to_string(c.step));
    std::vector<double> expected;
    for (int64_t v = c.start; c.step > 0 ? v < c.end : v > c.end; v += c.step)
      expected.push_back(static_cast<double>(v));
    const Tensor t = arange(c.start, c.end, c.step);
    EXPECT_EQ(t.dtype(), DType::Int64);
    EXPECT_EQ(t.shape(), Shape({static_cast<int64_t>(expected.size())}));
    EXPECT_TRUE(all_close(to_doubles(t), expected, 0));
    const Tensor i32 = arange(c.start, c.end, c.step, DType::Int32);
    EXPECT_EQ(i32.dtype(), DType::Int32);
    EXPECT_TRUE(all_close(to_doubles(i32), expected, 0));
    EXPECT_TRUE(all_close(to_doubles(arange(c.start, c.end, c.step, DType::Float64)), expected, 0));
  }
  EXPECT_TRUE(all_close(to_doubles(arange(0, 4)), {0, 1, 2, 3}, 0));
  const Tensor big = arange(0, 100000);  // parallel path
  std::vector<double> expected(100000);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<double>(i);
  EXPECT_TRUE(all_close(to_doubles(big), expected, 0));
}

TEST(CreationRange, ArangeFloats) {
  struct Case {
    double start, end, step;
  };
  for (const Case& c : std::vector<Case>{
           {0, 1, 0.25}, {0, 1, 0.1}, {2.5, -1, -0.5}, {-1, 1.05, 0.3}, {0.5, 5, 1}}) {
    SCOPED_TRACE(std::to_string(c.start) + ":" + std::to_string(c.end) + ":" +
                 std::to_string(c.step));
    const int64_t n = static_cast<int64_t>(std::ceil((c.end - c.start) / c.step));
    for (DType dtype : floating_dtypes()) {
      std::vector<double> expected;
      for (int64_t i = 0; i < n; ++i)
        expected.push_back(
            convert_ref(c.start + static_cast<double>(i) * c.step, DType::Float64, dtype));
      const Tensor t = arange(c.start, c.end, c.step, dtype);
      EXPECT_EQ(t.shape(), Shape({n}));
      EXPECT_TRUE(all_close(to_doubles(t), expected, tolerance(dtype))) << dtype_name(dtype);
    }
    // Any floating bound makes the default dtype float32.
    EXPECT_EQ(arange(c.start, c.end, c.step).dtype(), DType::Float32);
  }
  EXPECT_EQ(arange(0, 5.0).dtype(), DType::Float32);
  EXPECT_EQ(arange(0.0, 5).dtype(), DType::Float32);
  EXPECT_EQ(arange(0, 5, 1.0).dtype(), DType::Float32);
  EXPECT_EQ(arange(0, 5, 1).dtype(), DType::Int64);
  EXPECT_EQ(arange(0.0, 1.0, 0.1).numel(), 10);
}

TEST(CreationRange, ArangeErrors) {
  EXPECT_THROW(arange(0, 10, 0), ValueError);
  EXPECT_THROW(arange(0.0, 1.0, 0.0), ValueError);
  EXPECT_THROW(arange(0, 10, -1), ValueError);
  EXPECT_THROW(arange(10, 0, 1), ValueError);
  EXPECT_THROW(arange(0.0, -1.5, 0.5), ValueError);
  EXPECT_THROW(arange(0.0, std::numeric_limits<double>::infinity(), 1.0), ValueError);
  EXPECT_EQ(arange(5, 5, -1).numel(), 0);
}

TEST(CreationRange, Linspace) {
  for (DType dtype : floating_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const auto& [start, end, steps] : std::vector<std::tuple<double, double, int64_t>>{
             {-1, 1, 5}, {0, 10, 11}, {3.3, -2.2, 7}, {0, 1, 2}, {0.1, 0.7, 100}, {-5, 5, 40001}}) {
      const Tensor t = linspace(start, end, steps, dtype);
      ASSERT_EQ(t.shape(), Shape({steps}));
      EXPECT_EQ(t.dtype(), dtype);
      const std::vector<double> v = to_doubles(t);
      std::vector<double> expected(static_cast<size_t>(steps));
      const double step = (end - start) / static_cast<double>(steps - 1);
      for (int64_t i = 0; i < steps; ++i)
        expected[static_cast<size_t>(i)] =
            convert_ref(start + step * static_cast<double>(i), DType::Float64, dtype);
      EXPECT_TRUE(all_close(v, expected, tolerance(dtype)));
      // Both endpoints exact (as stored in dtype).
      EXPECT_EQ(v.front(), convert_ref(start, DType::Float64, dtype));
      EXPECT_EQ(v.back(), convert_ref(end, DType::Float64, dtype));
    }
    EXPECT_EQ(linspace(0, 1, 0, dtype).shape(), Shape({0}));
    // Known bug: torch.linspace(2, 10, 1) is [2] (start); src/backend/cpu/elementwise.cpp:221
    // fills index i < steps/2 from start and the rest from end, and steps/2 == 0 gives [10].
    EXPECT_TRUE(all_close(to_doubles(linspace(2, 10, 1, dtype)), {2}, 0));
  }
  EXPECT_EQ(linspace(0, 1, 3).dtype(), DType::Float32);
  EXPECT_THROW(linspace(0, 1, -1), ValueError);
}

TEST(CreationRange, Eye) {
  for (DType dtype : all_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const auto& [n, m] : std::vector<std::pair<int64_t, int64_t>>{
             {3, -1}, {1, -1}, {0, -1}, {2, 5}, {5, 2}, {4, 0}}) {
      const Tensor t = eye(n, m, dtype);
      const int64_t cols = m < 0 ? n : m;
      ASSERT_EQ(t.shape(), Shape({n, cols}));
      EXPECT_EQ(t.dtype(), dtype);
      std::vector<double> expected;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < cols; ++j) expected.push_back(i == j ? 1 : 0);
      EXPECT_TRUE(all_close(to_doubles(t), expected, 0));
    }
  }
  EXPECT_EQ(eye(2).dtype(), DType::Float32);
  EXPECT_THROW(eye(-2), ValueError);
}

TEST(CreationData, FromDataRoundTrip) {
  const std::vector<float> f = {1.5f, -2.25f, 3e10f, -0.0f, 7, 8};
  const Tensor tf = from_data(f.data(), {2, 3}, DType::Float32);
  EXPECT_EQ(tf.shape(), Shape({2, 3}));
  EXPECT_TRUE(tf.is_contiguous());
  EXPECT_EQ(std::memcmp(tf.data_ptr(), f.data(), f.size() * sizeof(float)), 0);
  EXPECT_TRUE(all_close(to_doubles(tf), {1.5, -2.25, static_cast<double>(3e10f), 0, 7, 8}, 0));
  const std::vector<int64_t> i = {int64_t{1} << 60, -1, 0};
  const Tensor ti = from_data(i.data(), {3}, DType::Int64);
  EXPECT_EQ(std::memcmp(ti.data_ptr(), i.data(), i.size() * sizeof(int64_t)), 0);
  const std::vector<uint16_t> h = {0x3c00, 0xc000, 0x7bff};  // 1, -2, 65504 in float16
  EXPECT_TRUE(all_close(to_doubles(from_data(h.data(), {3}, DType::Float16)), {1, -2, 65504}, 0));
  EXPECT_EQ(from_data(nullptr, {0, 4}, DType::Float64).shape(), Shape({0, 4}));
  // The tensor owns a copy: changing the source afterwards does not change it.
  std::vector<double> d = {1, 2};
  const Tensor td = from_data(d.data(), {2}, DType::Float64);
  d[0] = 99;
  EXPECT_TRUE(all_close(to_doubles(td), {1, 2}, 0));
  const Tensor s = scalar_tensor(2.5, DType::Float16);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_TRUE(all_close(to_doubles(s), {2.5}, 0));
}

// ---- copies and conversions ------------------------------------------------------------------

TEST(CopyConvert, EveryDtypePair) {
  for (DType from : all_dtypes()) {
    for (DType to_dtype : all_dtypes()) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to_dtype));
      // Negative floating values into uint8 have no portable C++ value: stay non-negative.
      // Out-of-range floating values into uint8 have no portable C++ value: stay in [0, 255].
      const bool float_to_u8 = to_dtype == DType::UInt8 && is_floating(from);
      const double low = float_to_u8 ? 0 : -300,
                   high = float_to_u8 || from == DType::UInt8 ? 255 : 300;
      const Tensor src = random_input({5, 7}, from, low, high);
      std::vector<double> expected = to_doubles(src);
      for (double& v : expected) v = convert_ref(v, from, to_dtype);
      const Tensor dst = empty({5, 7}, to_dtype);
      const Tensor& r = copy_(dst, src);
      EXPECT_EQ(&r, &dst);
      EXPECT_TRUE(all_close(to_doubles(dst), expected, 0));
      // Small fractional values: truncation toward zero and != 0 for bool.
      const Tensor frac = random_input({4, 6}, from, low == 0 ? 0 : -2, 2);
      std::vector<double> fe = to_doubles(frac);
      for (double& v : fe) v = convert_ref(v, from, to_dtype);
      EXPECT_TRUE(all_close(to_doubles(to(frac, to_dtype)), fe, 0));
      // Non-contiguous source and destination.
      const Tensor src_t = transposed_copy(frac);
      const Tensor dst_t = transposed_copy(zeros({4, 6}, to_dtype));
      copy_(dst_t, src_t);
      EXPECT_TRUE(all_close(to_doubles(dst_t), fe, 0));
    }
  }
  // Exact cases of the truncation rule.
  const Tensor f = tensor_of({-1.7, -0.5, 0.5, 2.9, 0}, {5}, DType::Float32);
  EXPECT_TRUE(all_close(to_doubles(to(f, DType::Int32)), {-1, 0, 0, 2, 0}, 0));
  EXPECT_TRUE(all_close(to_doubles(to(f, DType::Bool)), {1, 1, 1, 1, 0}, 0));
  EXPECT_TRUE(all_close(to_doubles(to(tensor_of({-1, 300}, {2}, DType::Int32), DType::UInt8)),
                        {255, 44}, 0));
  // float32 -> float16: ties to even and overflow to infinity.
  const Tensor h =
      to(tensor_of({1 + 1.0 / 2048, 1 + 3.0 / 2048, 70000}, {3}, DType::Float32), DType::Float16);
  EXPECT_TRUE(
      all_close(to_doubles(h), {1, 1 + 4.0 / 2048, std::numeric_limits<double>::infinity()}, 0));
}

TEST(CopyConvert, LargeAndBroadcast) {
  const Tensor src = random_input({300, 200}, DType::Float64, -100, 100);  // parallel path
  std::vector<double> expected = to_doubles(src);
  for (double& v : expected) v = convert_ref(v, DType::Float64, DType::BFloat16);
  const Tensor dst = transposed_copy(zeros({300, 200}, DType::BFloat16));
  copy_(dst, src);
  EXPECT_TRUE(all_close(to_doubles(dst), expected, 0));
  // Broadcasting: a row, a column and a 0-dim source.
  const Tensor row = random_input({5}, DType::Int32, -9, 9);
  const Tensor d = empty({4, 5}, DType::Float64);
  copy_(d, row);
  EXPECT_TRUE(all_close(to_doubles(d), to_doubles(row.expand({4, 5})), 0));
  const Tensor col = random_input({4, 1}, DType::Float32);
  copy_(d, col);
  EXPECT_TRUE(all_close(to_doubles(d), to_doubles(col.expand({4, 5})), 0));
  copy_(d, tensor_of({3.5}, {}, DType::Float16));
  EXPECT_TRUE(all_close(to_doubles(d), filled(20, 3.5), 0));
  EXPECT_THROW(copy_(d, random_input({3}, DType::Float32)), ShapeError);
  EXPECT_THROW(copy_(empty({5}), random_input({4, 5}, DType::Float32)), ShapeError);
  // Zero-size copies do nothing.
  const Tensor z = empty({0, 3});
  EXPECT_NO_THROW(copy_(z, empty({0, 3}, DType::Int64)));
}

TEST(CopyConvert, OverlappingViews) {
  for (DType dtype : {DType::Float32, DType::Int64, DType::Float16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const int64_t n = 50000;  // past the parallel grain
    const Tensor x = random_input({n}, dtype, -100, 100);
    const std::vector<double> original = to_doubles(x);
    // Shift right by one: every element reads its left neighbour's original value.
    copy_(x.slice(0, 1, n), x.slice(0, 0, n - 1));
    std::vector<double> expected = original;
    for (size_t i = 1; i < expected.size(); ++i) expected[i] = original[i - 1];
    EXPECT_TRUE(all_close(to_doubles(x), expected, 0));
    // Shift left by one.
    const Tensor y = random_input({n}, dtype, -100, 100);
    const std::vector<double> y0 = to_doubles(y);
    copy_(y.slice(0, 0, n - 1), y.slice(0, 1, n));
    std::vector<double> ye = y0;
    for (size_t i = 0; i + 1 < ye.size(); ++i) ye[i] = y0[i + 1];
    EXPECT_TRUE(all_close(to_doubles(y), ye, 0));
    // A square matrix copied into its own transpose.
    const Tensor m = random_input({6, 6}, dtype, -9, 9);
    const std::vector<double> mt = to_doubles(m.t());
    copy_(m, m.t());
    EXPECT_TRUE(all_close(to_doubles(m), mt, 0));
    // A view copied into itself is unchanged.
    const std::vector<double> m0 = to_doubles(m);
    copy_(m, m);
    EXPECT_TRUE(all_close(to_doubles(m), m0, 0));
  }
}

TEST(CopyConvert, ToContiguousClone) {
  const Tensor x = random_input({3, 4}, DType::Float32);
  EXPECT_TRUE(to(x, DType::Float32).is_same(x));
  const Tensor d = to(x, DType::Float64);
  EXPECT_FALSE(d.is_same(x));
  EXPECT_EQ(d.dtype(), DType::Float64);
  EXPECT_TRUE(all_close(to_doubles(d), to_doubles(x), 0));
  EXPECT_TRUE(contiguous(x).is_same(x));
  // contiguous of a transposed view: a new row-major copy with the view's values.
  const Tensor t = transposed_copy(random_input({5, 7}, DType::Int32));
  const Tensor c = contiguous(t);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.storage(), t.storage());
  EXPECT_EQ(c.shape(), t.shape());
  EXPECT_EQ(c.strides(), Strides({7, 1}));
  EXPECT_TRUE(all_close(to_doubles(c), to_doubles(t), 0));
  // clone: always a new storage, independent of the source.
  const Tensor k = clone(x);
  EXPECT_NE(k.storage(), x.storage());
  const std::vector<double> x0 = to_doubles(x);
  fill_(k, 5);
  EXPECT_TRUE(all_close(to_doubles(x), x0, 0));
  fill_(x, -1);
  EXPECT_TRUE(all_close(to_doubles(k), filled(12, 5), 0));
  const Tensor kt = clone(t);
  EXPECT_TRUE(kt.is_contiguous());
  EXPECT_TRUE(all_close(to_doubles(kt), to_doubles(t), 0));
  const Tensor stepped = random_input({6, 8}, DType::BFloat16).slice(1, 0, 8, 3);
  EXPECT_TRUE(all_close(to_doubles(clone(stepped)), to_doubles(stepped), 0));
  EXPECT_EQ(clone(empty({0, 2})).shape(), Shape({0, 2}));
}

TEST(CopyReshape, ViewWhenPossibleCopyOtherwise) {
  const Tensor x = random_input({4, 6}, DType::Float64);
  const Tensor r = reshape(x, {2, 3, -1});
  EXPECT_EQ(r.shape(), Shape({2, 3, 4}));
  EXPECT_EQ(r.storage(), x.storage());  // a view
  EXPECT_TRUE(all_close(to_doubles(r), to_doubles(x), 0));
  // A stepped slice along the outer dim still reshapes as a view of its inner rows.
  const Tensor rows = x.slice(0, 0, 4, 2);
  const Tensor rr = reshape(rows, {2, 2, 3});
  EXPECT_EQ(rr.storage(), x.storage());
  EXPECT_TRUE(all_close(to_doubles(rr), to_doubles(rows), 0));
  // Transposed input: no view can express it, so a row-major copy.
  const Tensor t = x.t();
  const Tensor rt = reshape(t, {24});
  EXPECT_NE(rt.storage(), x.storage());
  EXPECT_TRUE(all_close(to_doubles(rt), to_doubles(t), 0));
  EXPECT_THROW(reshape(x, {5, -1}), ShapeError);
  EXPECT_THROW(reshape(x, {-1, -1}), ShapeError);
  EXPECT_EQ(reshape(empty({0, 3}), {3, 0}).shape(), Shape({3, 0}));
  EXPECT_THROW(reshape(empty({0, 3}), {3, 0, -1}), ShapeError);  // -1 ambiguous, as torch
  EXPECT_EQ(reshape(tensor_of({2}, {}, DType::Int64), {1, 1}).shape(), Shape({1, 1}));
}

TEST(CopyReshape, Flatten) {
  const Tensor x = random_input({2, 3, 4, 5}, DType::Int32, -9, 9);
  EXPECT_EQ(flatten(x).shape(), Shape({120}));
  EXPECT_EQ(flatten(x, 1, 2).shape(), Shape({2, 12, 5}));
  EXPECT_EQ(flatten(x, -2).shape(), Shape({2, 3, 20}));
  EXPECT_EQ(flatten(x, 0, 0).shape(), Shape({2, 3, 4, 5}));
  EXPECT_EQ(flatten(x, 2, -1).storage(), x.storage());
  EXPECT_TRUE(all_close(to_doubles(flatten(x, 1, 2)), to_doubles(x), 0));
  const Tensor p = x.permute({3, 1, 2, 0});
  EXPECT_TRUE(all_close(to_doubles(flatten(p)), to_doubles(p), 0));
  EXPECT_EQ(flatten(tensor_of({1}, {}, DType::Float32)).shape(), Shape({1}));
  EXPECT_THROW(flatten(x, 2, 1), ValueError);
  EXPECT_THROW(flatten(x, 0, 4), IndexError);
}

TEST(CopyReshape, ViewErrorsSuggestReshape) {
  const Tensor t = random_input({4, 6}, DType::Float32).t();
  try {
    t.view({24});
    ADD_FAILURE() << "no ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("view"), std::string::npos) << msg;
    EXPECT_NE(msg.find("reshape"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[6, 4]"), std::string::npos) << msg;
  }
  EXPECT_THROW(t.view({5, 5}), ShapeError);
  EXPECT_EQ(t.view({6, 2, 2}).storage(), t.storage());  // splitting a dim is still a view
}

TEST(CopyItem, ValuesAndErrors) {
  for (DType dtype : all_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor t = random_input({}, dtype, -50, 50);
    const double v = to_doubles(t)[0];
    const Scalar s = item(t);
    EXPECT_EQ(s.to_double(), v);
    EXPECT_EQ(s.kind(), dtype == DType::Bool ? Scalar::Kind::Bool
                        : is_floating(dtype) ? Scalar::Kind::Float
                                             : Scalar::Kind::Int);
    EXPECT_EQ(item(reshape(t, {1, 1})).to_double(), v);
    EXPECT_THROW(item(zeros({2}, dtype)), ValueError);
    EXPECT_THROW(item(zeros({0}, dtype)), ValueError);
  }
  const std::vector<int64_t> big = {(int64_t{1} << 62) + 1};
  EXPECT_EQ(item(from_data(big.data(), {1}, DType::Int64)).to_int(), (int64_t{1} << 62) + 1);
  // An element of a non-contiguous view.
  const Tensor m = transposed_copy(tensor_of({1, 2, 3, 4}, {2, 2}, DType::Float32));
  EXPECT_EQ(item(m.select(0, 1).select(0, 0)).to_double(), 3);
  try {
    item(zeros({2, 3}));
    ADD_FAILURE() << "no ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("6"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rcuda::test
