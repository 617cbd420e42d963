// index_put_ (self[indices] = values, Note [Index lists] in rcuda/ops/indexing.h) against a plain
// loop over every element of the selection: int64 and bool indices, whole dims before, between
// and after them, broadcast values, accumulate with duplicates, every dtype, non-contiguous self,
// indices and values, zero-size selections, and the errors.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "support/reference.h"

namespace rcuda::test {
namespace {

int64_t random_int(int64_t low, int64_t high) {  // in [low, high]
  return std::uniform_int_distribution<int64_t>(low, high)(rng());
}

// One entry of an index list, as the reference sees it: host values and a shape.
struct Entry {
  enum Kind { Whole, Long, Mask } kind = Whole;
  std::vector<double> values;
  Shape shape;
};

Entry whole() { return {}; }
Entry longs(std::vector<double> v, Shape shape) { return {Entry::Long, std::move(v), shape}; }
Entry mask(std::vector<double> v, Shape shape) { return {Entry::Mask, std::move(v), shape}; }

// count distinct positions in [0, size), each written positive or, at random, negative.
Entry random_positions(int64_t size, int64_t count, Shape shape = {}) {
  std::vector<int64_t> all(static_cast<size_t>(size));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng());
  std::vector<double> v;
  for (int64_t i = 0; i < count; ++i)
    v.push_back(static_cast<double>(random_int(0, 1) ? all[i] : all[i] - size));
  if (shape.empty()) shape = {count};
  return longs(v, shape);
}

// Positions in [-size, size) that may repeat.
Entry random_repeats(int64_t size, Shape shape) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (double& x : v) x = static_cast<double>(random_int(-size, size - 1));
  return longs(v, shape);
}

Entry random_mask(const Shape& shape) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (double& x : v) x = static_cast<double>(random_int(0, 1));
  return mask(v, shape);
}

std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> coords(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    coords[d] = i % shape[d];
    i /= shape[d];
  }
  return coords;
}

// The flat row-major position in `shape` of the trailing coords broadcast onto it (numpy's
// right-aligned broadcasting: size-1 dims read position 0).
int64_t broadcast_flat(const std::vector<int64_t>& coords, const Shape& shape) {
  int64_t flat = 0;
  const size_t lead = coords.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + (shape[d] == 1 ? 0 : coords[lead + d]);
  return flat;
}

// The reference: self's row-major values after self[entries] = values (or +=), by walking the
// selection element by element.
std::vector<double> reference(std::vector<double> self, const Shape& shape,
                              const std::vector<Entry>& entries, const std::vector<double>& values,
                              const Shape& values_shape, bool accumulate) {
  // Per dim: whole (no values) or int64 positions with their shape; masks become coordinates.
  struct Dim {
    bool indexed = false;
    std::vector<int64_t> at;
    Shape shape;
  };
  std::vector<Dim> dims;
  for (const Entry& e : entries) {
    if (e.kind == Entry::Whole) {
      dims.push_back({});
    } else if (e.kind == Entry::Long) {
      Dim d{true, {}, e.shape};
      const int64_t size = shape[dims.size()];
      for (double v : e.values)
        d.at.push_back(v < 0 ? static_cast<int64_t>(v) + size : static_cast<int64_t>(v));
      dims.push_back(d);
    } else {
      const size_t k = e.shape.size();
      std::vector<Dim> cols(k, Dim{true, {}, {}});
      for (int64_t i = 0; i < numel(e.shape); ++i) {
        if (e.values[i] == 0) continue;
        const std::vector<int64_t> c = unravel(i, e.shape);
        for (size_t j = 0; j < k; ++j) cols[j].at.push_back(c[j]);
      }
      for (Dim& c : cols) {
        c.shape = {static_cast<int64_t>(c.at.size())};
        dims.push_back(c);
      }
    }
  }
  dims.resize(shape.size());
  Shape b;  // the indices' broadcast shape
  int first = -1, last = -1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!dims[d].indexed) continue;
    if (first < 0) first = static_cast<int>(d);
    last = static_cast<int>(d);
    const Shape& s = dims[d].shape;
    Shape out(std::max(b.size(), s.size()), 1);
    for (size_t i = 0; i < out.size(); ++i) {
      const int64_t x = i + b.size() < out.size() ? 1 : b[i + b.size() - out.size()];
      const int64_t y = i + s.size() < out.size() ? 1 : s[i + s.size() - out.size()];
      out[i] = x == 1 ? y : x;
    }
    b = out;
  }
  bool adjacent = true;
  for (int d = first; first >= 0 && d <= last; ++d) adjacent = adjacent && dims[d].indexed;
  const size_t before = first >= 0 && adjacent ? static_cast<size_t>(first) : 0;
  // Where each whole dim sits in the selection.
  Shape selection;
  std::vector<size_t> place(shape.size());
  for (size_t d = 0; d < before; ++d) {
    place[d] = selection.size();
    selection.push_back(shape[d]);
  }
  const size_t b_at = selection.size();
  selection.insert(selection.end(), b.begin(), b.end());
  for (size_t d = before; d < shape.size(); ++d) {
    if (dims[d].indexed) continue;
    place[d] = selection.size();
    selection.push_back(shape[d]);
  }
  for (int64_t i = 0; i < numel(selection); ++i) {
    const std::vector<int64_t> s = unravel(i, selection);
    const std::vector<int64_t> bc(s.begin() + b_at, s.begin() + b_at + b.size());
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t coord =
          dims[d].indexed ? dims[d].at[broadcast_flat(bc, dims[d].shape)] : s[place[d]];
      flat = flat * shape[d] + coord;
    }
    const double v = values[broadcast_flat(s, values_shape)];
    self[flat] = accumulate ? self[flat] + v : v;
  }
  return self;
}

// The same values seen through every other element of a larger buffer (offset 1, step 2).
Tensor stepped(const Tensor& t) {
  if (t.dim() == 0) return t;
  Shape s = t.shape();
  s.back() = 2 * s.back() + 1;
  const Tensor view = Tensor::empty(s, t.dtype()).slice(-1, 1, s.back(), 2);
  copy_(view, t);
  return view;
}

// Layout 0: contiguous, 1: transposed memory, 2: stepped slice.
Tensor with_layout(const Tensor& t, int layout) {
  if (layout == 1 && t.dim() >= 2) return transposed_copy(t);
  if (layout >= 1) return stepped(t);
  return t;
}

IndexList to_index_list(const std::vector<Entry>& entries, int layout) {
  IndexList list;
  for (const Entry& e : entries) {
    if (e.kind == Entry::Whole) {
      list.emplace_back(std::nullopt);
    } else {
      const DType dtype = e.kind == Entry::Long ? DType::Int64 : DType::Bool;
      list.emplace_back(with_layout(tensor_of(e.values, e.shape, dtype), layout));
    }
  }
  return list;
}

// Values exact in every dtype (small integers; 0/1 for bool), so sums are exact too.
Tensor random_values(const Shape& shape, DType dtype) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (double& x : v)
    x = static_cast<double>(dtype == DType::Bool ? random_int(0, 1) : random_int(0, 9));
  return tensor_of(v, shape, dtype);
}

struct Case {
  const char* name;
  Shape shape;
  std::vector<Entry> entries;
  Shape values_shape;
};

// Runs one case for dtype and layout and compares self (and its base) with the reference.
void check_case(const Case& c, DType dtype, int layout, bool accumulate) {
  SCOPED_TRACE(std::string(c.name) + " " + dtype_name(dtype) + " layout " + std::to_string(layout) +
               (accumulate ? " accumulate" : ""));
  const Tensor self = with_layout(random_values(c.shape, dtype), layout);
  const Tensor values = with_layout(random_values(c.values_shape, dtype), 2 - layout);
  const std::vector<double> before = to_doubles(self);
  const std::vector<double> expected =
      reference(before, c.shape, c.entries, to_doubles(values), c.values_shape, accumulate);
  const uint64_t version = self.storage()->version();
  const Tensor out = index_put_(self, to_index_list(c.entries, layout), values, accumulate);
  EXPECT_TRUE(out.is_same(self));
  EXPECT_GT(self.storage()->version(), version);
  std::vector<double> want = expected;
  if (dtype == DType::Bool)
    for (double& x : want) x = x != 0 ? 1 : 0;
  if (dtype == DType::UInt8)
    for (double& x : want) x = static_cast<double>(static_cast<uint8_t>(x));
  EXPECT_TRUE(all_close(to_doubles(self), want, 0));
}

std::vector<Case> cases() {
  return {
      {"one index, rows", {5, 3}, {random_positions(5, 3)}, {3, 3}},
      {"one index, a row broadcast", {5, 3}, {random_positions(5, 4)}, {3}},
      {"one index, a number", {6}, {random_positions(6, 4)}, {}},
      {"a 2-d index", {6, 2}, {random_positions(6, 4, {2, 2})}, {2, 2, 2}},
      {"whole then index", {3, 6, 2}, {whole(), random_positions(6, 3)}, {3, 3, 2}},
      {"pairs", {4, 5}, {random_positions(4, 3), random_positions(5, 3)}, {3}},
      {"outer product",
       {4, 5},
       {random_positions(4, 2, {2, 1}), random_positions(5, 3, {1, 3})},
       {2, 3}},
      {"separated by a whole dim",
       {4, 3, 5},
       {random_positions(4, 2), whole(), random_positions(5, 2)},
       {2, 3}},
      {"a 0-d index", {4, 3}, {random_positions(4, 1, {})}, {3}},
      {"mask over all dims", {3, 4}, {random_mask({3, 4})}, {}},
      {"mask over leading dims", {3, 4, 2}, {random_mask({3, 4})}, {1, 2}},
      {"index then mask", {4, 3, 5}, {random_positions(4, 1, {}), whole(), random_mask({5})}, {1}},
      {"no indices", {2, 3}, {}, {3}},
  };
}

TEST(IndexPut, AgainstLoopsEveryDtypeAndLayout) {
  for (const Case& c : cases())
    for (DType dtype : all_dtypes())
      for (int layout = 0; layout < 3; ++layout) check_case(c, dtype, layout, false);
}

TEST(IndexPut, AccumulateAddsDuplicates) {
  const std::vector<Case> with_repeats = {
      {"repeats", {5, 3}, {random_repeats(5, {8})}, {8, 3}},
      {"repeats, a number", {4}, {random_repeats(4, {10})}, {}},
      {"repeated pairs", {3, 4}, {random_repeats(3, {6}), random_repeats(4, {6})}, {6}},
      {"repeats in a 2-d index", {3, 2}, {random_repeats(3, {2, 3})}, {3, 1}},
  };
  for (const Case& c : with_repeats)
    for (DType dtype : all_dtypes())
      for (int layout = 0; layout < 3; ++layout) check_case(c, dtype, layout, true);
  for (const Case& c : cases()) check_case(c, DType::Float32, 1, true);
}

TEST(IndexPut, WritesThroughViewsIntoTheirBase) {
  const Tensor base = random_values({4, 6}, DType::Float32);
  const std::vector<double> before = to_doubles(base);
  const Tensor view = base.slice(1, 1, 6, 2);  // columns 1, 3, 5
  index_put_(view, {std::nullopt, tensor_of({2, 0}, {2}, DType::Int64)},
             scalar_tensor(-1.0, DType::Float32));
  std::vector<double> expected = before;
  for (int64_t r = 0; r < 4; ++r) expected[r * 6 + 5] = expected[r * 6 + 1] = -1;
  EXPECT_TRUE(all_close(to_doubles(base), expected, 0));
}

TEST(IndexPut, ValuesThatAliasSelf) {
  // x[[0, 1, 2]] = x[1:4]: the values are read before any is written.
  const Tensor x = tensor_of({0, 1, 2, 3, 4}, {5}, DType::Float64);
  index_put_(x, {tensor_of({0, 1, 2}, {3}, DType::Int64)}, x.slice(0, 1, 4));
  EXPECT_TRUE(all_close(to_doubles(x), {1, 2, 3, 3, 4}, 0));
}

TEST(IndexPut, ZeroSizeSelectionsAndZeroDimSelf) {
  const Tensor x = random_values({3, 4}, DType::Float32);
  const std::vector<double> before = to_doubles(x);
  index_put_(x, {Tensor::empty({0}, DType::Int64)}, scalar_tensor(5.0, DType::Float32));
  index_put_(x, {tensor_of(std::vector<double>(12, 0), {3, 4}, DType::Bool)},
             Tensor::empty({0}, DType::Float32));
  index_put_(x, {std::nullopt, Tensor::empty({0}, DType::Int64)},
             Tensor::empty({3, 0}, DType::Float32));
  EXPECT_TRUE(all_close(to_doubles(x), before, 0));
  const Tensor empty_rows = Tensor::empty({0, 3}, DType::Float32);
  index_put_(empty_rows, {std::nullopt, tensor_of({2}, {1}, DType::Int64)},
             scalar_tensor(1.0, DType::Float32));
  const Tensor s = scalar_tensor(2.0, DType::Float64);
  index_put_(s, {}, scalar_tensor(7.0, DType::Float64));
  EXPECT_EQ(item(s).to_double(), 7.0);
}

TEST(IndexPut, PutWritesAtFlatPositions) {
  // put_ sees self as 1-D: positions of any shape, values broadcast to it.
  const Tensor x = transposed_copy(random_values({3, 4}, DType::Float64));
  std::vector<double> expected = to_doubles(x);
  const Tensor positions = tensor_of({11, 0, 5, 6}, {2, 2}, DType::Int64);
  const Tensor values = tensor_of({-1, -2}, {2}, DType::Float64);
  ops::put_(x, positions, values);
  expected[11] = -1, expected[0] = -2, expected[5] = -1, expected[6] = -2;
  EXPECT_TRUE(all_close(to_doubles(x), expected, 0));
  ops::put_(x, tensor_of({1, 1}, {2}, DType::Int64), scalar_tensor(0.5, DType::Float64), true);
  expected[1] += 1;
  EXPECT_TRUE(all_close(to_doubles(x), expected, 0));
  EXPECT_THROW(ops::put_(x, tensor_of({12}, {1}, DType::Int64), values.slice(0, 0, 1)), IndexError);
}

TEST(IndexPut, PositionsAreRowMajorOffsetsInTheSelectionShape) {
  const Tensor x = Tensor::empty({3, 4, 5}, DType::Float32);
  // x[[2, 0], :, [-1, 1]]: a whole dim between the indices puts their shape first.
  const Tensor p = ops::index_put_positions(
      x,
      {tensor_of({2, 0}, {2}, DType::Int64), std::nullopt, tensor_of({-1, 1}, {2}, DType::Int64)},
      scalar_tensor(0.0, DType::Float32));
  ASSERT_EQ(p.shape(), (Shape{2, 4}));
  std::vector<double> expected;
  for (int64_t i : {2 * 20 + 4, 0 * 20 + 1})
    for (int64_t j = 0; j < 4; ++j) expected.push_back(static_cast<double>(i + j * 5));
  EXPECT_TRUE(all_close(to_doubles(p), expected, 0));
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

TEST(IndexPut, Errors) {
  const Tensor x = random_values({3, 4}, DType::Float32);
  const Tensor one = scalar_tensor(1.0, DType::Float32);
  const Tensor i2 = tensor_of({0, 1}, {2}, DType::Int64);
  expect_error<IndexError>(
      [&] {
        index_put_(x, {i2, i2, i2}, one);
      },
      {"index_put_", "too many indices", "2 dims"});
  expect_error<IndexError>(
      [&] {
        index_put_(x, {std::nullopt, std::nullopt, i2}, one);
      },
      {"index_put_", "too many indices"});
  expect_error<DTypeError>([&] { index_put_(x, {tensor_of({0}, {1}, DType::Float32)}, one); },
                           {"index_put_", "indices[0]", "int64 or bool", "float32"});
  expect_error<IndexError>([&] { index_put_(x, {tensor_of({3}, {1}, DType::Int64)}, one); },
                           {"index_put_", "index 3", "dim 0 of size 3"});
  expect_error<IndexError>(
      [&] {
        index_put_(x, {std::nullopt, tensor_of({1, -5}, {2}, DType::Int64)}, one);
      },
      {"index_put_", "index -5", "dim 1 of size 4", "indices[1]"});
  expect_error<IndexError>(
      [&] {
        index_put_(x, {tensor_of({1, 1, 1}, {3}, DType::Bool), i2}, one);
      },
      {"index_put_", "cannot be broadcast together", "shape [2] at dim 1", "[3]"});
  expect_error<IndexError>(
      [&] {
        index_put_(x, {tensor_of({1, 0}, {2}, DType::Bool)}, one);
      },
      {"index_put_", "mask indices[0]", "shape [2]", "sizes [3]"});
  expect_error<IndexError>([&] { index_put_(x, {scalar_tensor(true, DType::Bool)}, one); },
                           {"index_put_", "0-d bool mask"});
  expect_error<IndexError>(
      [&] {
        index_put_(x, {i2, tensor_of({0, 1, 2}, {3}, DType::Int64)}, one);
      },
      {"index_put_", "cannot be broadcast together", "[3]", "[2]"});
  expect_error<DTypeError>([&] { index_put_(x, {i2}, scalar_tensor(1.0, DType::Float64)); },
                           {"index_put_", "values", "float32", "float64"});
  expect_error<ShapeError>([&] { index_put_(x, {i2}, random_values({3}, DType::Float32)); },
                           {"index_put_", "values of shape [3]", "selection's shape [2, 4]"});
  expect_error<ShapeError>(
      [&] {
        index_put_(x, {i2}, random_values({1, 2, 4}, DType::Float32));
      },
      {"index_put_", "[1, 2, 4]", "[2, 4]"});
  expect_error<ValueError>(
      [&] {
        index_put_(random_values({3}, DType::Float32).expand({2, 3}), {i2}, one);
      },
      {"index_put_", "expanded"});
  expect_error<DTypeError>([&] { ops::put_(x, tensor_of({0}, {1}, DType::Int32), one); },
                           {"put_", "int64", "int32"});
  // Nothing was written by the failed calls.
}

}  // namespace
}  // namespace rcuda::test
