// Channels-last activations and parameters flow through a network without copies back to NCHW
// (Note [Elementwise outputs keep channels-last] in src/ops/ops_util.h): elementwise results,
// activation gradients, leaf gradients (Note [Accumulating into grad]) and optimizer state keep
// a channels-last operand's layout, with the values of the same computation on contiguous
// tensors (checked against plain double loops where the op is simple enough).
#include <cmath>
#include <memory>
#include <vector>

#include "ops/layer_test_util.h"
#include "rcuda/optim/adam.h"
#include "rcuda/optim/sgd.h"
#include "rcuda/tensor/memory_format.h"

namespace rcuda::test {
namespace {

bool is_channels_last(const Tensor& t) {
  return t.strides() == memory_format_strides(t.shape(), MemoryFormat::ChannelsLast);
}

TEST(ChannelsLastFlow, ElementwiseResultsKeepTheLayout) {
  const Shape shape = {2, 3, 4, 5};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = in_layout(random_tensor(shape, dtype), Layout::ChannelsLast);
    const Tensor y = in_layout(random_tensor(shape, dtype), Layout::ChannelsLast);
    const Tensor yc = random_tensor(shape, dtype);
    const Tensor bias = random_tensor({1, 3, 1, 1}, dtype);
    ASSERT_TRUE(is_channels_last(x));
    const std::vector<double> xv = to_doubles(x), yv = to_doubles(y), ycv = to_doubles(yc),
                              bv = to_doubles(bias);
    std::vector<double> relu_ref, add_ref, mixed_ref, bias_ref;
    for (size_t i = 0; i < xv.size(); ++i) {
      const size_t c = (i / 20) % 3;
      relu_ref.push_back(std::max(0.0, xv[i]));
      add_ref.push_back(xv[i] + yv[i]);
      mixed_ref.push_back(yv[i] * ycv[i]);
      bias_ref.push_back(xv[i] + bv[c]);
    }
    const Tensor r = relu(x), s = add(x, y), m = mul(yc, y), b = add(x, bias);
    EXPECT_TRUE(is_channels_last(r));
    EXPECT_TRUE(is_channels_last(s));
    EXPECT_TRUE(is_channels_last(m)) << "a channels-last operand of the full shape decides";
    EXPECT_TRUE(is_channels_last(b)) << "a broadcast bias keeps the activation's layout";
    EXPECT_TRUE(all_close(to_doubles(r), relu_ref, 0));
    EXPECT_TRUE(all_close(to_doubles(s), add_ref, tolerance(dtype)));
    EXPECT_TRUE(all_close(to_doubles(m), mixed_ref, tolerance(dtype)));
    EXPECT_TRUE(all_close(to_doubles(b), bias_ref, tolerance(dtype)));
    const Tensor w = where(gt(x, 0.0), x, y);
    EXPECT_TRUE(is_channels_last(w));
    // Contiguous operands give contiguous results; other ranks are untouched.
    EXPECT_TRUE(add(yc, yc).is_contiguous());
    EXPECT_TRUE(relu(random_tensor({2, 3, 4}, dtype)).is_contiguous());
  }
}

TEST(ChannelsLastFlow, ActivationGradientsAndLeafGradientsKeepTheLayout) {
  const Shape shape = {2, 4, 3, 3};
  const Tensor x = in_layout(random_tensor(shape, DType::Float64), Layout::ChannelsLast);
  x.requires_grad_();
  const Tensor upstream = random_tensor(shape, DType::Float64);
  autograd::backward(sum(mul(relu(x), upstream)));
  const Tensor g = x.grad();
  ASSERT_TRUE(g.defined());
  EXPECT_TRUE(is_channels_last(g));
  const std::vector<double> xv = to_doubles(autograd::detach(x)), uv = to_doubles(upstream);
  std::vector<double> want;
  for (size_t i = 0; i < xv.size(); ++i) want.push_back(xv[i] > 0 ? uv[i] : 0.0);
  EXPECT_TRUE(all_close(to_doubles(g), want, 1e-15));

  // A gradient that arrives contiguous is copied into the leaf's layout.
  const Tensor w = in_layout(random_tensor(shape, DType::Float64), Layout::ChannelsLast);
  w.requires_grad_();
  autograd::backward(sum(mul(contiguous(w), upstream)));
  EXPECT_TRUE(is_channels_last(w.grad()));
  EXPECT_TRUE(all_close(to_doubles(w.grad()), uv, 0));
}

// The same steps on a channels-last parameter and on a contiguous copy of it give the same
// values (the contiguous path is checked against torch's algorithms in test_optimizers.cpp),
// and the parameter and its state stay channels-last, whatever layout the gradient has.
template <typename Opt, typename Options>
void check_steps(const Options& options, bool contiguous_grads) {
  const Shape shape = {3, 4, 3, 2};
  const Tensor start = random_tensor(shape, DType::Float32);
  const Tensor p_cl = in_layout(start, Layout::ChannelsLast);
  const Tensor p_c = in_layout(start, Layout::Contiguous);
  p_cl.requires_grad_();
  p_c.requires_grad_();
  Opt opt_cl(std::vector<Tensor>{p_cl}, options), opt_c(std::vector<Tensor>{p_c}, options);
  for (int step = 0; step < 3; ++step) {
    const Tensor g = random_tensor(shape, DType::Float32);
    opt_cl.zero_grad();
    opt_c.zero_grad();
    {
      NoGradGuard no_grad;
      p_cl.set_grad(contiguous_grads ? in_layout(g, Layout::Contiguous)
                                     : in_layout(g, Layout::ChannelsLast));
      p_c.set_grad(in_layout(g, Layout::Contiguous));
    }
    opt_cl.step();
    opt_c.step();
    EXPECT_TRUE(is_channels_last(p_cl));
    EXPECT_TRUE(all_close(to_doubles(p_cl), to_doubles(p_c), 1e-6)) << "step " << step;
  }
  const optim::StateDict state = opt_cl.state_dict();
  for (const auto& [name, buffer] : state.state.at(0).tensors) {
    EXPECT_TRUE(is_channels_last(buffer)) << name;
  }
}

TEST(ChannelsLastFlow, OptimizersUpdateChannelsLastParametersInPlace) {
  optim::SGDOptions sgd;
  sgd.lr = 0.1;
  sgd.momentum = 0.9;
  sgd.weight_decay = 1e-2;
  optim::AdamOptions adam;
  adam.lr = 1e-2;
  for (bool contiguous_grads : {false, true}) {
    SCOPED_TRACE(contiguous_grads ? "contiguous gradients" : "channels-last gradients");
    check_steps<optim::SGD>(sgd, contiguous_grads);
    check_steps<optim::Adam>(adam, contiguous_grads);
  }
}

}  // namespace
}  // namespace rcuda::test

namespace rcuda::test {
namespace {

TEST(ChannelsLastFlow, ContiguousInAMemoryFormat) {
  const Tensor x = random_tensor({2, 3, 4, 5}, DType::Float64);
  const Tensor cl = contiguous(x, MemoryFormat::ChannelsLast);
  EXPECT_TRUE(is_channels_last(cl));
  EXPECT_TRUE(all_close(to_doubles(cl), to_doubles(x), 0));
  EXPECT_EQ(contiguous(cl, MemoryFormat::ChannelsLast).impl(), cl.impl()) << "no copy when it is";
  const Tensor back = contiguous(cl, MemoryFormat::Contiguous);
  EXPECT_TRUE(back.is_contiguous());
  EXPECT_TRUE(all_close(to_doubles(back), to_doubles(x), 0));
  EXPECT_NE(error_message([&] {
              contiguous(random_tensor({2, 3, 4}, DType::Float32), MemoryFormat::ChannelsLast);
            })
                .find("contiguous: the channels-last memory format needs a 4-D tensor, got shape "
                      "[2, 3, 4]"),
            std::string::npos);
  const Tensor leaf = random_tensor({2, 3, 2, 2}, DType::Float64);
  leaf.requires_grad_();
  const Tensor upstream = random_tensor({2, 3, 2, 2}, DType::Float64);
  autograd::backward(sum(mul(contiguous(leaf, MemoryFormat::ChannelsLast), upstream)));
  EXPECT_TRUE(all_close(to_doubles(leaf.grad()), to_doubles(upstream), 0));
}

}  // namespace
}  // namespace rcuda::test
