// The op as a value and the funnel: every OpId has a name that maps back to it; autocast's table
// has PyTorch's CUDA float32 ops; the by-name entry points (R's torch_exp, $log(), ^) autocast as
// the C++ functions do; an observer hears outermost calls only.
#include <gtest/gtest.h>

#include <set>

#include "rcuda/autograd/funnel.h"
#include "rcuda/nn/functional.h"
#include "rcuda/rcuda.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

TEST(OpId, EveryOpHasADistinctNameThatMapsBack) {
  std::set<std::string> names;
  for (size_t i = 0; i < kOpCount; ++i) {
    const OpId op = static_cast<OpId>(i);
    const std::string name = op_name(op);
    EXPECT_TRUE(names.insert(name).second) << name << " named twice";
    ASSERT_TRUE(op_from_name(name).has_value()) << name;
    EXPECT_EQ(op_index(*op_from_name(name)), i) << name;
  }
  EXPECT_FALSE(op_from_name("no_such_op").has_value());
  EXPECT_NE(error_message([] {
              unary_op("no_such_op", zeros({2}));
            }).find("unary_op: unknown op \"no_such_op\""),
            std::string::npos);
  EXPECT_NE(error_message([] {
              unary_op("add", zeros({2}));
            }).find("\"add\" is not an elementwise op of one tensor"),
            std::string::npos);
}

// PyTorch 2.11's "CUDA Ops that can autocast to float32" (torch.amp's documentation), restricted
// to the ops rcuda has: an independent list, not read from rcuda's table.
TEST(Autocast, CudaFloat32ListMatchesPyTorchs) {
  const char* float32_ops[] = {"acos",
                               "asin",
                               "cosh",
                               "erfinv",
                               "exp",
                               "expm1",
                               "log",
                               "log10",
                               "log2",
                               "log1p",
                               "reciprocal",
                               "rsqrt",
                               "sinh",
                               "tan",
                               "pow",
                               "softplus",
                               "layer_norm",
                               "group_norm",
                               "norm",
                               "nll_loss",
                               "kl_div",
                               "l1_loss",
                               "smooth_l1_loss",
                               "huber_loss",
                               "mse_loss",
                               "binary_cross_entropy_with_logits",
                               "cross_entropy",
                               "softmax",
                               "log_softmax",
                               "sum",
                               "prod",
                               "cumprod",
                               "cumsum"};
  for (const char* name : float32_ops)
    EXPECT_EQ(autocast::policy(*op_from_name(name), DeviceType::CUDA), autocast::Policy::Float32)
        << name;
  for (const char* name : {"matmul", "mm", "bmm", "addmm", "linear", "conv1d", "conv2d"})
    EXPECT_EQ(autocast::policy(*op_from_name(name), DeviceType::CUDA),
              autocast::Policy::LowerPrecision)
        << name;
  for (const char* name : {"relu", "add", "sin", "max_pool2d", "view", "cat"})
    EXPECT_EQ(autocast::policy(*op_from_name(name), DeviceType::CUDA), autocast::Policy::AsIs)
        << name;
}

// The by-name entry points autocast: torch_exp(x_half) in a CUDA region is float32 in PyTorch.
TEST(Autocast, ByNameEntryPointsAutocastOnCuda) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = to(random_tensor({4, 3}, DType::Float16), kCuda);
  AutocastGuard guard(DeviceType::CUDA, DType::Float16);
  for (const char* name : {"exp", "log", "acos", "asin", "cosh", "sinh", "tan", "erfinv", "log2",
                           "log10", "reciprocal"})
    EXPECT_EQ(unary_op(name, abs(x)).dtype(), DType::Float32) << name;
  EXPECT_EQ(binary_op("pow", x, x).dtype(), DType::Float32);
  EXPECT_EQ(binary_op("pow", x, Scalar(2)).dtype(), DType::Float32);
  EXPECT_EQ(cumprod(x, 1).dtype(), DType::Float32);
  EXPECT_EQ(unary_op("relu", x).dtype(), DType::Float16);
}

struct Recorder final : autograd::OpObserver {
  std::vector<OpId> ops;
  std::vector<size_t> input_counts;
  void on_op(OpId op, const std::vector<Tensor>& inputs, const Attributes&,
             const std::vector<Tensor>&) override {
    ops.push_back(op);
    input_counts.push_back(inputs.size());
  }
};

TEST(Funnel, AnObserverHearsOutermostCallsOnly) {
  Recorder recorder;
  const Tensor x = random_tensor({4, 3}, DType::Float32);
  const Tensor w = random_tensor({2, 3}, DType::Float32);
  {
    autograd::ObserverGuard guard(&recorder);
    // cross_entropy runs log_softmax and nll_loss inside; linear without bias reports it absent.
    nn::cross_entropy(nn::linear(x, w), ops::zeros({4}, DType::Int64));
    exp(x);
  }
  exp(x);  // after the guard: unheard
  EXPECT_EQ(recorder.ops, (std::vector<OpId>{OpId::Linear, OpId::CrossEntropy, OpId::Exp}));
  EXPECT_EQ(recorder.input_counts[0], 3u);
}

}  // namespace
}  // namespace rcuda::test
