// nn activations against double-precision formulas, their gradients against central
// differences, and their errors.
#include <cmath>

#include "nn/nn_test_util.h"

namespace rcuda::test {
namespace {

using Fn = std::function<Tensor(const Tensor&)>;
using Ref = std::function<double(double)>;

struct Activation {
  const char* name;
  Fn f;
  Ref reference;
};

double softplus_ref(double x, double beta, double threshold) {
  return beta * x > threshold ? x : std::log1p(std::exp(beta * x)) / beta;
}

std::vector<Activation> activations() {
  return {
      {"relu", [](const Tensor& x) { return nn::relu(x); },
       [](double x) { return x > 0 ? x : 0.0; }},
      {"leaky_relu", [](const Tensor& x) { return nn::leaky_relu(x); },
       [](double x) { return x > 0 ? x : 0.01 * x; }},
      {"leaky_relu 0.2", [](const Tensor& x) { return nn::leaky_relu(x, 0.2); },
       [](double x) { return x > 0 ? x : 0.2 * x; }},
      {"elu", [](const Tensor& x) { return nn::elu(x); },
       [](double x) { return x > 0 ? x : std::expm1(x); }},
      {"elu 0.5", [](const Tensor& x) { return nn::elu(x, 0.5); },
       [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }},
      {"gelu", [](const Tensor& x) { return nn::gelu(x); },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"gelu tanh", [](const Tensor& x) { return nn::gelu(x, "tanh"); },
       [](double x) {
         const double k = std::sqrt(2.0 / M_PI);
         return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
       }},
      {"silu", [](const Tensor& x) { return nn::silu(x); },
       [](double x) { return x / (1 + std::exp(-x)); }},
      {"softplus", [](const Tensor& x) { return nn::softplus(x); },
       [](double x) { return softplus_ref(x, 1, 20); }},
      {"softplus beta 2 threshold 3", [](const Tensor& x) { return nn::softplus(x, 2, 3); },
       [](double x) { return softplus_ref(x, 2, 3); }},
      {"softplus beta -1", [](const Tensor& x) { return nn::softplus(x, -1, 20); },
       [](double x) { return softplus_ref(x, -1, 20); }},
      {"sigmoid", [](const Tensor& x) { return nn::sigmoid(x); },
       [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"tanh", [](const Tensor& x) { return nn::tanh(x); }, [](double x) { return std::tanh(x); }},
      {"hardtanh", [](const Tensor& x) { return nn::hardtanh(x); },
       [](double x) { return std::fmin(std::fmax(x, -1.0), 1.0); }},
      {"hardtanh -0.5 2", [](const Tensor& x) { return nn::hardtanh(x, -0.5, 2); },
       [](double x) { return std::fmin(std::fmax(x, -0.5), 2.0); }},
  };
}

std::vector<double> map_values(const Ref& f, const std::vector<double>& v) {
  std::vector<double> out;
  for (double x : v) out.push_back(f(x));
  return out;
}

// A few roundings of composed ops (exp, log1p, a division): relative to max(1, |value|).
double composed_tolerance(DType dtype) {
  return dtype == DType::Float32 ? 1e-5 : dtype == DType::Float64 ? 1e-12 : 2 * tolerance(dtype);
}

TEST(NnActivation, ValuesMatchFormulasForEveryFloatingDtypeAndLayout) {
  for (const Activation& a : activations()) {
    for (DType dtype : floating_dtypes()) {
      SCOPED_TRACE(std::string(a.name) + " " + dtype_name(dtype));
      const Tensor x = random_tensor({5, 7}, dtype, -6, 6);
      const Tensor out = a.f(x);
      EXPECT_EQ(out.dtype(), dtype);
      EXPECT_EQ(out.shape(), x.shape());
      EXPECT_TRUE(all_close(to_doubles(out), map_values(a.reference, to_doubles(x)),
                            composed_tolerance(dtype)));
      const Tensor strided = transposed_copy(random_tensor({4, 6}, dtype, -6, 6));
      EXPECT_TRUE(all_close(to_doubles(a.f(strided)), map_values(a.reference, to_doubles(strided)),
                            composed_tolerance(dtype)));
      EXPECT_EQ(a.f(Tensor::empty({0, 3}, dtype)).shape(), (Shape{0, 3}));
    }
  }
}

TEST(NnActivation, ExtremeInputsStayFinite) {
  const std::vector<double> v = {-1000, -100, -30, -1e-30, 0, 1e-30, 30, 100, 1000};
  for (const Activation& a : activations()) {
    SCOPED_TRACE(a.name);
    for (DType dtype : {DType::Float32, DType::Float64}) {
      const Tensor out = a.f(tensor_of(v, {9}, dtype));
      EXPECT_TRUE(
          all_close(to_doubles(out), map_values(a.reference, v), composed_tolerance(dtype)));
    }
  }
}

TEST(NnActivation, HardtanhOfIntegersKeepsTheDtypeWithTruncatedBounds) {
  const Tensor x = tensor_of({-5, -2, -1, 0, 1, 2, 5}, {7}, DType::Int64);
  const Tensor out = nn::hardtanh(x, -1.7, 2.9);
  EXPECT_EQ(out.dtype(), DType::Int64);
  EXPECT_TRUE(all_close(to_doubles(out), {-1, -1, -1, 0, 1, 2, 2}, 0));
  EXPECT_EQ(nn::relu(x).dtype(), DType::Int64);
}

TEST(NnActivation, ErrorsNameTheFunctionAndTheValues) {
  const Tensor ints = tensor_of({1, 2}, {2}, DType::Int64);
  const Tensor x = random_tensor({3}, DType::Float32);
  EXPECT_THROW(nn::leaky_relu(ints), DTypeError);
  EXPECT_TRUE(mentions(error_message([&] { nn::leaky_relu(ints); }), {"leaky_relu", "int64"}));
  EXPECT_THROW(nn::elu(ints), DTypeError);
  EXPECT_THROW(nn::softplus(ints), DTypeError);
  EXPECT_THROW(nn::hardtanh(tensor_of({1}, {1}, DType::Bool)), DTypeError);
  EXPECT_THROW(nn::hardtanh(x, 1, -1), ValueError);
  EXPECT_TRUE(mentions(error_message([&] { nn::hardtanh(x, 1, -1); }),
                       {"hardtanh", "min_val 1", "max_val -1"}));
  EXPECT_THROW(nn::gelu(x, "fast"), ValueError);
  EXPECT_TRUE(mentions(error_message([&] { nn::gelu(x, "fast"); }), {"gelu", "\"fast\""}));
  EXPECT_THROW(nn::softplus(x, 0), ValueError);
  EXPECT_TRUE(mentions(error_message([&] { nn::softplus(x, 0); }), {"softplus", "beta", "0"}));
  EXPECT_THROW(nn::leaky_relu(x, std::nan("")), ValueError);
  EXPECT_THROW(nn::elu(x, INFINITY), ValueError);
}

// ---- gradients -------------------------------------------------------------------------

void expect_gradchecks(const Fn& f) {
  EXPECT_TRUE(gradcheck([&](const TensorList& x) { return f(x[0]); }, {leaf({3, 4}, -3, 3)}));
  EXPECT_TRUE(
      gradcheck([&](const TensorList& x) { return f(x[0]); }, {leaf_transposed({4, 3}, -3, 3)}));
  EXPECT_TRUE(gradcheck([&](const TensorList& x) { return f(x[0]); }, {leaf({}, -3, 3)}));
}

// leaky_relu and hardtanh are composed of where and binary ops only.
TEST(NnActivationGrad, LeakyReluAndHardtanh) {
  for (const Activation& a : activations()) {
    const std::string name = a.name;
    if (name.rfind("leaky_relu", 0) != 0 && name.rfind("hardtanh", 0) != 0) continue;
    SCOPED_TRACE(name);
    expect_gradchecks(a.f);
  }
}

TEST(NnActivationGrad, FunctionsOfUnaryOps) {
  for (const Activation& a : activations()) {
    const std::string name = a.name;
    if (name.rfind("leaky_relu", 0) == 0 || name.rfind("hardtanh", 0) == 0) continue;
    SCOPED_TRACE(name);
    expect_gradchecks(a.f);
  }
}

// torch's conventions at the kinks: hardtanh passes nothing on its bounds, leaky_relu gives the
// slope at 0.
TEST(NnActivationGrad, KinksFollowTorch) {
  const Tensor x = tensor_of({-1, 1, 0.5, -3, 0}, {5}, DType::Float64).requires_grad_();
  autograd::backward(sum(nn::hardtanh(x)));
  EXPECT_TRUE(all_close(to_doubles(x.grad()), {0, 0, 1, 0, 1}, 0));
  const Tensor y = tensor_of({0, 2, -2}, {3}, DType::Float64).requires_grad_();
  autograd::backward(sum(nn::leaky_relu(y, 0.1)));
  EXPECT_TRUE(all_close(to_doubles(y.grad()), {0.1, 1, 0.1}, 1e-15));
}

// The branch a where does not pick must not turn its zero gradient into NaN (exp overflow).
TEST(NnActivationGrad, LargeInputsGiveFiniteGradients) {
  for (const Fn& f : std::vector<Fn>{[](const Tensor& x) { return nn::elu(x); },
                                     [](const Tensor& x) { return nn::softplus(x); }}) {
    const Tensor x = tensor_of({1000, 800, -1000}, {3}, DType::Float64).requires_grad_();
    autograd::backward(sum(f(x)));
    EXPECT_TRUE(all_close(to_doubles(x.grad()), {1, 1, 0}, 1e-12));
  }
}

}  // namespace
}  // namespace rcuda::test
