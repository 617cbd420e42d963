// int8 and int16 on the GPU against the CPU backend (itself checked against integer loops in
// tests/ops/test_narrow_integers.cpp): values at the edges of the dtypes' ranges, where wrapping,
// truncation and the integer special cases of each op show. The every-dtype CUDA tests (copies,
// elementwise, reductions, sort, scatter_add, index_add, random) include int8 and int16 through
// all_dtypes(); these add the extremes that random inputs rarely reach.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "rcuda/ops/nn.h"
#include "support/devices.h"

namespace rcuda {
namespace {

using test::kCpu;
using test::on_cuda;
using test::tensor_of;
using test::values;

// Every value of int8 twice and a spread of int16's, edges included, as [rows, 32].
Tensor edge_values(DType dtype) {
  std::vector<double> v;
  if (dtype == DType::Int8) {
    for (int k = 0; k < 2; ++k)
      for (int x = -128; x < 128; ++x) v.push_back(x);
  } else {
    for (int x = -32768; x < 32768; x += 127) v.push_back(x);
    v.push_back(32767);
    while (v.size() % 32 != 0) v.push_back(-32768);
  }
  return tensor_of(v, {static_cast<int64_t>(v.size()) / 32, 32}, dtype);
}

TEST(CudaNarrowIntegers, ArithmeticWrapsAsOnTheCpu) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : {DType::Int8, DType::Int16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor a = edge_values(dtype);
    // Every value against another: the rows in reverse order.
    const Tensor b = index_select(a, 0, ops::arange(a.size(0) - 1, -1, -1, DType::Int64));
    const Tensor ga = on_cuda(a), gb = on_cuda(b);
    EXPECT_EQ(values(add(ga, gb)), values(add(a, b)));
    EXPECT_EQ(values(sub(ga, gb)), values(sub(a, b)));
    EXPECT_EQ(values(mul(ga, gb)), values(mul(a, b)));
    EXPECT_EQ(values(neg(ga)), values(neg(a)));
    EXPECT_EQ(values(abs(ga)), values(abs(a)));
    EXPECT_EQ(values(pow(ga, 3)), values(pow(a, 3)));
    EXPECT_EQ(values(maximum(ga, gb)), values(maximum(a, b)));
    EXPECT_EQ(values(lt(ga, gb)), values(lt(a, b)));
    // Python-style division by nonzero divisors.
    const Tensor nonzero = where(eq(b, Scalar(int64_t{0})), Scalar(int64_t{-1}), b);
    EXPECT_EQ(values(remainder(ga, on_cuda(nonzero))), values(remainder(a, nonzero)));
    EXPECT_EQ(values(floor_divide(ga, on_cuda(nonzero))), values(floor_divide(a, nonzero)));
    EXPECT_TRUE(test::all_close(values(div(ga, on_cuda(nonzero))), values(div(a, nonzero)), 2e-7));
    // Mixed with uint8: int16 results on both.
    const Tensor u8 = to(a, DType::UInt8);
    const Tensor mixed = add(on_cuda(u8), ga);
    EXPECT_EQ(mixed.dtype(), DType::Int16);
    EXPECT_EQ(values(mixed), values(add(u8, a)));
  }
}

TEST(CudaNarrowIntegers, ConversionsWrapAsOnTheCpu) {
  RCUDA_REQUIRE_CUDA();
  // Floating values past the range: the GPU's own float-to-int conversion saturates, so this
  // checks that both backends go through int64 and wrap (dispatch.h's convert).
  const Tensor f = tensor_of(
      {0.9, -0.9, 127.5, 128.2, -129.7, 300.5, -300.5, 70000.9, -40000.1, 1e6, -1e6, 65535.5}, {12},
      DType::Float64);
  for (DType from : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16}) {
    // float16 overflows past 65504: infinity has no integer value (C++ leaves the conversion
    // undefined, and torch's CPU and CUDA results differ there too), so those become 0 first.
    const Tensor rounded = to(f, from);
    const Tensor finite = lt(abs(rounded), Scalar(std::numeric_limits<double>::infinity()));
    const Tensor x = where(finite, rounded, Scalar(0.0)), gx = on_cuda(x);
    for (DType to_dtype : {DType::Int8, DType::Int16}) {
      EXPECT_EQ(values(to(gx, to_dtype)), values(to(x, to_dtype)))
          << dtype_name(from) << " -> " << dtype_name(to_dtype);
    }
  }
  for (DType dtype : {DType::Int8, DType::Int16}) {
    const Tensor a = edge_values(dtype), ga = on_cuda(a);
    for (DType to_dtype : test::all_dtypes())
      EXPECT_EQ(values(to(ga, to_dtype)), values(to(a, to_dtype)))
          << dtype_name(dtype) << " -> " << dtype_name(to_dtype);
  }
}

TEST(CudaNarrowIntegers, ReductionsAccumulateInInt64) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : {DType::Int8, DType::Int16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor a = edge_values(dtype), ga = on_cuda(a);
    for (const Dims& dims : {Dims{}, Dims{0}, Dims{1}}) {
      const Tensor s = sum(ga, dims);
      EXPECT_EQ(s.dtype(), DType::Int64);
      EXPECT_EQ(values(s), values(sum(a, dims)));
      EXPECT_EQ(values(sum(ga, dims, false, dtype)), values(sum(a, dims, false, dtype)));
    }
    EXPECT_EQ(values(prod(ga.narrow(1, 0, 3), {1})), values(prod(a.narrow(1, 0, 3), {1})));
    EXPECT_EQ(values(max(ga)), values(max(a)));
    EXPECT_EQ(values(min(ga, 1).first), values(min(a, 1).first));
    EXPECT_EQ(values(argmax(ga, 0)), values(argmax(a, 0)));
    EXPECT_EQ(values(cumsum(ga, 1)), values(cumsum(a, 1)));
    EXPECT_EQ(cumsum(ga, 1).dtype(), DType::Int64);
  }
}

TEST(CudaNarrowIntegers, AtomicAddsWrapWhateverTheOrder) {
  RCUDA_REQUIRE_CUDA();
  // Neighbouring bytes of one 32-bit word are updated by different threads at once: the
  // compare-and-swap must keep each byte's own sum.
  for (DType dtype : {DType::Int8, DType::Int16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const int64_t n = 1 << 16;
    const Tensor index = ops::remainder(ops::arange(0, n, 1, DType::Int64), 6);
    const Tensor src = to(ops::remainder(ops::arange(0, n, 1, DType::Int64), 251), dtype);
    const Tensor self = tensor_of({127, -128, 0, 1, -1, 100}, {6}, dtype);
    EXPECT_EQ(values(scatter_add(on_cuda(self), 0, on_cuda(index), on_cuda(src))),
              values(scatter_add(self, 0, index, src)));
    EXPECT_EQ(values(ops::index_add(on_cuda(self), 0, on_cuda(index), on_cuda(src))),
              values(ops::index_add(self, 0, index, src)));
  }
}

TEST(CudaNarrowIntegers, SortAndHardtanh) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : {DType::Int8, DType::Int16}) {
    SCOPED_TRACE(dtype_name(dtype));
    // Rows out of order: the columns reversed.
    const Tensor a = index_select(edge_values(dtype), 1, ops::arange(31, -1, -1, DType::Int64));
    const Tensor ga = on_cuda(a);
    for (bool descending : {false, true}) {
      const auto [gv, gi] = sort(ga, 1, descending);
      const auto [cv, ci] = sort(a, 1, descending);
      EXPECT_EQ(values(gv), values(cv));
      EXPECT_EQ(values(gi), values(ci));
    }
    EXPECT_EQ(values(hardtanh(ga, -1e9, 1e9)), values(a));
    EXPECT_EQ(values(hardtanh(ga, -100.5, 50.5)), values(hardtanh(a, -100.5, 50.5)));
  }
}

}  // namespace
}  // namespace rcuda
