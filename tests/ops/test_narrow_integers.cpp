// int8 and int16 (torch.int8 / torch.int16, "char" and "short"): names, promotion against
// torch.promote_types' table, the values of conversions and of wrapping arithmetic, and the ops
// that treat integer dtypes specially (division, remainder, reductions, sort, randint, hardtanh,
// scatter_add, index_add). The generic every-dtype tests cover them too, through all_dtypes().
// References are plain integer arithmetic in int64 truncated to the dtype's width.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "rcuda/ops/nn.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

// v truncated to T's width, as two's complement wraps (an int64 reference of the value).
template <typename T>
double wrap_to(int64_t v) {
  return static_cast<double>(static_cast<T>(static_cast<uint64_t>(v)));
}

TEST(NarrowIntegers, NamesSizesAndParsing) {
  EXPECT_STREQ(dtype_name(DType::Int8), "int8");
  EXPECT_STREQ(dtype_name(DType::Int16), "int16");
  EXPECT_EQ(element_size(DType::Int8), 1u);
  EXPECT_EQ(element_size(DType::Int16), 2u);
  EXPECT_EQ(dtype_from_name("int8"), DType::Int8);
  EXPECT_EQ(dtype_from_name("int16"), DType::Int16);
  EXPECT_EQ(dtype_from_name("short"), DType::Int16);  // torch.short
  for (DType d : {DType::Int8, DType::Int16}) {
    EXPECT_TRUE(is_integral(d, false));
    EXPECT_FALSE(is_floating(d));
    EXPECT_FALSE(is_reduced_float(d));
  }
  // Every dtype's name parses back to it.
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType d = static_cast<DType>(i);
    EXPECT_EQ(dtype_from_name(dtype_name(d)), d) << dtype_name(d);
  }
  const std::string msg = error_message([] { dtype_from_name("int4"); });
  EXPECT_NE(msg.find("int8, int16"), std::string::npos) << msg;
}

// torch.promote_types for every pair of the computing dtypes, row by row in the order below
// (torch's documented lattice: bool < uint8/int8 < int16 < int32 < int64 < floats, with
// uint8 + int8 -> int16, float16 + bfloat16 -> float32, and any float beating any integer).
TEST(NarrowIntegers, PromotionMatchesTorch) {
  using D = DType;
  const D order[] = {D::Bool,  D::UInt8,   D::Int8,     D::Int16,   D::Int32,
                     D::Int64, D::Float16, D::BFloat16, D::Float32, D::Float64};
  const D table[10][10] = {
      // bool      uint8     int8      int16     int32     int64     f16       bf16        f32 f64
      {D::Bool, D::UInt8, D::Int8, D::Int16, D::Int32, D::Int64, D::Float16, D::BFloat16,
       D::Float32, D::Float64},  // bool
      {D::UInt8, D::UInt8, D::Int16, D::Int16, D::Int32, D::Int64, D::Float16, D::BFloat16,
       D::Float32, D::Float64},  // uint8
      {D::Int8, D::Int16, D::Int8, D::Int16, D::Int32, D::Int64, D::Float16, D::BFloat16,
       D::Float32, D::Float64},  // int8
      {D::Int16, D::Int16, D::Int16, D::Int16, D::Int32, D::Int64, D::Float16, D::BFloat16,
       D::Float32, D::Float64},  // int16
      {D::Int32, D::Int32, D::Int32, D::Int32, D::Int32, D::Int64, D::Float16, D::BFloat16,
       D::Float32, D::Float64},  // int32
      {D::Int64, D::Int64, D::Int64, D::Int64, D::Int64, D::Int64, D::Float16, D::BFloat16,
       D::Float32, D::Float64},  // int64
      {D::Float16, D::Float16, D::Float16, D::Float16, D::Float16, D::Float16, D::Float16,
       D::Float32, D::Float32, D::Float64},  // float16
      {D::BFloat16, D::BFloat16, D::BFloat16, D::BFloat16, D::BFloat16, D::BFloat16, D::Float32,
       D::BFloat16, D::Float32, D::Float64},  // bfloat16
      {D::Float32, D::Float32, D::Float32, D::Float32, D::Float32, D::Float32, D::Float32,
       D::Float32, D::Float32, D::Float64},  // float32
      {D::Float64, D::Float64, D::Float64, D::Float64, D::Float64, D::Float64, D::Float64,
       D::Float64, D::Float64, D::Float64},  // float64
  };
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j)
      EXPECT_EQ(promote_types(order[i], order[j]), table[i][j])
          << dtype_name(order[i]) << " with " << dtype_name(order[j]) << ": got "
          << dtype_name(promote_types(order[i], order[j]));
  EXPECT_THROW(promote_types(D::Int8, D::Float8E4M3FN), DTypeError);
}

TEST(NarrowIntegers, MixedOperandsComputeInThePromotedDtype) {
  // uint8 255 + int8 127 needs int16: 382, not a wrapped byte.
  const Tensor u8 = tensor_of({255, 0, 200}, {3}, DType::UInt8);
  const Tensor i8 = tensor_of({127, -128, -1}, {3}, DType::Int8);
  const Tensor sum_mixed = add(u8, i8);
  EXPECT_EQ(sum_mixed.dtype(), DType::Int16);
  EXPECT_EQ(to_doubles(sum_mixed), (std::vector<double>{382, -128, 199}));
  // int16 * int8 is int16 and wraps there: 300 * 120 = 36000 -> 36000 - 65536.
  const Tensor i16 = tensor_of({300, -2, 7}, {3}, DType::Int16);
  const Tensor product = mul(i16, tensor_of({120, 3, -5}, {3}, DType::Int8));
  EXPECT_EQ(product.dtype(), DType::Int16);
  EXPECT_EQ(to_doubles(product), (std::vector<double>{36000 - 65536, -6, -35}));
  // Numbers count by category: int8 + 1 stays int8, int8 + 2.5 is the default float dtype.
  EXPECT_EQ(add(i8, 1).dtype(), DType::Int8);
  EXPECT_EQ(to_doubles(add(i8, 1)), (std::vector<double>{-128, -127, 0}));
  EXPECT_EQ(add(i8, 2.5).dtype(), DType::Float32);
  EXPECT_EQ(add(i16, tensor_of({1}, {}, DType::Int64)).dtype(), DType::Int16);  // 0-dim int64
}

TEST(NarrowIntegers, FloatingValuesConvertByTruncationAndWrap) {
  // As torch (and the other integer dtypes here): toward zero, then modulo 2^bits.
  const std::vector<double> values = {0.9,   -0.9,   127.5,   128.2,   -129.7,
                                      300.5, -300.5, 70000.9, -40000.1};
  for (DType from : {DType::Float32, DType::Float64}) {
    const Tensor f = tensor_of(values, {9}, from);
    std::vector<double> want8, want16;
    for (double v : values) {
      const int64_t t = static_cast<int64_t>(static_cast<float>(v));  // float32 rounding first
      const int64_t exact = from == DType::Float32 ? t : static_cast<int64_t>(v);
      want8.push_back(wrap_to<int8_t>(exact));
      want16.push_back(wrap_to<int16_t>(exact));
    }
    EXPECT_EQ(to_doubles(to(f, DType::Int8)), want8) << dtype_name(from);
    EXPECT_EQ(to_doubles(to(f, DType::Int16)), want16) << dtype_name(from);
  }
  // Between integer dtypes: modulo 2^bits both ways.
  const Tensor big = tensor_of({1000, -1000, 40000, -1, 255}, {5}, DType::Int64);
  EXPECT_EQ(to_doubles(to(big, DType::Int8)), (std::vector<double>{-24, 24, 64, -1, -1}));
  EXPECT_EQ(to_doubles(to(big, DType::Int16)),
            (std::vector<double>{1000, -1000, 40000 - 65536, -1, 255}));
  const Tensor negative = tensor_of({-1, -128, 127}, {3}, DType::Int8);
  EXPECT_EQ(to_doubles(to(negative, DType::UInt8)), (std::vector<double>{255, 128, 127}));
  EXPECT_EQ(to_doubles(to(negative, DType::Int16)), (std::vector<double>{-1, -128, 127}));
  EXPECT_EQ(to_doubles(to(negative, DType::Bool)), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(to_doubles(to(negative, DType::BFloat16)), (std::vector<double>{-1, -128, 127}));
  // item() reads the value back as a number.
  EXPECT_EQ(item(tensor_of({-77}, {}, DType::Int8)).to_int(), -77);
  EXPECT_EQ(item(tensor_of({-30000}, {}, DType::Int16)).to_int(), -30000);
}

TEST(NarrowIntegers, DivisionRemainderAndFloorDivide) {
  const Tensor a = tensor_of({-7, 7, -128, 100, -100, 0}, {6}, DType::Int8);
  const Tensor b = tensor_of({2, -3, -1, 7, 7, 5}, {6}, DType::Int8);
  // True division gives the default float dtype.
  const Tensor q = div(a, b);
  EXPECT_EQ(q.dtype(), DType::Float32);
  EXPECT_TRUE(all_close(to_doubles(q), {-3.5, 7.0 / -3, 128, 100.0 / 7, -100.0 / 7, 0}, 2e-7));
  // Python's // and % (the divisor's sign); -128 // -1 is 128, which wraps to -128 as torch.
  const Tensor floor_q = floor_divide(a, b);
  EXPECT_EQ(floor_q.dtype(), DType::Int8);
  EXPECT_EQ(to_doubles(floor_q), (std::vector<double>{-4, -3, -128, 14, -15, 0}));
  const Tensor r = remainder(a, b);
  EXPECT_EQ(r.dtype(), DType::Int8);
  EXPECT_EQ(to_doubles(r), (std::vector<double>{1, -2, 0, 2, 5, 0}));
  EXPECT_THROW(remainder(a, tensor_of({0}, {1}, DType::Int16)), ValueError);
  EXPECT_THROW(floor_divide(a, tensor_of({0}, {1}, DType::Int16)), ValueError);
  const Tensor s = tensor_of({-32768, 32767, -5}, {3}, DType::Int16);
  EXPECT_EQ(to_doubles(floor_divide(s, 2)), (std::vector<double>{-16384, 16383, -3}));
  EXPECT_EQ(to_doubles(remainder(s, 10)), (std::vector<double>{2, 7, 5}));
}

TEST(NarrowIntegers, UnaryOpsKeepTheDtypeAndWrap) {
  const Tensor x = tensor_of({-128, 127, -3, 0}, {4}, DType::Int8);
  EXPECT_EQ(to_doubles(neg(x)), (std::vector<double>{-128, -127, 3, 0}));  // -(-128) wraps
  EXPECT_EQ(to_doubles(abs(x)), (std::vector<double>{-128, 127, 3, 0}));   // as torch.abs
  EXPECT_EQ(sqrt(x).dtype(), DType::Float32);
  const Tensor p = pow(tensor_of({2, 3, -2}, {3}, DType::Int16), 15);
  EXPECT_EQ(to_doubles(p),
            (std::vector<double>{wrap_to<int16_t>(32768), wrap_to<int16_t>(14348907), -32768}));
  // Exponents past the dtype's range are powers all the same (3^200 mod 2^8, 3^130 mod 2^16).
  EXPECT_EQ(to_doubles(pow(tensor_of({2, 3, -1}, {3}, DType::Int8), 200)),
            (std::vector<double>{0, -95, 1}));
  EXPECT_EQ(to_doubles(pow(tensor_of({3}, {1}, DType::Int16), 130)), (std::vector<double>{18953}));
  EXPECT_EQ(to_doubles(pow(tensor_of({3}, {1}, DType::UInt8), 300)), (std::vector<double>{113}));
  // clamp keeps integral dtypes with integral bounds.
  const Tensor c = clamp(x, Scalar(int64_t{-5}), Scalar(int64_t{100}));
  EXPECT_EQ(c.dtype(), DType::Int8);
  EXPECT_EQ(to_doubles(c), (std::vector<double>{-5, 100, -3, 0}));
  // Integral bounds past the dtype's range bound nothing on that side (never wrapped into it).
  const Tensor wide = clamp(x, Scalar(int64_t{-1000}), Scalar(int64_t{1000}));
  EXPECT_EQ(wide.dtype(), DType::Int8);
  EXPECT_EQ(to_doubles(wide), (std::vector<double>{-128, 127, -3, 0}));
  const Tensor s = tensor_of({-32768, 32767, 9}, {3}, DType::Int16);
  EXPECT_EQ(to_doubles(clamp(s, std::nullopt, Scalar(int64_t{70000}))),
            (std::vector<double>{-32768, 32767, 9}));
  EXPECT_EQ(to_doubles(clamp(s, Scalar(int64_t{-70000}), Scalar(int64_t{5}))),
            (std::vector<double>{-32768, 5, 5}));
}

TEST(NarrowIntegers, HardtanhBoundsStayInsideTheDtype) {
  // Bounds past the dtype's range mean "no bound" (they are clamped to the range, not wrapped).
  const Tensor x = tensor_of({-128, 127, -3, 50}, {4}, DType::Int8);
  EXPECT_EQ(to_doubles(hardtanh(x, -1000, 1000)), (std::vector<double>{-128, 127, -3, 50}));
  EXPECT_EQ(to_doubles(hardtanh(x, -2.7, 40.9)), (std::vector<double>{-2, 40, -2, 40}));
  const Tensor s = tensor_of({-32768, 32767, 5}, {3}, DType::Int16);
  EXPECT_EQ(to_doubles(hardtanh(s, -1e9, 1e9)), (std::vector<double>{-32768, 32767, 5}));
  EXPECT_EQ(hardtanh(s, -1e9, 1e9).dtype(), DType::Int16);
}

TEST(NarrowIntegers, ReductionsAccumulateInInt64) {
  // As torch: sum and prod of integers give int64 without wrapping in the narrow type; max,
  // min and argmax keep or index the input's values; cumsum gives int64 as well.
  const Tensor x = tensor_of({127, 127, 127, 127, -128, -128}, {2, 3}, DType::Int8);
  const Tensor total = sum(x);
  EXPECT_EQ(total.dtype(), DType::Int64);
  EXPECT_EQ(to_doubles(total), (std::vector<double>{4 * 127 - 2 * 128}));
  EXPECT_EQ(to_doubles(sum(x, {1})), (std::vector<double>{381, -129}));
  const Tensor s = tensor_of({300, -200, 400}, {3}, DType::Int16);
  EXPECT_EQ(prod(s).dtype(), DType::Int64);
  EXPECT_EQ(to_doubles(prod(s)), (std::vector<double>{-24000000}));
  EXPECT_EQ(max(x).dtype(), DType::Int8);
  EXPECT_EQ(to_doubles(max(x)), (std::vector<double>{127}));
  EXPECT_EQ(to_doubles(min(s)), (std::vector<double>{-200}));
  EXPECT_EQ(to_doubles(argmax(s)), (std::vector<double>{2}));
  const Tensor running = cumsum(tensor_of({100, 100, 100}, {3}, DType::Int8), 0);
  EXPECT_EQ(running.dtype(), DType::Int64);
  EXPECT_EQ(to_doubles(running), (std::vector<double>{100, 200, 300}));
  EXPECT_EQ(sum(x, {}, false, DType::Int8).dtype(), DType::Int8);  // asked for: wraps
  EXPECT_EQ(to_doubles(sum(x, {}, false, DType::Int8)),
            (std::vector<double>{wrap_to<int8_t>(252)}));
}

TEST(NarrowIntegers, SortOrdersNegativesFirst) {
  for (DType dtype : {DType::Int8, DType::Int16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = tensor_of({5, -128, 127, 0, -1, 5, 3, -7}, {2, 4}, dtype);
    const auto [values, indices] = sort(x, 1);
    EXPECT_EQ(values.dtype(), dtype);
    EXPECT_EQ(to_doubles(values), (std::vector<double>{-128, 0, 5, 127, -7, -1, 3, 5}));
    EXPECT_EQ(to_doubles(indices), (std::vector<double>{1, 3, 0, 2, 3, 0, 2, 1}));
    const auto [down, down_indices] = sort(x, 0, true);
    EXPECT_EQ(to_doubles(down), (std::vector<double>{5, 5, 127, 0, -1, -128, 3, -7}));
    const auto [top, top_indices] = topk(x.view({8}), 3);
    EXPECT_EQ(to_doubles(top), (std::vector<double>{127, 5, 5}));
  }
}

TEST(NarrowIntegers, RandintStaysInTheDtypesRange) {
  manual_seed(7);
  const Tensor r8 = randint(-128, 128, {2000}, DType::Int8);
  const Tensor r16 = randint(-32768, 32768, {2000}, DType::Int16);
  EXPECT_EQ(r8.dtype(), DType::Int8);
  EXPECT_EQ(r16.dtype(), DType::Int16);
  for (const auto& [t, lo, hi] : {std::tuple<Tensor, double, double>{r8, -128, 127},
                                  std::tuple<Tensor, double, double>{r16, -32768, 32767}}) {
    const std::vector<double> v = to_doubles(t);
    const auto [min_it, max_it] = std::minmax_element(v.begin(), v.end());
    EXPECT_GE(*min_it, lo);
    EXPECT_LE(*max_it, hi);
    EXPECT_LT(*min_it, lo / 2);  // 2000 draws reach well into both halves
    EXPECT_GT(*max_it, hi / 2);
  }
  EXPECT_THROW(randint(-129, 0, {2}, DType::Int8), ValueError);
  EXPECT_THROW(randint(0, 129, {2}, DType::Int8), ValueError);
  EXPECT_THROW(randint(0, 32769, {2}, DType::Int16), ValueError);
  EXPECT_NO_THROW(randint(-32768, 0, {2}, DType::Int16));
}

TEST(NarrowIntegers, ScatterAddAndIndexAddWrap) {
  for (DType dtype : {DType::Int8, DType::Int16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const bool i8 = dtype == DType::Int8;
    const double hi = i8 ? 127 : 32767;
    const Tensor self = tensor_of({hi, -3, 0}, {3}, dtype);
    const Tensor index = tensor_of({0, 0, 2, 1}, {4}, DType::Int64);
    const Tensor src = tensor_of({1, 2, -5, 4}, {4}, dtype);
    const std::vector<double> want = {i8 ? wrap_to<int8_t>(130) : wrap_to<int16_t>(32770), 1, -5};
    EXPECT_EQ(to_doubles(scatter_add(self, 0, index, src)), want);
    EXPECT_EQ(to_doubles(ops::index_add(self, 0, index, src)), want);
  }
}

}  // namespace
}  // namespace rcuda::test
