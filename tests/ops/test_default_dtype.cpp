// The default floating dtype (Note [Default floating dtype] in rcuda/core/dtype.h): what creation
// without a dtype and integer-to-floating results give, as torch.set_default_dtype changes them.
#include <gtest/gtest.h>

#include <string>

#include "support/reference.h"

namespace rcuda::test {
namespace {

// Sets the default for one test and puts float32 back, whatever the test does.
class DefaultDtypeTest : public ::testing::Test {
 protected:
  void TearDown() override { set_default_float_dtype(DType::Float32); }
};

TEST_F(DefaultDtypeTest, Float32UntilChanged) {
  EXPECT_EQ(default_float_dtype(), DType::Float32);
  EXPECT_EQ(zeros({2}).dtype(), DType::Float32);
  EXPECT_EQ(TensorOptions().dtype, DType::Float32);
}

TEST_F(DefaultDtypeTest, Float64ChangesCreationAndIntegerToFloatingResults) {
  set_default_float_dtype(DType::Float64);
  EXPECT_EQ(default_float_dtype(), DType::Float64);
  EXPECT_EQ(zeros({2}).dtype(), DType::Float64);
  EXPECT_EQ(ones({2, 3}).dtype(), DType::Float64);
  EXPECT_EQ(randn({3}).dtype(), DType::Float64);
  EXPECT_EQ(rand({3}).dtype(), DType::Float64);
  EXPECT_EQ(linspace(0, 1, 5).dtype(), DType::Float64);
  EXPECT_EQ(eye(2).dtype(), DType::Float64);
  const Tensor r = arange(0, 0.35, 0.1);
  EXPECT_EQ(r.dtype(), DType::Float64);
  EXPECT_TRUE(all_close(to_doubles(r), {0, 0.1, 0.2, 0.30000000000000004}, 1e-15));
  EXPECT_EQ(arange(0, 3, 1).dtype(), DType::Int64);  // integral ranges are not floating
  // An integral tensor with a floating number, true division, floating unary ops.
  const Tensor i = tensor_of({1, 2, 3}, {3}, DType::Int8);
  EXPECT_EQ(add(i, 0.1).dtype(), DType::Float64);
  EXPECT_TRUE(all_close(to_doubles(add(i, 0.1)), {1.1, 2.1, 3.1}, 1e-15));
  EXPECT_EQ(div(i, i).dtype(), DType::Float64);
  EXPECT_EQ(sqrt(i).dtype(), DType::Float64);
  // A float32 tensor stays float32: the default decides only what no operand decides.
  EXPECT_EQ(add(zeros({2}, DType::Float32), 0.1).dtype(), DType::Float32);
  EXPECT_EQ(full({2}, 1.5, DType::Float32).dtype(), DType::Float32);
  set_default_float_dtype(DType::Float32);
  EXPECT_EQ(zeros({2}).dtype(), DType::Float32);
  EXPECT_EQ(add(i, 0.1).dtype(), DType::Float32);
}

TEST_F(DefaultDtypeTest, OnlyFloat32AndFloat64) {
  for (DType d : {DType::Int32, DType::Int8, DType::Bool, DType::Float16, DType::BFloat16,
                  DType::Float8E4M3FN}) {
    SCOPED_TRACE(dtype_name(d));
    const std::string msg = error_message([d] { set_default_float_dtype(d); });
    EXPECT_NE(msg.find("only floating-point types are supported as the default type"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find(dtype_name(d)), std::string::npos) << msg;
    EXPECT_THROW(set_default_float_dtype(d), DTypeError);
    EXPECT_EQ(default_float_dtype(), DType::Float32);  // unchanged by the refusal
  }
}

}  // namespace
}  // namespace rcuda::test
