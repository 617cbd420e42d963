// CUDA backend vs CPU backend: indexing ops (index_select, gather, scatter, scatter_add,
// masked_fill, masked_select, nonzero, one_hot, cat, stack, split, chunk) and the Philox random
// streams. Inputs are fresh random tensors made on the host; each op runs through the ops front
// end on both devices and the results are compared (the CPU backend is itself checked against
// plain loops in tests/ops/). GPU operands are also made non-contiguous on the device itself
// (to() would hand over contiguous copies).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "rcuda/core/philox.h"
#include "support/devices.h"

namespace rcuda {
namespace {

using test::backend_tolerance;
using test::kCpu;
using test::kCuda;
using test::kNormalFloatTolerance;
using test::normal_tolerance;
using test::on_cuda;
using test::random_tensor;
using test::tensor_of;
using test::values;

int64_t random_int(int64_t low, int64_t high) {  // in [low, high]
  return std::uniform_int_distribution<int64_t>(low, high)(test::rng());
}

// x's values on the GPU with layout 0: contiguous, 1: transposed memory (2+ dims), 2: every other
// element of a larger buffer, at an odd offset.
Tensor cuda_layout(const Tensor& x, int layout) {
  if (layout == 1 && x.dim() >= 2) return on_cuda(contiguous(x.transpose(0, 1))).transpose(0, 1);
  if (layout >= 1 && x.dim() >= 1) {
    Shape s = x.shape();
    s.back() = 2 * s.back() + 1;
    const Tensor view = Tensor::empty(s, x.dtype(), kCuda).slice(-1, 1, s.back(), 2);
    copy_(view, on_cuda(x));
    return view;
  }
  return on_cuda(x);
}

Tensor random_values(const Shape& shape, DType dtype) {
  return dtype == DType::UInt8 ? random_tensor(shape, dtype, 0, 8) : random_tensor(shape, dtype);
}

Tensor random_index(const Shape& shape, int64_t high) {  // int64 in [0, high)
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (double& x : v) x = static_cast<double>(random_int(0, high - 1));
  return tensor_of(v, shape, DType::Int64);
}

// An index of `shape` whose entries along dim are distinct within each row (a prefix of a random
// permutation of [0, size)), so scatter without accumulate has a single writer per element.
Tensor distinct_index(const Shape& shape, int64_t dim, int64_t size) {
  const int64_t n = numel(shape), inner = numel(Shape(shape.begin() + dim + 1, shape.end()));
  std::vector<double> v(static_cast<size_t>(n));
  // Row (outer, inner) holds the elements outer * length * inner + j * inner + inner_pos.
  for (int64_t row = 0; shape[dim] > 0 && row < n / shape[dim]; ++row) {
    std::vector<int64_t> p(static_cast<size_t>(size));
    std::iota(p.begin(), p.end(), 0);
    std::shuffle(p.begin(), p.end(), test::rng());
    const int64_t outer = row / inner, inner_pos = row % inner;
    for (int64_t j = 0; j < shape[dim]; ++j)
      v[(outer * shape[dim] + j) * inner + inner_pos] = static_cast<double>(p[j]);
  }
  return tensor_of(v, shape, DType::Int64);
}

// Same shape, dtype and values (to `tol`, relative to max(1, |expected|)).
void expect_match(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what) {
  ASSERT_TRUE(gpu.device().is_cuda()) << what;
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  EXPECT_TRUE(test::all_close(values(gpu), values(cpu), tol)) << what;
}

// f() launches work with a bad index; the IndexError comes at the next synchronisation (Note
// [Deferred device errors]), never later.
template <typename F>
void expect_index_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    cuda::synchronize(0);
    ADD_FAILURE() << "expected IndexError";
  } catch (const IndexError& e) {
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << part << "\"";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// ---- index_select, gather --------------------------------------------------------------------

TEST(CudaIndexing, IndexSelectEveryDtypeDimAndLayout) {
  RCUDA_REQUIRE_CUDA();
  const Shape shape = {5, 6, 7};
  for (DType dtype : test::all_dtypes()) {
    const Tensor x = random_values(shape, dtype);
    for (int64_t dim = 0; dim < 3; ++dim) {
      const Tensor index = random_index({random_int(1, 9)}, shape[dim]);  // duplicates too
      const Tensor expected = index_select(x, dim, index);
      for (int layout = 0; layout < 3; ++layout)
        expect_match(index_select(cuda_layout(x, layout), dim, cuda_layout(index, 2 - layout)),
                     expected, 0,
                     std::string(dtype_name(dtype)) + " dim " + std::to_string(dim) + " layout " +
                         std::to_string(layout));
    }
  }
  // Embedding-style lookup, a 0-dim input and a 0-dim index.
  const Tensor table = random_tensor({5000, 96}, DType::BFloat16);
  const Tensor rows = random_index({3001}, 5000);
  expect_match(index_select(on_cuda(table), 0, on_cuda(rows)), index_select(table, 0, rows), 0,
               "lookup");
  const Tensor scalar = tensor_of({4.5}, {}, DType::Float32);
  const Tensor zero = tensor_of({0}, {}, DType::Int64);
  expect_match(index_select(on_cuda(scalar), 0, on_cuda(zero)), index_select(scalar, 0, zero), 0,
               "0-dim");
  expect_match(index_select(on_cuda(table), 1, on_cuda(zero)), index_select(table, 1, zero), 0,
               "0-dim index");
}

TEST(CudaIndexing, GatherEveryDtypeDimAndLayout) {
  RCUDA_REQUIRE_CUDA();
  const Shape shape = {5, 6, 7};
  for (DType dtype : test::all_dtypes()) {
    const Tensor x = random_values(shape, dtype);
    for (int64_t dim = 0; dim < 3; ++dim) {
      Shape index_shape(3);
      for (int64_t d = 0; d < 3; ++d)
        index_shape[d] = d == dim ? random_int(1, 9) : random_int(1, shape[d]);
      const Tensor index = random_index(index_shape, shape[dim]);
      const Tensor expected = gather(x, dim, index);
      for (int layout = 0; layout < 3; ++layout)
        expect_match(gather(cuda_layout(x, layout), dim, cuda_layout(index, (layout + 1) % 3)),
                     expected, 0,
                     std::string(dtype_name(dtype)) + " dim " + std::to_string(dim) + " layout " +
                         std::to_string(layout));
    }
  }
  const Tensor big = random_tensor({2000, 300}, DType::Float32);
  const Tensor index = random_index({2000, 500}, 300);
  expect_match(gather(on_cuda(big), 1, on_cuda(index)), gather(big, 1, index), 0, "large");
}

// ---- scatter, scatter_add, one_hot -----------------------------------------------------------

TEST(CudaIndexing, ScatterWithDistinctIndicesEveryDtypeDimAndLayout) {
  RCUDA_REQUIRE_CUDA();
  const Shape shape = {4, 5, 6};
  for (DType dtype : test::all_dtypes()) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      const Tensor x = random_values(shape, dtype);
      Shape index_shape(3), src_shape(3);
      for (int64_t d = 0; d < 3; ++d) {
        index_shape[d] = random_int(1, shape[d]);
        src_shape[d] = index_shape[d] + random_int(0, 1);  // src may be larger
      }
      const Tensor index = distinct_index(index_shape, dim, shape[dim]);
      const Tensor src = random_values(src_shape, dtype);
      const Tensor expected = scatter(x, dim, index, src);
      for (int layout = 0; layout < 3; ++layout) {
        const std::string what = std::string(dtype_name(dtype)) + " dim " + std::to_string(dim) +
                                 " layout " + std::to_string(layout);
        const Tensor xc = cuda_layout(x, layout), ic = cuda_layout(index, (layout + 1) % 3);
        const Tensor sc = cuda_layout(src, (layout + 2) % 3);
        expect_match(scatter(xc, dim, ic, sc), expected, 0, what);
        expect_match(scatter(xc, dim, ic, Scalar(3)), scatter(x, dim, index, Scalar(3)), 0, what);
        EXPECT_EQ(values(xc), values(x)) << what << ": the input must be left alone";
      }
    }
  }
}

TEST(CudaIndexing, ScatterAddSumsDuplicatesEveryDtype) {
  RCUDA_REQUIRE_CUDA();
  const Shape shape = {4, 5, 6};
  for (DType dtype : test::all_dtypes()) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      Shape index_shape = {random_int(1, 4), random_int(1, 5), random_int(1, 6)};
      index_shape[dim] = random_int(4, 12);
      const Tensor index = random_index(index_shape, 2);  // few targets, hit many times each
      const Tensor x = random_values(shape, dtype), src = random_values(index_shape, dtype);
      // Floating sums run in another order on the GPU: equal to rounding.
      const double tol = is_floating(dtype) ? 16 * backend_tolerance(dtype) : 0;
      for (int layout = 0; layout < 3; ++layout)
        expect_match(scatter_add(cuda_layout(x, layout), dim, cuda_layout(index, 2 - layout),
                                 cuda_layout(src, (layout + 1) % 3)),
                     scatter_add(x, dim, index, src), tol,
                     std::string(dtype_name(dtype)) + " dim " + std::to_string(dim) + " layout " +
                         std::to_string(layout));
    }
  }
}

TEST(CudaIndexing, ScatterAddWithHeavyContentionIsExactOnIntegers) {
  RCUDA_REQUIRE_CUDA();
  // 2^20 values into 7 bins: integer values keep every dtype's sums exact in any order (int8
  // and int16 sums wrap, and wrapping addition does not depend on the order either).
  for (DType dtype : {DType::Int32, DType::Int64, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16, DType::UInt8, DType::Int8, DType::Int16, DType::Bool}) {
    const int64_t n = dtype == DType::Float16 || dtype == DType::BFloat16 ? 1000 : 1 << 20;
    const Tensor x = zeros({7}, dtype);
    const Tensor index = random_index({n}, 7);
    // random_tensor floors only integral dtypes: draw integers, then convert.
    const Tensor src = dtype == DType::Bool
                           ? random_tensor({n}, dtype)
                           : to(random_tensor({n}, DType::Int64, dtype == DType::UInt8 ? 0 : -1, 2),
                                dtype);  // -1, 0, 1
    expect_match(scatter_add(on_cuda(x), 0, on_cuda(index), on_cuda(src)),
                 scatter_add(x, 0, index, src), 0, dtype_name(dtype));
  }
}

TEST(CudaIndexing, OneHot) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = random_index({30, 40}, 9);
  for (int64_t classes : {int64_t{9}, int64_t{12}, int64_t{-1}}) {
    expect_match(one_hot(on_cuda(x), classes), one_hot(x, classes), 0, "contiguous");
    expect_match(one_hot(cuda_layout(x, 1), classes), one_hot(x, classes), 0, "transposed");
  }
  EXPECT_EQ(one_hot(on_cuda(Tensor::empty({0}, DType::Int64)), 4).shape(), (Shape{0, 4}));
}

// ---- masked_fill, masked_select, nonzero -----------------------------------------------------

TEST(CudaIndexing, MaskedFillAndSelectEveryDtypeWithBroadcastMasks) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::all_dtypes()) {
    const Tensor x = random_values({6, 7, 5}, dtype);
    for (const Shape& mask_shape : {Shape{6, 7, 5}, Shape{7, 1}, Shape{5}}) {
      const Tensor mask = random_tensor(mask_shape, DType::Bool);
      for (int layout = 0; layout < 3; ++layout) {
        const std::string what = std::string(dtype_name(dtype)) + " mask " + shape_str(mask_shape) +
                                 " layout " + std::to_string(layout);
        const Tensor xc = cuda_layout(x, layout), mc = cuda_layout(mask, 2 - layout);
        expect_match(masked_fill(xc, mc, Scalar(1)), masked_fill(x, mask, Scalar(1)), 0, what);
        expect_match(masked_select(xc, mc), masked_select(x, mask), 0, what);
      }
    }
  }
  const Tensor x = random_tensor({4, 3}, DType::Float32);
  const Tensor none = zeros({4, 3}, DType::Bool);
  expect_match(masked_select(on_cuda(x), on_cuda(none)), masked_select(x, none), 0, "no element");
}

TEST(CudaIndexing, NonzeroEveryDtypeShapeAndLayout) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::all_dtypes()) {
    for (const Shape& shape :
         {Shape{3, 4, 5}, Shape{7}, Shape{}, Shape{1, 6, 1, 4}, Shape{0, 3}, Shape{2, 0}}) {
      const Tensor x = random_tensor(shape, dtype, dtype == DType::UInt8 ? 0 : -1, 2);  // zeros too
      for (int layout = 0; layout < 3; ++layout)
        expect_match(nonzero(cuda_layout(x, layout)), nonzero(x), 0,
                     std::string(dtype_name(dtype)) + " " + shape_str(shape) + " layout " +
                         std::to_string(layout));
    }
    expect_match(nonzero(on_cuda(zeros({5, 5}, dtype))), nonzero(zeros({5, 5}, dtype)), 0,
                 "all zero");
  }
  // NaN counts as nonzero, -0.0 as zero.
  for (DType dtype : test::floating_dtypes()) {
    const Tensor special = tensor_of({std::nan(""), -0.0, 1, 0}, {4}, dtype);
    EXPECT_EQ(values(nonzero(on_cuda(special))), (std::vector<double>{0, 2})) << dtype_name(dtype);
  }
  // Many blocks of CUB's select, row-major order over a transposed layout.
  const Tensor big = random_tensor({1500, 2001}, DType::Float32, -4, 1);  // ~20% nonzero
  expect_match(nonzero(cuda_layout(big, 1)), nonzero(big), 0, "large transposed");
}

// ---- cat, stack, split, chunk ----------------------------------------------------------------

TEST(CudaIndexing, CatStackSplitChunk) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::all_dtypes()) {
    const Tensor a = random_values({3, 4, 5}, dtype), b = random_values({3, 2, 5}, dtype);
    const Tensor c = random_values({3, 7, 5}, DType::Float16);  // promotes
    const std::string what = dtype_name(dtype);
    expect_match(cat({cuda_layout(a, 1), cuda_layout(b, 2), on_cuda(c)}, 1), cat({a, b, c}, 1), 0,
                 what);
    expect_match(cat({on_cuda(a), on_cuda(Tensor::empty({0}, dtype))}, -1),
                 cat({a, Tensor::empty({0}, dtype)}, -1), 0, what);
    expect_match(stack({cuda_layout(a, 2), on_cuda(a)}, 2), stack({a, a}, 2), 0, what);
    const std::vector<Tensor> pieces = split(cuda_layout(a, 1), 2, 1), host = split(a, 2, 1);
    ASSERT_EQ(pieces.size(), host.size());
    for (size_t i = 0; i < pieces.size(); ++i) expect_match(pieces[i], host[i], 0, what);
    const std::vector<Tensor> chunks = chunk(on_cuda(a), 3, 2), host_chunks = chunk(a, 3, 2);
    ASSERT_EQ(chunks.size(), host_chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i) expect_match(chunks[i], host_chunks[i], 0, what);
  }
}

// Backend::cat's batched launches (Note [Batched cat]): more inputs than one launch takes, parts
// of random sizes (zero included), runs whose bytes allow 16-, 8-, 4-, 2- or 1-byte units, and
// contiguous parts that start at an odd element (narrowed from a larger buffer).
TEST(CudaIndexing, CatOfManyContiguousParts) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::all_dtypes()) {
    const std::string what = dtype_name(dtype);
    for (int64_t dim = 0; dim < 3; ++dim) {
      for (int64_t inner : {1, 3, 16}) {
        std::vector<Tensor> host, device;
        for (int k = 0; k < 130; ++k) {
          Shape s = {3, 2, inner};
          s[dim] = random_int(0, 5);
          host.push_back(random_values(s, dtype));
          device.push_back(on_cuda(host.back()));
        }
        expect_match(cat(device, dim), cat(host, dim), 0,
                     what + " dim " + std::to_string(dim) + " inner " + std::to_string(inner));
      }
    }
    const Tensor buffer = random_values({401}, dtype);
    const Tensor on_device = on_cuda(buffer);
    std::vector<Tensor> host, device;
    for (int64_t start : {1, 2, 5, 8, 33}) {
      host.push_back(buffer.narrow(0, start, 50));
      device.push_back(on_device.narrow(0, start, 50));
      ASSERT_TRUE(device.back().is_contiguous());
    }
    expect_match(cat(device, 0), cat(host, 0), 0, what + " offset parts");
    // fit()'s loss sum: 0-d tensors stacked.
    std::vector<Tensor> scalars, host_scalars;
    for (int k = 0; k < 64; ++k) {
      host_scalars.push_back(random_values({}, dtype));
      scalars.push_back(on_cuda(host_scalars.back()));
    }
    expect_match(stack(scalars), stack(host_scalars), 0, what + " stacked 0-d");
  }
}

// ---- zero-size and errors --------------------------------------------------------------------

TEST(CudaIndexing, ZeroSizeOperands) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = random_tensor({4, 3}, DType::Float32);
  const Tensor empty_index = Tensor::empty({0}, DType::Int64);
  expect_match(index_select(on_cuda(x), 0, on_cuda(empty_index)), index_select(x, 0, empty_index),
               0, "index_select");
  const Tensor index_0 = Tensor::empty({4, 0}, DType::Int64);
  expect_match(gather(on_cuda(x), 1, on_cuda(index_0)), gather(x, 1, index_0), 0, "gather");
  const Tensor src_0 = Tensor::empty({4, 0}, DType::Float32);
  expect_match(scatter_add(on_cuda(x), 1, on_cuda(index_0), on_cuda(src_0)),
               scatter_add(x, 1, index_0, src_0), 0, "scatter_add");
  const Tensor none = Tensor::empty({0, 5}, DType::Float32);
  expect_match(index_select(on_cuda(none), 1, on_cuda(random_index({3}, 5))),
               Tensor::empty({0, 3}, DType::Float32), 0, "empty input");
  expect_match(nonzero(on_cuda(none)), nonzero(none), 0, "nonzero");
}

TEST(CudaIndexing, OutOfRangeIndexThrowsIndexErrorAndTheProcessKeepsWorking) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = on_cuda(random_tensor({5, 4}, DType::Float32));
  const Tensor src = on_cuda(random_tensor({5, 4}, DType::Float32));
  const Tensor too_big = on_cuda(tensor_of({1, 5, 0}, {3}, DType::Int64));
  expect_index_error([&] { index_select(x, 0, too_big); },
                     {"index_select", "index 5", "dim 0", "size 5"});
  expect_index_error([&] { index_select(x, 1, on_cuda(tensor_of({-1}, {1}, DType::Int64))); },
                     {"index_select", "index -1", "dim 1", "size 4"});
  expect_index_error(
      [&] {
        gather(x, 1, on_cuda(tensor_of({0, 4}, {1, 2}, DType::Int64)));
      },
      {"gather", "index 4", "dim 1", "size 4"});
  expect_index_error(
      [&] {
        scatter(x, 1, on_cuda(tensor_of({0, 9}, {1, 2}, DType::Int64)), src);
      },
      {"scatter", "index 9", "dim 1", "size 4"});
  expect_index_error(
      [&] {
        scatter_add(x, 0, on_cuda(tensor_of({-3}, {1, 1}, DType::Int64)), src);
      },
      {"scatter_add", "index -3", "dim 0", "size 5"});
  expect_index_error(
      [&] {
        scatter(x, 0, on_cuda(tensor_of({7}, {1, 1}, DType::Int64)), Scalar(1.0));
      },
      {"scatter", "index 7", "dim 0", "size 5"});
  // One bad index among a million.
  Tensor many = random_index({1 << 20}, 5);
  many.data<int64_t>()[777777] = 1000;
  expect_index_error([&] { index_select(x, 0, on_cuda(many)); }, {"index 1000", "size 5"});
  // Nothing is left broken: the next ops run and are right.
  const Tensor ok = on_cuda(tensor_of({4, 0, 2}, {3}, DType::Int64));
  expect_match(index_select(x, 0, ok), index_select(to(x, kCpu), 0, to(ok, kCpu)), 0, "after");
  expect_match(add(x, 1.0), add(to(x, kCpu), 1.0), 0, "after");
  cuda::synchronize(0);
}

TEST(CudaIndexing, OutOfRangeIndexIsRaisedAtTheNextSynchronisationOnce) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = on_cuda(random_tensor({4, 3}, DType::Float64));
  const Tensor bad = on_cuda(tensor_of({2, 9, 0}, {3}, DType::Int64));
  // The launch returns without waiting for the device; its bad row reads as zeros.
  Tensor picked;
  ASSERT_NO_THROW(picked = index_select(x, 0, bad));
  expect_index_error([] {}, {"index_select", "index 9", "dim 0", "size 4", "cuda:0"});
  // Reported once: the values are there, the bad row zero, and nothing is raised again.
  const std::vector<double> got = values(picked), all = values(x);
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_EQ(got[j], all[2 * 3 + j]);
    EXPECT_EQ(got[3 + j], 0.0);
    EXPECT_EQ(got[6 + j], all[j]);
  }
  EXPECT_NO_THROW(cuda::synchronize(0));
  // The next op that can report raises a pending report (when the bad launch has run by then),
  // or the synchronisation after it does.
  expect_index_error(
      [&] {
        gather(x, 1, on_cuda(tensor_of({0, 5}, {1, 2}, DType::Int64)));
        index_select(x, 0, on_cuda(tensor_of({1}, {1}, DType::Int64)));
      },
      {"gather", "index 5", "dim 1", "size 3"});
  // A copy to the host is a synchronisation too; the first report wins over later ones.
  try {
    scatter_add(x, 0, on_cuda(tensor_of({-2}, {1, 1}, DType::Int64)), x);
    index_select(x, 1, on_cuda(tensor_of({7}, {1}, DType::Int64)));
    values(x);
    ADD_FAILURE() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("scatter_add: index -2"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(cuda::synchronize(0));
}

// ---- random streams --------------------------------------------------------------------------

// make(device) run after the same manual_seed on each device; a fresh seed for each call, drawn
// from the test's own generator (Note [Test seeds]).
template <typename Make>
void expect_same_stream(Make make, double tol, const std::string& what) {
  const uint64_t seed = test::rng()();
  manual_seed(seed);
  const Tensor host = make(kCpu);
  manual_seed(seed);
  const Tensor device = make(kCuda);
  expect_match(device, host, tol, what + " seed " + std::to_string(seed));
}

TEST(CudaRandomStreams, UniformNormalAndIntegersMatchTheCpuForEveryDtypeAndSize) {
  RCUDA_REQUIRE_CUDA();
  for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{6}, int64_t{1023},
                    int64_t{65537}, int64_t{1000003}}) {
    for (DType dtype : test::floating_dtypes()) {
      const std::string what = std::string(dtype_name(dtype)) + " n " + std::to_string(n);
      // Uniform streams are bit-identical, bounds included; normals agree to normal_tolerance.
      expect_same_stream([&](Device d) { return rand({n}, {dtype, d}); }, 0, "rand " + what);
      expect_same_stream([&](Device d) { return uniform_(Tensor::empty({n}, dtype, d), -3, 5); }, 0,
                         "uniform_ " + what);
      const double tol = normal_tolerance(dtype);
      expect_same_stream([&](Device d) { return randn({n}, {dtype, d}); }, tol, "randn " + what);
      expect_same_stream(
          [&](Device d) {
            return normal(1.5, 0.25, {n}, {dtype, d});
          },
          tol, "normal " + what);
    }
    for (DType dtype : test::all_dtypes()) {
      const int64_t high = dtype == DType::Bool    ? 2
                           : dtype == DType::UInt8 ? 256
                           : dtype == DType::Int8  ? 128
                                                   : 1000;
      expect_same_stream(
          [&](Device d) {
            return randint(0, high, {n}, {dtype, d});
          },
          0, std::string("randint ") + dtype_name(dtype));
    }
    // Ranges past 2^32 exercise the whole 64-bit modulo.
    expect_same_stream(
        [&](Device d) {
          return randint(-(int64_t{1} << 62), int64_t{1} << 62, {n}, {DType::Int64, d});
        },
        0, "randint int64 wide");
    expect_same_stream(
        [&](Device d) {
          return randint(-2147483648LL, 2147483647LL, {n}, {DType::Int32, d});
        },
        0, "randint int32 wide");
  }
}

TEST(CudaRandomStreams, FillsLongerThanTwoGridStridesMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  // The float32 normal kernel draws two Philox blocks per iteration while at least two grid
  // strides (16 blocks of 256 threads per SM, 4 elements a thread) remain, then one, then the
  // tail: n covers all three, for every dtype.
  const int64_t stride_elements = int64_t{16} * cuda::properties(0).multiprocessor_count * 256 * 4;
  const int64_t n = 2 * stride_elements + stride_elements / 2 + 3;
  for (DType dtype : test::floating_dtypes()) {
    const std::string what = std::string(dtype_name(dtype)) + " n " + std::to_string(n);
    expect_same_stream(
        [&](Device d) {
          return randn({n}, {dtype, d});
        },
        normal_tolerance(dtype), "randn " + what);
    expect_same_stream(
        [&](Device d) {
          return normal(-2, 3, {n}, {dtype, d});
        },
        normal_tolerance(dtype), "normal " + what);
    expect_same_stream([&](Device d) { return rand({n}, {dtype, d}); }, 0, "rand " + what);
  }
}

TEST(CudaRandomStreams, InPlaceFillsOfStridedAndMisalignedViews) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::floating_dtypes()) {
    const std::string what = dtype_name(dtype);
    const double tol = normal_tolerance(dtype);
    // Transposed, stepped and offset-by-one (contiguous but not vector-aligned) views; the
    // elements outside the view stay zero.
    auto transposed = [&](Device d) {
      const Tensor base = zeros({9, 13}, {dtype, d});
      uniform_(base.transpose(0, 1), -1, 1);
      return base;
    };
    auto stepped = [&](Device d) {
      const Tensor base = zeros({9, 13}, {dtype, d});
      normal_(base.slice(1, 1, 13, 3), 2, 3);
      return base;
    };
    auto offset_by_one = [&](Device d) {
      const Tensor base = zeros({1031}, {dtype, d});
      normal_(base.slice(0, 1, 1031));
      uniform_(base.slice(0, 3, 700));
      return base;
    };
    expect_same_stream(transposed, 0, "uniform_ transposed " + what);
    expect_same_stream(stepped, tol, "normal_ stepped " + what);
    expect_same_stream(offset_by_one, tol, "offset by one " + what);
  }
}

TEST(CudaRandomStreams, ElementsFollowThePhiloxMapping) {
  RCUDA_REQUIRE_CUDA();
  // Straight from philox.h, without the CPU backend: float lanes, double pairs, 64-bit bits.
  const uint64_t seed = test::test_seed();
  manual_seed(seed);
  const std::vector<double> u = values(rand({4099}, {DType::Float32, kCuda}));
  const std::vector<double> d = values(rand({2051}, {DType::Float64, kCuda}));
  const std::vector<double> z = values(randn({4099}, {DType::Float32, kCuda}));
  const std::vector<double> b = values(randint(0, 1 << 30, {2051}, {DType::Int64, kCuda}));
  for (uint64_t i = 0; i < u.size(); ++i) {
    ASSERT_EQ(static_cast<float>(u[i]), philox::uniform_float(seed, 0, i)) << i;
    ASSERT_NEAR(z[i], philox::normal_float(seed, 2, i),
                kNormalFloatTolerance * std::max(1.0, std::fabs(z[i])))
        << i;
  }
  for (uint64_t i = 0; i < d.size(); ++i) {
    ASSERT_EQ(d[i], philox::uniform_double(seed, 1, i)) << i;
    ASSERT_EQ(static_cast<int64_t>(b[i]),
              static_cast<int64_t>(philox::random_bits64(seed, 3, i) % (1 << 30)))
        << i;
  }
}

TEST(CudaRandomStreams, MoreThanTwoToThe31ElementsUseTheWideIndexPath) {
  RCUDA_REQUIRE_CUDA();
  const int64_t n = (int64_t{1} << 31) + 5;  // 4 GiB of float16
  if (cuda::properties(0).total_memory_bytes < 4 * n) GTEST_SKIP() << "needs 8 GiB of GPU memory";
  const uint64_t seed = test::test_seed();
  manual_seed(seed);
  const Tensor t = rand({n}, {DType::Float16, kCuda});
  for (int64_t first : {int64_t{0}, (int64_t{1} << 31) - 3, n - 7}) {
    const std::vector<double> got = values(t.slice(0, first, first + 7));
    for (int64_t k = 0; k < 7; ++k) {
      const float u = philox::uniform_float(seed, 0, static_cast<uint64_t>(first + k));
      EXPECT_EQ(got[k], half_bits_to_float(float_to_half_bits(u))) << first + k;
    }
  }
}

TEST(CudaRandomStreams, NormalStatisticsOfTenMillionSamples) {
  RCUDA_REQUIRE_CUDA();
  manual_seed(test::test_seed());
  const int64_t n = 10000000;
  const std::vector<double> z = values(randn({n}, {DType::Float32, kCuda}));
  double sum = 0, squares = 0, beyond_3 = 0;
  for (double v : z) {
    sum += v;
    squares += v * v;
    beyond_3 += std::fabs(v) > 3 ? 1 : 0;
  }
  const double mean = sum / n, var = squares / n - mean * mean;
  // Five standard errors: sd(mean) = 1/sqrt(n), sd(var) = sqrt(2/n), sd(tail) ~ sqrt(p/n).
  EXPECT_NEAR(mean, 0, 5 / std::sqrt(double(n)));
  EXPECT_NEAR(var, 1, 5 * std::sqrt(2 / double(n)));
  EXPECT_NEAR(beyond_3 / n, 0.0026998, 5 * std::sqrt(0.0027 / n));
  // And through the ops front end on the device: mean and std of normal(3, 2).
  const Tensor g = normal(3, 2, {n}, {DType::Float32, kCuda});
  const std::vector<double> gv = values(g);
  double gs = 0;
  for (double v : gv) gs += v;
  EXPECT_NEAR(gs / n, 3, 10 / std::sqrt(double(n)));
}

}  // namespace
}  // namespace rcuda
