// Tensor metadata and views, checked against index arithmetic done by hand: element (i, j, ...)
// of a view must be the storage element at offset + sum(index * stride) that the view promises.
#include <gtest/gtest.h>

#include "support/reference.h"

namespace rcuda {
namespace {

using test::random_tensor;
using test::to_doubles;

// Value at a multi-index, computed from shape/strides by hand (the independent reference).
double at(const Tensor& t, const std::vector<int64_t>& index) {
  int64_t off = t.offset();
  for (size_t d = 0; d < index.size(); ++d) off += index[d] * t.strides()[d];
  return test::read_element(
      static_cast<const char*>(t.storage()->data()) + off * static_cast<int64_t>(t.element_size()),
      t.dtype());
}

TEST(TensorTest, EmptyIsContiguousWithRowMajorStrides) {
  Tensor t = Tensor::empty({2, 3, 4}, DType::Float64);
  EXPECT_EQ(t.strides(), (Strides{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.element_size(), 8u);
  EXPECT_EQ(Tensor::empty({}, DType::Int32).numel(), 1);
  EXPECT_EQ(Tensor::empty({0, 5}, DType::Int32).numel(), 0);
}

TEST(TensorTest, BadSizesThrowShapeError) {
  EXPECT_THROW(Tensor::empty({2, -1}, DType::Float32), ShapeError);
  EXPECT_THROW(Tensor::empty({int64_t{1} << 40, int64_t{1} << 40}, DType::Float32), ShapeError);
  try {
    Tensor::empty({3, -2}, DType::Float32);
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("-2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Tensor::empty({2}, DType::Float32).size(3), IndexError);
}

TEST(TensorTest, TransposePermuteAndT) {
  Tensor x = random_tensor({2, 3, 4}, DType::Float32);
  Tensor p = x.permute({2, 0, 1});
  ASSERT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_FALSE(p.is_contiguous());
  EXPECT_TRUE(p.is_non_overlapping_and_dense());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(at(p, {i, j, k}), at(x, {j, k, i}));
  Tensor tr = x.transpose(0, -1);
  EXPECT_EQ(tr.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(at(tr, {3, 2, 1}), at(x, {1, 2, 3}));
  EXPECT_EQ(x.select(0, 0).t().shape(), (Shape{4, 3}));
  EXPECT_THROW(x.t(), ShapeError);
  EXPECT_THROW(x.permute({0, 0, 1}), ShapeError);
  EXPECT_THROW(x.permute({0, 1}), ShapeError);
  EXPECT_THROW(x.transpose(0, 3), IndexError);
}

TEST(TensorTest, SliceSelectNarrowWithSteps) {
  Tensor x = random_tensor({5, 7}, DType::Int64, -100, 100);
  Tensor s = x.slice(1, 1, 7, 2);  // columns 1, 3, 5
  ASSERT_EQ(s.shape(), (Shape{5, 3}));
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(at(s, {i, j}), at(x, {i, 1 + 2 * j}));
  EXPECT_EQ(x.slice(0, -2, 100).shape(), (Shape{2, 7}));  // Python-style clamping
  EXPECT_EQ(x.slice(0, 4, 2).shape(), (Shape{0, 7}));
  EXPECT_THROW(x.slice(0, 0, 5, 0), ValueError);
  Tensor row = x.select(0, -1);
  ASSERT_EQ(row.shape(), (Shape{7}));
  EXPECT_EQ(at(row, {6}), at(x, {4, 6}));
  EXPECT_THROW(x.select(0, 5), IndexError);
  Tensor n = x.narrow(1, 2, 3);
  EXPECT_EQ(n.shape(), (Shape{5, 3}));
  EXPECT_EQ(at(n, {4, 0}), at(x, {4, 2}));
  EXPECT_THROW(x.narrow(1, 5, 3), IndexError);
}

TEST(TensorTest, ExpandSqueezeUnsqueeze) {
  Tensor x = random_tensor({3, 1}, DType::Float32);
  Tensor e = x.expand({2, 3, 4});
  ASSERT_EQ(e.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides()[0], 0);
  EXPECT_EQ(e.strides()[2], 0);
  EXPECT_EQ(at(e, {1, 2, 3}), at(x, {2, 0}));
  EXPECT_EQ(x.expand({-1, 5}).shape(), (Shape{3, 5}));
  EXPECT_THROW(x.expand({4, 4}), ShapeError);
  EXPECT_THROW(x.expand({3}), ShapeError);
  EXPECT_EQ(x.squeeze().shape(), (Shape{3}));
  EXPECT_EQ(x.squeeze(0).shape(), (Shape{3, 1}));  // size 3: unchanged, as torch
  EXPECT_EQ(x.unsqueeze(0).shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(x.unsqueeze(-1).shape(), (Shape{3, 1, 1}));
  EXPECT_THROW(x.unsqueeze(3), IndexError);
}

TEST(TensorTest, ViewFollowsStridesOrRefuses) {
  Tensor x = random_tensor({4, 6}, DType::Float32);
  Tensor v = x.view({2, -1, 3});
  ASSERT_EQ(v.shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(v.storage(), x.storage());
  EXPECT_EQ(to_doubles(v), to_doubles(x));
  // A column slice keeps rows contiguous: splitting the last dim is still a view.
  Tensor cols = x.slice(1, 0, 4);
  EXPECT_EQ(to_doubles(cols.view({4, 2, 2})), to_doubles(cols));
  // Merging across the slice gap needs a copy.
  EXPECT_THROW(cols.view({16}), ShapeError);
  EXPECT_THROW(x.t().view({24}), ShapeError);
  EXPECT_THROW(x.view({5, -1}), ShapeError);
  EXPECT_THROW(x.view({-1, -1}), ShapeError);
  EXPECT_EQ(Tensor::empty({0, 3}, DType::Float32).view({3, 0}).shape(), (Shape{3, 0}));
}

TEST(TensorTest, DiagonalOffsets) {
  Tensor x = random_tensor({3, 4}, DType::Float64);
  Tensor d = x.diagonal();
  ASSERT_EQ(d.shape(), (Shape{3}));
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(at(d, {i}), at(x, {i, i}));
  Tensor up = x.diagonal(2);
  ASSERT_EQ(up.shape(), (Shape{2}));
  EXPECT_EQ(at(up, {1}), at(x, {1, 3}));
  Tensor down = x.diagonal(-1);
  ASSERT_EQ(down.shape(), (Shape{2}));
  EXPECT_EQ(at(down, {1}), at(x, {2, 1}));
  EXPECT_EQ(x.diagonal(10).shape(), (Shape{0}));
}

TEST(ShapeTest, BroadcastAndWrap) {
  EXPECT_EQ(broadcast_shapes({3, 1, 5}, {4, 5}, "add"), (Shape{3, 4, 5}));
  EXPECT_EQ(broadcast_shapes({}, {2}, "add"), (Shape{2}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 3}, "add"), (Shape{0, 3}));
  try {
    broadcast_shapes({2, 3}, {4}, "add");
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("add"), std::string::npos);
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos);
    EXPECT_NE(msg.find("[4]"), std::string::npos);
  }
  EXPECT_EQ(wrap_dim(-1, 3, "op"), 2);
  EXPECT_EQ(wrap_dim(0, 0, "op"), 0);
  EXPECT_THROW(wrap_dim(3, 3, "op"), IndexError);
}

TEST(DTypeTest, PromotionLattice) {
  EXPECT_EQ(promote_types(DType::Int32, DType::Float16), DType::Float16);
  EXPECT_EQ(promote_types(DType::UInt8, DType::Int32), DType::Int32);
  EXPECT_EQ(promote_types(DType::Float16, DType::BFloat16), DType::Float32);
  EXPECT_EQ(promote_types(DType::Bool, DType::UInt8), DType::UInt8);
  EXPECT_EQ(promote_types(DType::Int64, DType::Float32), DType::Float32);
  EXPECT_EQ(promote_types(DType::BFloat16, DType::Float64), DType::Float64);
  // Symmetric.
  for (DType a : test::all_dtypes())
    for (DType b : test::all_dtypes()) EXPECT_EQ(promote_types(a, b), promote_types(b, a));
  EXPECT_EQ(dtype_from_name("double"), DType::Float64);
  EXPECT_EQ(dtype_from_name("long"), DType::Int64);
  EXPECT_EQ(dtype_from_name("cfloat"), DType::Complex64);
  EXPECT_THROW(dtype_from_name("complex32"), DTypeError);
}

TEST(DeviceTest, Parse) {
  EXPECT_EQ(Device::parse("cpu"), Device(DeviceType::CPU));
  EXPECT_EQ(Device::parse("cuda:3"), Device(DeviceType::CUDA, 3));
  EXPECT_EQ(Device::parse("cuda").str(), "cuda:0");
  EXPECT_THROW(Device::parse("gpu"), ValueError);
  EXPECT_THROW(Device::parse("cuda:x"), ValueError);
  EXPECT_THROW(Device::parse("cuda:"), ValueError);
}

TEST(MemoryTest, CpuStatsTrackAllocations) {
  const MemoryStats before = cpu_allocator().stats();
  {
    Tensor t = Tensor::empty({1000}, DType::Float64);
    const MemoryStats during = cpu_allocator().stats();
    EXPECT_GE(during.allocated_bytes - before.allocated_bytes, 8000);
    EXPECT_GE(during.peak_allocated_bytes, during.allocated_bytes);
    EXPECT_EQ(during.allocation_count, before.allocation_count + 1);
  }
  const MemoryStats after = cpu_allocator().stats();
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(after.free_count, before.free_count + 1);
}

}  // namespace
}  // namespace rcuda
