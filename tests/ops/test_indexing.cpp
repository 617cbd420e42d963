// Joining, splitting and indexing ops against plain loops over to_doubles (tests/support/
// reference.h): fresh random inputs and indices, contiguous, transposed and stepped layouts for
// inputs and index tensors, every dtype, zero-size tensors, and the error paths.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "support/reference.h"

namespace rcuda::test {
namespace {

std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> coords(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    coords[d] = i % shape[d];
    i /= shape[d];
  }
  return coords;
}

int64_t ravel(const std::vector<int64_t>& coords, const Shape& shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + coords[d];
  return i;
}

int64_t random_int(int64_t low, int64_t high) {  // in [low, high]
  return std::uniform_int_distribution<int64_t>(low, high)(rng());
}

// Writes row-major values into a (strided) view by hand.
void write_through(const Tensor& view, const std::vector<double>& values) {
  char* base = static_cast<char*>(view.storage()->data());
  const int64_t width = static_cast<int64_t>(view.element_size());
  for (size_t i = 0; i < values.size(); ++i) {
    const std::vector<int64_t> c = unravel(static_cast<int64_t>(i), view.shape());
    int64_t off = view.offset();
    for (int64_t d = 0; d < view.dim(); ++d) off += c[d] * view.strides()[d];
    write_element(base + off * width, view.dtype(), values[i]);
  }
}

// The same values seen through every other element of a larger buffer (offset 1, step 2).
Tensor stepped(const Tensor& t) {
  if (t.dim() == 0) return t;
  Shape s = t.shape();
  s.back() = 2 * s.back() + 1;
  Tensor view = Tensor::empty(s, t.dtype()).slice(-1, 1, s.back(), 2);
  write_through(view, to_doubles(t));
  return view;
}

// Layout 0: contiguous, 1: transposed memory, 2: stepped slice.
Tensor with_layout(const Tensor& t, int layout) {
  if (layout == 1 && t.dim() >= 2) return transposed_copy(t);
  if (layout >= 1) return stepped(t);
  return t;
}

Tensor random_values(const Shape& shape, DType dtype) {
  return dtype == DType::UInt8 ? random_tensor(shape, dtype, 0, 8) : random_tensor(shape, dtype);
}

// Integer values in any dtype (exact sums for every dtype's accumulation).
Tensor random_integers(const Shape& shape, DType dtype, int64_t low, int64_t high) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  if (dtype == DType::UInt8) low = std::max<int64_t>(low, 0);
  for (double& x : v)
    x = static_cast<double>(dtype == DType::Bool ? random_int(0, 1) : random_int(low, high));
  return tensor_of(v, shape, dtype);
}

Tensor index_of(const std::vector<double>& values, const Shape& shape, int layout = 0) {
  return with_layout(tensor_of(values, shape, DType::Int64), layout);
}

Tensor random_index(const Shape& shape, int64_t high, int layout = 0) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (double& x : v) x = static_cast<double>(random_int(0, high - 1));
  return index_of(v, shape, layout);
}

// values rounded to dtype by the reference's own writer.
std::vector<double> round_to(DType dtype, const std::vector<double>& values) {
  return to_doubles(tensor_of(values, {static_cast<int64_t>(values.size())}, dtype));
}

template <typename E, typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << part << "\"";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// ---- cat, stack ------------------------------------------------------------------------------

// cat(parts, dim) against each element looked up in the part that holds it.
void expect_cat_of(const std::vector<Tensor>& parts, int64_t dim, const std::string& what) {
  const Tensor out = cat(parts, dim);
  const int64_t d = dim < 0 ? dim + parts[0].dim() : dim;
  Shape expected_shape = parts[0].shape();
  expected_shape[d] = 0;
  for (const Tensor& p : parts) expected_shape[d] += p.size(d);
  ASSERT_EQ(out.shape(), expected_shape) << what;
  ASSERT_EQ(out.dtype(), parts[0].dtype()) << what;
  std::vector<std::vector<double>> part_values;
  for (const Tensor& p : parts) part_values.push_back(to_doubles(p));
  std::vector<double> expected(static_cast<size_t>(numel(expected_shape)));
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, expected_shape);
    size_t k = 0;
    while (c[d] >= parts[k].size(d)) c[d] -= parts[k++].size(d);
    expected[i] = part_values[k][ravel(c, parts[k].shape())];
  }
  EXPECT_TRUE(all_close(to_doubles(out), expected, 0)) << what;
}

TEST(CatTest, AllDtypesAlongEachDimAndLayout) {
  const Shape base = {3, 4, 2};
  for (DType dtype : all_dtypes()) {
    for (int64_t dim = -3; dim < 3; ++dim) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      std::vector<Tensor> parts;
      for (int k = 0; k < 3; ++k) {
        Shape s = base;
        s[d] = random_int(0, 3);
        parts.push_back(with_layout(random_values(s, dtype), k));
      }
      expect_cat_of(parts, dim, std::string(dtype_name(dtype)) + " dim " + std::to_string(dim));
    }
  }
}

// Contiguous parts of the result's dtype take the backend's cat (Backend::cat): many of them, of
// random sizes along dim (zero included), each part's bytes a run that is or is not a multiple
// of 16.
TEST(CatTest, ManyContiguousPartsAlongEachDim) {
  for (DType dtype : all_dtypes()) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      std::vector<Tensor> parts;
      for (int k = 0; k < 70; ++k) {
        Shape s = {2, 3, 5};
        s[dim] = random_int(0, 4);
        parts.push_back(random_values(s, dtype));
      }
      expect_cat_of(parts, dim, std::string(dtype_name(dtype)) + " dim " + std::to_string(dim));
    }
    std::vector<Tensor> scalars;
    for (int k = 0; k < 65; ++k) scalars.push_back(random_values({}, dtype));
    const Tensor stacked = stack(scalars);
    ASSERT_EQ(stacked.shape(), (Shape{65}));
    std::vector<double> expected;
    for (const Tensor& t : scalars) expected.push_back(to_doubles(t)[0]);
    EXPECT_TRUE(all_close(to_doubles(stacked), expected, 0)) << dtype_name(dtype);
  }
}

TEST(CatTest, PromotesDtypes) {
  struct Case {
    DType a, b, result;
  };
  const std::vector<Case> cases = {{DType::Int32, DType::Float16, DType::Float16},
                                   {DType::UInt8, DType::Int32, DType::Int32},
                                   {DType::Bool, DType::Int64, DType::Int64},
                                   {DType::Float16, DType::BFloat16, DType::Float32},
                                   {DType::Float32, DType::Float64, DType::Float64},
                                   {DType::Bool, DType::UInt8, DType::UInt8}};
  for (const Case& c : cases) {
    const Tensor a = transposed_copy(random_values({2, 3}, c.a));
    const Tensor b = random_values({1, 3}, c.b);
    const Tensor out = cat({a, b}, 0);
    ASSERT_EQ(out.dtype(), c.result) << dtype_name(c.a) << " + " << dtype_name(c.b);
    std::vector<double> expected = to_doubles(a);
    for (double v : to_doubles(b)) expected.push_back(v);
    EXPECT_TRUE(all_close(to_doubles(out), round_to(c.result, expected), 0));
  }
}

TEST(CatTest, SkipsOneDimEmptyTensors) {
  const Tensor a = random_values({2, 3}, DType::Float32), b = random_values({1, 3}, DType::Float32);
  const Tensor out = cat({a, Tensor::empty({0}, DType::Float32), b}, 0);
  ASSERT_EQ(out.shape(), (Shape{3, 3}));
  std::vector<double> expected = to_doubles(a);
  for (double v : to_doubles(b)) expected.push_back(v);
  EXPECT_TRUE(all_close(to_doubles(out), expected, 0));
  // A skipped tensor still takes part in promotion, as torch.
  EXPECT_EQ(cat({random_values({2, 3}, DType::Int64), Tensor::empty({0}, DType::Float32)}).dtype(),
            DType::Float32);
  const Tensor all_empty =
      cat({Tensor::empty({0}, DType::Int32), Tensor::empty({0}, DType::Int32)});
  EXPECT_EQ(all_empty.shape(), (Shape{0}));
  // Zero-size dims other than 1-D empties are joined normally.
  EXPECT_EQ(
      cat({Tensor::empty({0, 3}, DType::Float32), Tensor::empty({2, 3}, DType::Float32)}).shape(),
      (Shape{2, 3}));
}

TEST(CatTest, Errors) {
  expect_error<ValueError>([] { cat({}); }, {"cat"});
  const Tensor a = random_values({2, 3}, DType::Float32);
  expect_error<ShapeError>(
      [&] {
        cat({a, random_values({2, 4}, DType::Float32)}, 0);
      },
      {"cat", "tensor 1", "[2, 4]", "[2, 3]"});
  expect_error<ShapeError>(
      [&] {
        cat({a, random_values({2, 3, 1}, DType::Float32)}, 0);
      },
      {"cat", "tensor 1"});
  expect_error<ShapeError>(
      [&] {
        cat({a, scalar_tensor(1.0, DType::Float32)}, 0);
      },
      {"cat", "position 1"});
  expect_error<IndexError>([&] { cat({a, a}, 2); }, {"cat", "dim 2"});
}

TEST(CatTest, Stack) {
  for (DType dtype : all_dtypes()) {
    const Shape shape = {3, 2};
    std::vector<Tensor> parts;
    for (int k = 0; k < 3; ++k) parts.push_back(with_layout(random_values(shape, dtype), k));
    for (int64_t dim = -3; dim < 3; ++dim) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      const Tensor out = stack(parts, dim);
      Shape expected_shape = shape;
      expected_shape.insert(expected_shape.begin() + d, 3);
      ASSERT_EQ(out.shape(), expected_shape);
      std::vector<double> expected(static_cast<size_t>(out.numel()));
      for (int64_t i = 0; i < out.numel(); ++i) {
        std::vector<int64_t> c = unravel(i, expected_shape);
        const int64_t k = c[d];
        c.erase(c.begin() + d);
        expected[i] = to_doubles(parts[k])[ravel(c, shape)];
      }
      EXPECT_TRUE(all_close(to_doubles(out), expected, 0)) << dtype_name(dtype) << " dim " << dim;
    }
  }
  EXPECT_EQ(stack({scalar_tensor(1, DType::Int64), scalar_tensor(2, DType::Int64)}).shape(),
            (Shape{2}));
  EXPECT_EQ(stack({Tensor::empty({0}, DType::Float32), Tensor::empty({0}, DType::Float32)}).shape(),
            (Shape{2, 0}));
  expect_error<ShapeError>(
      [] {
        stack({Tensor::empty({2, 3}, DType::Float32), Tensor::empty({3, 2}, DType::Float32)});
      },
      {"stack", "[3, 2]", "entry 1"});
  expect_error<ValueError>([] { stack({}); }, {"stack"});
}

// ---- split, chunk ----------------------------------------------------------------------------

// Each piece is a view of x (same storage) holding x's elements [start, start + size) along dim.
void expect_pieces(const Tensor& x, const std::vector<Tensor>& pieces, int64_t dim,
                   const std::vector<int64_t>& sizes) {
  ASSERT_EQ(pieces.size(), sizes.size());
  const std::vector<double> xv = to_doubles(x);
  int64_t start = 0;
  for (size_t k = 0; k < pieces.size(); ++k) {
    Shape s = x.shape();
    s[dim] = sizes[k];
    ASSERT_EQ(pieces[k].shape(), s) << "piece " << k;
    EXPECT_EQ(pieces[k].storage().get(), x.storage().get()) << "piece " << k << " is not a view";
    std::vector<double> expected;
    for (int64_t i = 0; i < numel(s); ++i) {
      std::vector<int64_t> c = unravel(i, s);
      c[dim] += start;
      expected.push_back(xv[ravel(c, x.shape())]);
    }
    EXPECT_TRUE(all_close(to_doubles(pieces[k]), expected, 0)) << "piece " << k;
    start += sizes[k];
  }
}

TEST(SplitTest, BySize) {
  for (DType dtype : {DType::Float32, DType::Int64, DType::Bool}) {
    const Tensor x = transposed_copy(random_values({7, 4}, dtype));
    expect_pieces(x, split(x, 3, 0), 0, {3, 3, 1});
    expect_pieces(x, split(x, 2, -1), 1, {2, 2});
    expect_pieces(x, split(x, 7, 0), 0, {7});
    expect_pieces(x, split(x, 10, 0), 0, {7});
  }
  const Tensor empty = Tensor::empty({0, 3}, DType::Float32);
  expect_pieces(empty, split(empty, 2, 0), 0, {0});
  expect_pieces(empty, split(empty, 0, 0), 0, {0});
  expect_error<ValueError>([] { split(Tensor::empty({4}, DType::Float32), 0); }, {"split"});
  expect_error<ValueError>([] { split(Tensor::empty({4}, DType::Float32), -1); }, {"split"});
  expect_error<ShapeError>([] { split(scalar_tensor(1, DType::Float32), 1); }, {"split"});
  expect_error<IndexError>([] { split(Tensor::empty({4}, DType::Float32), 1, 1); }, {"split"});
}

TEST(SplitTest, BySizes) {
  const Tensor x = stepped(random_values({3, 7}, DType::Float64));
  expect_pieces(x, split(x, std::vector<int64_t>{2, 0, 5}, 1), 1, {2, 0, 5});
  expect_pieces(x, split(x, std::vector<int64_t>{3}, 0), 0, {3});
  expect_error<ShapeError>(
      [&] {
        split(x, std::vector<int64_t>{2, 2}, 1);
      },
      {"split", "[2, 2]", "7"});
  expect_error<ValueError>([&] { split(x, std::vector<int64_t>{8, -1}, 1); }, {"split"});
}

TEST(SplitTest, Chunk) {
  const Tensor x = random_values({5, 6}, DType::Int32);
  expect_pieces(x, chunk(x, 3, 0), 0, {2, 2, 1});
  expect_pieces(x, chunk(x, 4, 1), 1, {2, 2, 2});  // ceil(6 / 4) = 2: three chunks, not four
  expect_pieces(x, chunk(x, 1, 1), 1, {6});
  expect_pieces(x, chunk(x, 9, 0), 0, {1, 1, 1, 1, 1});
  const Tensor empty = Tensor::empty({0, 2}, DType::Float32);
  expect_pieces(empty, chunk(empty, 3, 0), 0, {0, 0, 0});
  expect_error<ValueError>([&] { chunk(x, 0); }, {"chunk"});
  expect_error<IndexError>([&] { chunk(x, 2, 2); }, {"chunk"});
}

// ---- index_select ----------------------------------------------------------------------------

TEST(IndexingIndexSelect, AllDtypesDimsAndLayouts) {
  const Shape shape = {3, 4, 5};
  for (DType dtype : all_dtypes()) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      for (int layout = 0; layout < 3; ++layout) {
        const Tensor x = with_layout(random_values(shape, dtype), layout);
        const Tensor index = random_index({random_int(0, 6)}, shape[dim], 2 - layout);
        const Tensor out = index_select(x, dim - 3 * (layout == 1), index);
        Shape expected_shape = shape;
        expected_shape[dim] = index.numel();
        ASSERT_EQ(out.shape(), expected_shape);
        ASSERT_EQ(out.dtype(), dtype);
        const std::vector<double> xv = to_doubles(x), iv = to_doubles(index);
        std::vector<double> expected;
        for (int64_t i = 0; i < out.numel(); ++i) {
          std::vector<int64_t> c = unravel(i, expected_shape);
          c[dim] = static_cast<int64_t>(iv[c[dim]]);
          expected.push_back(xv[ravel(c, shape)]);
        }
        EXPECT_TRUE(all_close(to_doubles(out), expected, 0))
            << dtype_name(dtype) << " dim " << dim << " layout " << layout;
      }
    }
  }
}

TEST(IndexingIndexSelect, ScalarsAndZeroSize) {
  const Tensor x = scalar_tensor(4.5, DType::Float32);
  const Tensor out = index_select(x, 0, index_of({0}, {1}));
  EXPECT_EQ(out.dim(), 0);
  EXPECT_EQ(to_doubles(out), std::vector<double>{4.5});
  const Tensor y = random_values({3, 4}, DType::Float32);
  const Tensor picked = index_select(y, 1, index_of({2}, {}));  // 0-dim index
  EXPECT_EQ(picked.shape(), (Shape{3, 1}));
  EXPECT_EQ(index_select(y, 0, index_of({}, {0})).shape(), (Shape{0, 4}));
  EXPECT_EQ(index_select(Tensor::empty({0, 4}, DType::Int32), 1, index_of({3, 1}, {2})).shape(),
            (Shape{0, 2}));
}

TEST(IndexingIndexSelect, LargeRunsInParallel) {
  const Tensor x = transposed_copy(random_values({50000, 4}, DType::Float32));
  const Tensor index = random_index({40000}, 50000);
  const Tensor out = index_select(x, 0, index);
  const std::vector<double> xv = to_doubles(x), iv = to_doubles(index);
  std::vector<double> expected;
  for (double i : iv)
    for (int64_t j = 0; j < 4; ++j) expected.push_back(xv[static_cast<int64_t>(i) * 4 + j]);
  EXPECT_TRUE(all_close(to_doubles(out), expected, 0));
  // An error raised on a worker thread reaches the caller.
  std::vector<double> bad = iv;
  bad[30000] = 50000;
  expect_error<IndexError>([&] { index_select(x, 0, index_of(bad, {40000})); },
                           {"index_select", "50000", "dim 0"});
}

TEST(IndexingIndexSelect, Errors) {
  const Tensor x = random_values({3, 4}, DType::Float32);
  expect_error<IndexError>(
      [&] {
        index_select(x, 1, index_of({0, 4}, {2}));
      },
      {"index_select", "index 4", "dim 1", "size 4"});
  expect_error<IndexError>([&] { index_select(x, 0, index_of({-1}, {1})); },
                           {"index_select", "-1"});
  expect_error<DTypeError>([&] { index_select(x, 0, tensor_of({0}, {1}, DType::Int32)); },
                           {"index_select", "int32"});
  expect_error<ShapeError>([&] { index_select(x, 0, index_of({0, 1}, {1, 2})); }, {"index_select"});
  expect_error<IndexError>([&] { index_select(x, 2, index_of({0}, {1})); },
                           {"index_select", "dim 2"});
  expect_error<IndexError>(
      [] {
        index_select(scalar_tensor(1, DType::Int64), 0, index_of({0, 0}, {2}));
      },
      {"index_select"});
}

// ---- gather ----------------------------------------------------------------------------------

TEST(IndexingGather, AllDtypesDimsAndLayouts) {
  const Shape shape = {4, 3, 5};
  for (DType dtype : all_dtypes()) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      for (int layout = 0; layout < 3; ++layout) {
        const Tensor x = with_layout(random_values(shape, dtype), layout);
        Shape index_shape(3);
        for (int64_t d = 0; d < 3; ++d)
          index_shape[d] = d == dim ? random_int(0, 7) : random_int(1, shape[d]);
        const Tensor index = random_index(index_shape, shape[dim], (layout + 1) % 3);
        const Tensor out = gather(x, dim, index);
        ASSERT_EQ(out.shape(), index_shape);
        const std::vector<double> xv = to_doubles(x), iv = to_doubles(index);
        std::vector<double> expected;
        for (int64_t i = 0; i < out.numel(); ++i) {
          std::vector<int64_t> c = unravel(i, index_shape);
          c[dim] = static_cast<int64_t>(iv[i]);
          expected.push_back(xv[ravel(c, shape)]);
        }
        EXPECT_TRUE(all_close(to_doubles(out), expected, 0))
            << dtype_name(dtype) << " dim " << dim << " layout " << layout;
      }
    }
  }
}

TEST(IndexingGather, ScalarsZeroSizeAndErrors) {
  EXPECT_EQ(to_doubles(gather(scalar_tensor(3, DType::Int32), 0, index_of({0}, {}))),
            std::vector<double>{3});
  const Tensor x = random_values({3, 4}, DType::Float32);
  EXPECT_EQ(gather(x, 1, index_of({}, {3, 0})).shape(), (Shape{3, 0}));
  expect_error<IndexError>(
      [&] {
        gather(x, 0, index_of({0, 3}, {1, 2}));
      },
      {"gather", "index 3", "dim 0", "size 3"});
  expect_error<IndexError>([&] { gather(x, 1, index_of({-2}, {1, 1})); }, {"gather", "-2"});
  expect_error<ShapeError>([&] { gather(x, 1, index_of({0, 0}, {2})); }, {"gather"});
  expect_error<ShapeError>([&] { gather(x, 1, random_index({4, 2}, 4)); }, {"gather", "dim 0"});
  expect_error<DTypeError>(
      [&] {
        gather(x, 1, tensor_of({0}, {1, 1}, DType::UInt8));
      },
      {"gather", "uint8"});
  expect_error<IndexError>([&] { gather(x, -3, index_of({0}, {1, 1})); }, {"gather"});
}

// ---- scatter, scatter_add --------------------------------------------------------------------

// An index for scatter of `shape` into x.size(dim) positions, distinct within each row along
// dim (torch leaves the winner among duplicates unspecified).
Tensor distinct_index(const Shape& shape, int64_t dim, int64_t size, int layout) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (int64_t i = 0; i < numel(shape); ++i) {
    std::vector<int64_t> c = unravel(i, shape);
    if (c[dim] != 0) continue;
    std::vector<int64_t> perm(static_cast<size_t>(size));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng());
    for (int64_t j = 0; j < shape[dim]; ++j) {
      c[dim] = j;
      v[ravel(c, shape)] = static_cast<double>(perm[j]);
    }
  }
  return index_of(v, shape, layout);
}

// x with src written (or added) at index along dim, in double precision.
std::vector<double> scatter_reference(const Tensor& x, int64_t dim, const Tensor& index,
                                      const Tensor& src, bool accumulate) {
  std::vector<double> out = to_doubles(x);
  const std::vector<double> iv = to_doubles(index), sv = to_doubles(src);
  for (int64_t i = 0; i < index.numel(); ++i) {
    std::vector<int64_t> c = unravel(i, index.shape());
    const double v = sv[ravel(c, src.shape())];
    c[dim] = static_cast<int64_t>(iv[i]);
    double& target = out[ravel(c, x.shape())];
    target = accumulate ? target + v : v;
  }
  return round_to(x.dtype(), out);
}

TEST(ScatterTest, AllDtypesDimsAndLayouts) {
  const Shape shape = {4, 3, 5};
  for (DType dtype : all_dtypes()) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      for (int layout = 0; layout < 3; ++layout) {
        const Tensor x = with_layout(random_values(shape, dtype), layout);
        Shape index_shape(3), src_shape(3);
        for (int64_t d = 0; d < 3; ++d) {
          index_shape[d] = random_int(d == dim ? 0 : 1, shape[d]);
          src_shape[d] = index_shape[d] + random_int(0, 1);  // src may be larger
        }
        const Tensor index = distinct_index(index_shape, dim, shape[dim], (layout + 2) % 3);
        const Tensor src = with_layout(random_values(src_shape, dtype), (layout + 1) % 3);
        const Tensor out = scatter(x, dim, index, src);
        ASSERT_EQ(out.shape(), shape);
        ASSERT_EQ(out.dtype(), dtype);
        EXPECT_TRUE(all_close(to_doubles(out), scatter_reference(x, dim, index, src, false), 0))
            << dtype_name(dtype) << " dim " << dim << " layout " << layout;
      }
    }
  }
}

TEST(ScatterTest, AddAccumulatesDuplicates) {
  const Shape shape = {4, 3, 5};
  for (DType dtype : all_dtypes()) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      for (int layout = 0; layout < 3; ++layout) {
        const Tensor x = with_layout(random_integers(shape, dtype, 0, 9), layout);
        Shape index_shape(3);
        for (int64_t d = 0; d < 3; ++d)
          index_shape[d] = d == dim ? random_int(0, 8) : random_int(1, shape[d]);
        // Few distinct targets, so most are hit several times.
        const Tensor index = random_index(index_shape, 2, (layout + 1) % 3);
        const Tensor src = with_layout(random_integers(index_shape, dtype, 0, 9), 2 - layout);
        const Tensor out = scatter_add(x, dim, index, src);
        EXPECT_TRUE(all_close(to_doubles(out), scatter_reference(x, dim, index, src, true), 0))
            << dtype_name(dtype) << " dim " << dim << " layout " << layout;
      }
    }
  }
}

TEST(ScatterTest, LargeAddRunsInParallel) {
  const Tensor x = random_integers({60000, 3}, DType::Float64, -5, 5);
  const Tensor index = random_index({60000, 6}, 3, 1);
  const Tensor src = random_integers({60000, 6}, DType::Float64, -5, 5);
  EXPECT_TRUE(all_close(to_doubles(scatter_add(x, 1, index, src)),
                        scatter_reference(x, 1, index, src, true), 0));
  std::vector<double> bad = to_doubles(index);
  bad[200000] = 3;
  expect_error<IndexError>(
      [&] {
        scatter_add(x, 1, index_of(bad, {60000, 6}), src);
      },
      {"scatter_add", "index 3", "dim 1", "size 3"});
}

TEST(ScatterTest, ScalarValue) {
  for (DType dtype : all_dtypes()) {
    const Tensor x = transposed_copy(random_values({3, 4}, dtype));
    const Tensor index = distinct_index({2, 4}, 0, 3, 2);
    const Scalar value = is_floating(dtype) ? Scalar(2.5) : Scalar(3);
    const Tensor out = scatter(x, 0, index, value);
    const Tensor src = tensor_of(std::vector<double>(8, value.to_double()), {2, 4}, dtype);
    EXPECT_TRUE(all_close(to_doubles(out), scatter_reference(x, 0, index, src, false), 0))
        << dtype_name(dtype);
  }
  // The value is cast to x's dtype.
  const Tensor ints = tensor_of({0, 0, 0}, {3}, DType::Int32);
  EXPECT_EQ(to_doubles(scatter(ints, 0, index_of({1}, {1}), Scalar(2.75))),
            (std::vector<double>{0, 2, 0}));
}

TEST(ScatterTest, ScalarsZeroSizeAndLeavesInputAlone) {
  const Tensor x = scalar_tensor(1.5, DType::Float32);
  EXPECT_EQ(to_doubles(scatter(x, 0, index_of({0}, {}), scalar_tensor(7, DType::Float32))),
            std::vector<double>{7});
  const Tensor y = random_values({3, 4}, DType::Float32);
  const std::vector<double> before = to_doubles(y);
  const Tensor out = scatter_add(y, 1, index_of({}, {3, 0}), Tensor::empty({3, 0}, DType::Float32));
  EXPECT_EQ(to_doubles(out), before);
  EXPECT_NE(out.storage().get(), y.storage().get());
  scatter(y, 0, index_of({2}, {1, 1}), Scalar(100));
  EXPECT_EQ(to_doubles(y), before);
  EXPECT_EQ(
      scatter(Tensor::empty({0, 2}, DType::Int64), 1, index_of({}, {0, 1}), Scalar(1)).shape(),
      (Shape{0, 2}));
}

TEST(ScatterTest, Errors) {
  const Tensor x = random_values({3, 4}, DType::Float32);
  const Tensor src = random_values({3, 4}, DType::Float32);
  expect_error<IndexError>(
      [&] {
        scatter(x, 1, index_of({0, 4}, {1, 2}), src);
      },
      {"scatter", "index 4", "dim 1", "size 4"});
  expect_error<IndexError>(
      [&] {
        scatter_add(x, 0, index_of({-1}, {1, 1}), src);
      },
      {"scatter_add", "-1"});
  expect_error<IndexError>(
      [&] {
        scatter(x, 0, index_of({5}, {1, 1}), Scalar(1));
      },
      {"scatter", "5"});
  expect_error<DTypeError>(
      [&] {
        scatter(x, 0, tensor_of({0}, {1, 1}, DType::Int32), src);
      },
      {"scatter", "int32"});
  expect_error<DTypeError>(
      [&] {
        scatter_add(x, 0, index_of({0}, {1, 1}), random_values({3, 4}, DType::Float64));
      },
      {"scatter_add", "float64"});
  expect_error<ShapeError>([&] { scatter(x, 0, index_of({0, 0}, {2}), src); }, {"scatter"});
  expect_error<ShapeError>([&] { scatter(x, 0, random_index({2, 5}, 3), src); }, {"scatter"});
  expect_error<ShapeError>(
      [&] {
        scatter(x, 0, random_index({2, 4}, 3), random_values({1, 4}, DType::Float32));
      },
      {"scatter", "src"});
  expect_error<IndexError>([&] { scatter(x, 2, index_of({0}, {1, 1}), src); }, {"scatter"});
}

// ---- masked ops, nonzero, one_hot ------------------------------------------------------------

TEST(IndexingMasked, FillAllDtypesWithBroadcastMask) {
  const Shape shape = {4, 5};
  for (DType dtype : all_dtypes()) {
    for (const Shape& mask_shape : {Shape{4, 5}, Shape{1, 5}, Shape{4, 1}, Shape{5}, Shape{}}) {
      const Tensor x =
          with_layout(random_values(shape, dtype), static_cast<int>(numel(mask_shape) % 3));
      const Tensor mask = with_layout(random_values(mask_shape, DType::Bool), 2);
      const Scalar value = Scalar(2.5);
      const Tensor out = masked_fill(x, mask, value);
      ASSERT_EQ(out.shape(), shape);
      ASSERT_EQ(out.dtype(), dtype);
      const double cast_value = round_to(dtype, {2.5})[0];
      const std::vector<double> xv = to_doubles(x), mv = to_doubles(mask.expand(shape));
      std::vector<double> expected(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) expected[i] = mv[i] != 0 ? cast_value : xv[i];
      EXPECT_TRUE(all_close(to_doubles(out), expected, 0))
          << dtype_name(dtype) << " mask " << shape_str(mask_shape);
    }
  }
  EXPECT_EQ(masked_fill(Tensor::empty({0, 3}, DType::Float32), tensor_of({1}, {1}, DType::Bool), 1)
                .shape(),
            (Shape{0, 3}));
}

TEST(IndexingMasked, SelectAllDtypesWithBroadcast) {
  for (DType dtype : all_dtypes()) {
    for (const auto& shapes : std::vector<std::pair<Shape, Shape>>{
             {{4, 5}, {4, 5}}, {{4, 1}, {4, 5}}, {{3, 4, 5}, {5}}, {{0, 5}, {5}}, {{}, {}}}) {
      const Tensor x = with_layout(random_values(shapes.first, dtype), 1);
      const Tensor mask = with_layout(random_values(shapes.second, DType::Bool), 2);
      const Shape shape = broadcast_shapes(shapes.first, shapes.second, "test");
      const std::vector<double> xv = to_doubles(x.expand(shape)),
                                mv = to_doubles(mask.expand(shape));
      std::vector<double> expected;
      for (size_t i = 0; i < xv.size(); ++i)
        if (mv[i] != 0) expected.push_back(xv[i]);
      const Tensor out = masked_select(x, mask);
      ASSERT_EQ(out.shape(), (Shape{static_cast<int64_t>(expected.size())}));
      ASSERT_EQ(out.dtype(), dtype);
      EXPECT_TRUE(all_close(to_doubles(out), expected, 0)) << dtype_name(dtype);
    }
  }
}

TEST(IndexingMasked, Errors) {
  const Tensor x = random_values({3, 4}, DType::Float32);
  expect_error<DTypeError>(
      [&] {
        masked_fill(x, random_values({3, 4}, DType::UInt8), 1);
      },
      {"masked_fill", "uint8"});
  expect_error<DTypeError>(
      [&] {
        masked_select(x, random_values({3, 4}, DType::Int64));
      },
      {"masked_select", "int64"});
  expect_error<ShapeError>(
      [&] {
        masked_fill(x, random_values({3, 5}, DType::Bool), 1);
      },
      {"masked_fill"});
  // The mask may broadcast x for masked_select, but not for masked_fill.
  expect_error<ShapeError>(
      [&] {
        masked_fill(x, random_values({2, 3, 4}, DType::Bool), 1);
      },
      {"masked_fill"});
  expect_error<ShapeError>(
      [&] {
        masked_select(x, random_values({4, 3}, DType::Bool));
      },
      {"masked_select"});
}

std::vector<double> nonzero_reference(const Tensor& x) {
  const std::vector<double> xv = to_doubles(x);
  std::vector<double> out;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (xv[i] == 0) continue;
    for (int64_t c : unravel(i, x.shape())) out.push_back(static_cast<double>(c));
  }
  return out;
}

TEST(IndexingNonzero, AllDtypesAndLayouts) {
  for (DType dtype : all_dtypes()) {
    for (const Shape& shape : {Shape{3, 4, 5}, Shape{7}, Shape{}, Shape{0, 3}, Shape{2, 0}}) {
      for (int layout = 0; layout < 3; ++layout) {
        const Tensor x = with_layout(random_integers(shape, dtype, -1, 1), layout);
        const Tensor out = nonzero(x);
        const std::vector<double> expected = nonzero_reference(x);
        const int64_t count = x.dim() == 0 ? static_cast<int64_t>(to_doubles(x)[0] != 0)
                                           : static_cast<int64_t>(expected.size()) / x.dim();
        ASSERT_EQ(out.shape(), (Shape{count, x.dim()})) << dtype_name(dtype);
        ASSERT_EQ(out.dtype(), DType::Int64);
        EXPECT_TRUE(all_close(to_doubles(out), expected, 0)) << dtype_name(dtype);
      }
    }
  }
  // NaN counts as nonzero, -0.0 as zero.
  const Tensor special = tensor_of({std::nan(""), -0.0, 1}, {3}, DType::Float16);
  EXPECT_EQ(to_doubles(nonzero(special)), (std::vector<double>{0, 2}));
}

TEST(IndexingNonzero, LargeKeepsRowMajorOrder) {
  const Tensor x = transposed_copy(random_integers({300, 400}, DType::Float32, 0, 1));
  EXPECT_TRUE(all_close(to_doubles(nonzero(x)), nonzero_reference(x), 0));
}

TEST(IndexingOneHot, ValuesAndInference) {
  const Tensor x = transposed_copy(random_index({3, 4}, 5));
  for (int64_t classes : {int64_t{5}, int64_t{8}, int64_t{-1}}) {
    const Tensor out = one_hot(x, classes);
    const std::vector<double> xv = to_doubles(x);
    const int64_t c =
        classes >= 0 ? classes : static_cast<int64_t>(*std::max_element(xv.begin(), xv.end())) + 1;
    ASSERT_EQ(out.shape(), (Shape{3, 4, c}));
    ASSERT_EQ(out.dtype(), DType::Int64);
    std::vector<double> expected;
    for (double v : xv)
      for (int64_t k = 0; k < c; ++k) expected.push_back(k == static_cast<int64_t>(v) ? 1 : 0);
    EXPECT_TRUE(all_close(to_doubles(out), expected, 0)) << "num_classes " << classes;
  }
  EXPECT_EQ(to_doubles(one_hot(index_of({2}, {}), 3)), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(one_hot(index_of({}, {0}), 4).shape(), (Shape{0, 4}));
}

TEST(IndexingOneHot, Errors) {
  expect_error<DTypeError>([] { one_hot(tensor_of({1}, {1}, DType::Int32), 3); },
                           {"one_hot", "int32"});
  expect_error<IndexError>([] { one_hot(index_of({0, 3}, {2}), 3); }, {"one_hot", "3"});
  expect_error<IndexError>([] { one_hot(index_of({0, -1}, {2}), 3); }, {"one_hot", "-1"});
  expect_error<ValueError>([] { one_hot(index_of({}, {0})); }, {"one_hot"});
}

}  // namespace
}  // namespace rcuda::test
