// Gradients on CUDA against the CPU's, for every differentiable op of rcuda/autograd/api.h (the
// CPU's are themselves checked against float64 central differences in tests/autograd/): the
// same fresh random inputs become leaves on both devices, in the same layout (transposed views
// are taken on each device, since to() would hand over contiguous copies), and sum(f(x) * w)
// with the same random weights w is differentiated on each. Checked: forward values, gradient
// values, and that every gradient is on the GPU, in the leaf's dtype and shape.
//
// Tolerances, relative to max(1, |expected|): float64 1e-10 (the backends differ only in
// summation order and libm); float32 5e-5, since the CPU sums float32 in double and the GPU in
// float, and the formulas below add up to a few dozen terms of magnitude up to ~30 (products):
// sqrt(terms) roundings of 6e-8 each, times the magnitude, stays below 5e-5.
//
// Unary ops' gradients come from ops::unary_grad (grads/unary.cpp); CudaAutograd.UnaryOps needs
// it on both backends.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "support/devices.h"

namespace rcuda {
namespace {

using autograd::TensorList;
using test::kCpu;
using test::kCuda;
using test::random_tensor;
using test::tensor_of;
using test::values;

using Op = std::function<Tensor(const TensorList&)>;
using Layout = std::function<Tensor(const Tensor&)>;

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<DType> kDtypes = {DType::Float32, DType::Float64};

double gradient_tolerance(DType dtype) { return dtype == DType::Float32 ? 5e-5 : 1e-10; }

// One forward input: contiguous host values, and the view each device takes of its own copy.
// Floating inputs become leaves that require grad; indices and masks are constants.
struct Input {
  Tensor host;
  Layout layout = [](const Tensor& t) { return t; };
};

Input dense(const Shape& shape, DType dtype, double low = -2, double high = 2) {
  return {random_tensor(shape, dtype, low, high)};
}

// Values of `shape` stored transposed in the first two dims: a non-contiguous leaf.
Input transposed(const Shape& shape, DType dtype, double low = -2, double high = 2) {
  Shape stored = shape;
  std::swap(stored[0], stored[1]);
  return {random_tensor(stored, dtype, low, high),
          [](const Tensor& t) { return t.transpose(0, 1); }};
}

// Magnitudes in [0.3, 2) with random signs, for formulas that are not smooth at 0.
Input away_from_zero(const Shape& shape, DType dtype) {
  std::vector<double> v = test::to_doubles(random_tensor(shape, DType::Float64, 0.3, 2));
  for (double& x : v)
    if (test::rng()() & 1) x = -x;
  return {tensor_of(v, shape, dtype)};
}

Input constant(const Tensor& host) { return {host}; }

TensorList leaves_on(const std::vector<Input>& inputs, Device device) {
  TensorList out;
  for (const Input& in : inputs) {
    Tensor t = in.layout(to(clone(in.host), device));
    if (is_floating(t.dtype())) t.requires_grad_();
    out.push_back(t);
  }
  return out;
}

// f's gradients on CUDA equal the CPU's, and stay on the GPU.
::testing::AssertionResult same_gradients(const Op& f, const std::vector<Input>& inputs,
                                          double tol) {
  const TensorList cpu = leaves_on(inputs, kCpu), gpu = leaves_on(inputs, kCuda);
  const Tensor out_cpu = f(cpu), out_gpu = f(gpu);
  if (!out_cpu.requires_grad() || !out_gpu.requires_grad())
    return ::testing::AssertionFailure() << "the output requires no grad";
  if (!out_gpu.device().is_cuda())
    return ::testing::AssertionFailure() << "the output is on " << out_gpu.device().str();
  const ::testing::AssertionResult forward =
      test::all_close(values(out_gpu), test::to_doubles(out_cpu), tol);
  if (!forward) return ::testing::AssertionFailure() << "forward: " << forward.message();
  const Tensor w = random_tensor(out_cpu.shape(), out_cpu.dtype(), 0.5, 1.5);
  autograd::backward(sum(mul(out_cpu, w)));
  autograd::backward(sum(mul(out_gpu, to(w, kCuda))));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!cpu[i].requires_grad()) continue;
    const Tensor expected = cpu[i].grad(), got = gpu[i].grad();
    if (!expected.defined() && !got.defined()) continue;
    if (!expected.defined() || !got.defined())
      return ::testing::AssertionFailure() << "input " << i << ": a gradient on one device only";
    if (!got.device().is_cuda())
      return ::testing::AssertionFailure()
             << "input " << i << ": gradient on " << got.device().str();
    if (got.dtype() != gpu[i].dtype() || got.shape() != gpu[i].shape())
      return ::testing::AssertionFailure()
             << "input " << i << ": gradient " << dtype_name(got.dtype()) << " "
             << shape_str(got.shape()) << " for a leaf " << dtype_name(gpu[i].dtype()) << " "
             << shape_str(gpu[i].shape());
    const ::testing::AssertionResult close =
        test::all_close(values(got), test::to_doubles(expected), tol);
    if (!close) return ::testing::AssertionFailure() << "input " << i << ": " << close.message();
  }
  return ::testing::AssertionSuccess();
}

struct Case {
  std::string name;
  Op f;
  std::vector<Input> inputs;
};

void expect_same_gradients(const std::vector<Case>& cases, DType dtype) {
  for (const Case& c : cases)
    EXPECT_TRUE(same_gradients(c.f, c.inputs, gradient_tolerance(dtype)))
        << c.name << " (" << dtype_name(dtype) << ")";
}

Tensor random_index(const Shape& shape, int64_t high) {
  return random_tensor(shape, DType::Int64, 0, static_cast<double>(high));
}

// Distinct along dim (a prefix of a random permutation per line): one writer per place.
Tensor distinct_index(const Shape& shape, int64_t dim, int64_t size) {
  const int64_t n = numel(shape), inner = numel(Shape(shape.begin() + dim + 1, shape.end()));
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t line = 0; shape[dim] > 0 && line < n / shape[dim]; ++line) {
    std::vector<int64_t> order(static_cast<size_t>(size));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), test::rng());
    const int64_t outer = line / inner, inner_pos = line % inner;
    for (int64_t j = 0; j < shape[dim]; ++j)
      v[(outer * shape[dim] + j) * inner + inner_pos] = static_cast<double>(order[j]);
  }
  return tensor_of(v, shape, DType::Int64);
}

// ---- elementwise -------------------------------------------------------------------------------

TEST(CudaAutograd, UnaryOps) {
  RCUDA_REQUIRE_CUDA();
  for (const DType dtype : kDtypes) {
    const auto any = [&] { return transposed({3, 4}, dtype); };
    const auto positive = [&] { return dense({3, 4}, dtype, 0.5, 2); };
    const auto apart = [&] { return away_from_zero({3, 4}, dtype); };
    const std::vector<Case> cases = {
        {"neg", [](const TensorList& x) { return neg(x[0]); }, {any()}},
        {"abs", [](const TensorList& x) { return abs(x[0]); }, {apart()}},
        {"sign", [](const TensorList& x) { return sign(x[0]); }, {apart()}},
        {"exp", [](const TensorList& x) { return exp(x[0]); }, {any()}},
        {"expm1", [](const TensorList& x) { return expm1(x[0]); }, {any()}},
        {"log", [](const TensorList& x) { return log(x[0]); }, {positive()}},
        {"log1p", [](const TensorList& x) { return log1p(x[0]); }, {positive()}},
        {"sqrt", [](const TensorList& x) { return sqrt(x[0]); }, {positive()}},
        {"rsqrt", [](const TensorList& x) { return rsqrt(x[0]); }, {positive()}},
        {"sin", [](const TensorList& x) { return sin(x[0]); }, {any()}},
        {"cos", [](const TensorList& x) { return cos(x[0]); }, {any()}},
        {"tanh", [](const TensorList& x) { return tanh(x[0]); }, {any()}},
        {"sigmoid", [](const TensorList& x) { return sigmoid(x[0]); }, {any()}},
        {"relu", [](const TensorList& x) { return relu(x[0]); }, {apart()}},
        {"gelu", [](const TensorList& x) { return gelu(x[0]); }, {any()}},
        {"gelu tanh", [](const TensorList& x) { return gelu(x[0], "tanh"); }, {any()}},
        {"silu", [](const TensorList& x) { return silu(x[0]); }, {any()}},
        {"floor", [](const TensorList& x) { return floor(x[0]); }, {any()}},
        {"ceil", [](const TensorList& x) { return ceil(x[0]); }, {any()}},
        {"round", [](const TensorList& x) { return round(x[0]); }, {any()}},
        {"clamp", [](const TensorList& x) { return clamp(x[0], -0.5, 1.0); }, {any()}},
        {"clamp min", [](const TensorList& x) { return clamp(x[0], 0.25, std::nullopt); }, {any()}},
        {"pow 3", [](const TensorList& x) { return pow(x[0], 3); }, {any()}},
        {"pow -1.5", [](const TensorList& x) { return pow(x[0], -1.5); }, {positive()}},
        {"unary_op tanh", [](const TensorList& x) { return unary_op("tanh", x[0]); }, {any()}},
    };
    expect_same_gradients(cases, dtype);
  }
}

TEST(CudaAutograd, BinaryOpsAndWhere) {
  RCUDA_REQUIRE_CUDA();
  for (const DType dtype : kDtypes) {
    const Tensor condition = random_tensor({3, 4}, DType::Bool);
    const std::vector<Case> cases = {
        {"add",
         [](const TensorList& x) { return add(x[0], x[1]); },
         {transposed({3, 4}, dtype), dense({4}, dtype)}},
        {"add alpha",
         [](const TensorList& x) { return add(x[0], x[1], 2.5); },
         {dense({3, 1}, dtype), dense({1, 4}, dtype)}},
        {"add number", [](const TensorList& x) { return add(x[0], 3.0); }, {dense({3, 4}, dtype)}},
        {"sub alpha",
         [](const TensorList& x) { return sub(x[0], x[1], -0.5); },
         {dense({2, 3, 4}, dtype), transposed({3, 4}, dtype)}},
        {"sub number", [](const TensorList& x) { return sub(x[0], 3.0); }, {dense({3}, dtype)}},
        {"mul",
         [](const TensorList& x) { return mul(x[0], x[1]); },
         {transposed({3, 4}, dtype), dense({3, 4}, dtype)}},
        {"mul number", [](const TensorList& x) { return mul(x[0], -1.5); }, {dense({3, 4}, dtype)}},
        {"div",
         [](const TensorList& x) { return div(x[0], x[1]); },
         {dense({3, 4}, dtype), away_from_zero({4}, dtype)}},
        {"div number", [](const TensorList& x) { return div(x[0], 4.0); }, {dense({3, 4}, dtype)}},
        {"remainder",
         [](const TensorList& x) { return remainder(x[0], x[1]); },
         {dense({6}, dtype, 0.1, 0.9), dense({6}, dtype, 1.1, 1.9)}},
        {"remainder number",
         [](const TensorList& x) { return remainder(x[0], 1.5); },
         {dense({6}, dtype, 0.1, 1.4)}},
        {"pow",
         [](const TensorList& x) { return pow(x[0], x[1]); },
         {dense({3, 4}, dtype, 0.5, 2), dense({4}, dtype, -1.5, 1.5)}},
        {"number pow", [](const TensorList& x) { return pow(2.5, x[0]); }, {dense({5}, dtype)}},
        {"maximum",
         [](const TensorList& x) { return maximum(x[0], x[1]); },
         {dense({3, 4}, dtype), transposed({3, 4}, dtype)}},
        {"minimum",
         [](const TensorList& x) { return minimum(x[0], x[1]); },
         {dense({3, 4}, dtype), dense({4}, dtype)}},
        {"binary_op mul",
         [](const TensorList& x) { return binary_op("mul", x[0], x[1]); },
         {dense({3, 4}, dtype), dense({3, 4}, dtype)}},
        {"where",
         [](const TensorList& x) { return where(x[2], x[0], x[1]); },
         {dense({3, 4}, dtype), dense({4}, dtype), constant(condition)}},
        {"where number b",
         [](const TensorList& x) { return where(x[1], x[0], 2.0); },
         {transposed({3, 4}, dtype), constant(condition)}},
        {"where number a",
         [](const TensorList& x) { return where(x[1], -1.0, x[0]); },
         {dense({3, 4}, dtype), constant(condition)}},
    };
    expect_same_gradients(cases, dtype);
  }
}

TEST(CudaAutograd, InPlaceOps) {
  RCUDA_REQUIRE_CUDA();
  for (const DType dtype : kDtypes) {
    const std::vector<Case> cases = {
        {"add_ mul_",
         [](const TensorList& x) {
           Tensor y = mul(x[0], 1.0);
           add_(y, x[1], 0.5);
           mul_(y, x[1]);
           return y;
         },
         {dense({3, 4}, dtype), dense({4}, dtype)}},
        {"copy_",
         [](const TensorList& x) {
           Tensor y = mul(x[0], 2.0);
           copy_(y, x[1]);
           return mul(y, x[0]);
         },
         {dense({3, 4}, dtype), transposed({3, 4}, dtype)}},
        {"fill_",
         [](const TensorList& x) {
           Tensor y = mul(x[0], 2.0);
           fill_(y, 3);
           return add(y, x[0]);
         },
         {dense({3, 4}, dtype)}},
    };
    expect_same_gradients(cases, dtype);
  }
}

// ---- views and copies --------------------------------------------------------------------------

TEST(CudaAutograd, ViewsAndCopies) {
  RCUDA_REQUIRE_CUDA();
  for (const DType dtype : kDtypes) {
    const DType other = dtype == DType::Float32 ? DType::Float64 : DType::Float32;
    const auto x3 = [&] { return dense({2, 3, 4}, dtype); };
    const std::vector<Case> cases = {
        {"t", [](const TensorList& x) { return x[0].t(); }, {transposed({4, 3}, dtype)}},
        {"transpose", [](const TensorList& x) { return x[0].transpose(0, 2); }, {x3()}},
        {"permute",
         [](const TensorList& x) {
           return x[0].permute({2, 0, 1});
         },
         {x3()}},
        {"view", [](const TensorList& x) { return x[0].view({-1}); }, {x3()}},
        {"slice step", [](const TensorList& x) { return x[0].slice(1, 0, 3, 2); }, {x3()}},
        {"select", [](const TensorList& x) { return x[0].select(-1, 1); }, {x3()}},
        {"narrow", [](const TensorList& x) { return x[0].narrow(0, 1, 1); }, {x3()}},
        {"expand",
         [](const TensorList& x) {
           return x[0].unsqueeze(0).expand({4, -1, -1, -1});
         },
         {x3()}},
        {"squeeze", [](const TensorList& x) { return x[0].narrow(0, 0, 1).squeeze(); }, {x3()}},
        {"unsqueeze", [](const TensorList& x) { return x[0].unsqueeze(1); }, {x3()}},
        {"diagonal", [](const TensorList& x) { return x[0].diagonal(1, 1, 2); }, {x3()}},
        {"as_strided",
         [](const TensorList& x) {
           return x[0].as_strided({2, 2}, {1, 3}, 1);
         },
         {x3()}},
        {"reshape copy",
         [](const TensorList& x) { return reshape(x[0], {-1}); },
         {transposed({3, 4}, dtype)}},
        {"flatten", [](const TensorList& x) { return flatten(x[0], 1); }, {x3()}},
        {"contiguous",
         [](const TensorList& x) { return contiguous(x[0]); },
         {transposed({3, 4}, dtype)}},
        {"clone", [](const TensorList& x) { return clone(x[0]); }, {x3()}},
        {"to dtype",
         [other](const TensorList& x) { return mul(to(to(x[0], other), x[0].dtype()), 2.0); },
         {x3()}},
        // On the CPU both to()s change nothing; on the GPU the gradient crosses to the host
        // and back.
        {"to device",
         [](const TensorList& x) { return to(mul(to(x[0], kCpu), 2.0), x[0].device()); },
         {x3()}},
        {"to device and dtype",
         [other](const TensorList& x) {
           return to(mul(to(x[0], kCpu, other), 3.0), x[0].device(), x[0].dtype());
         },
         {x3()}},
    };
    expect_same_gradients(cases, dtype);
  }
}

TEST(CudaAutograd, GradientsCrossDevicesWithTo) {
  RCUDA_REQUIRE_CUDA();
  // A CPU leaf used on the GPU gets its gradient on the CPU, and a GPU leaf used on the CPU
  // gets its gradient on the GPU: d sum(x * x) / dx = 2 x.
  const Tensor values_host = random_tensor({3, 4}, DType::Float32);
  std::vector<double> twice;
  for (double v : test::to_doubles(values_host)) twice.push_back(2 * v);
  Tensor host_leaf = clone(values_host).requires_grad_();
  const Tensor on_gpu = to(host_leaf, kCuda);
  autograd::backward(sum(mul(on_gpu, on_gpu)));
  ASSERT_TRUE(host_leaf.grad().device().is_cpu());
  EXPECT_TRUE(test::all_close(test::to_doubles(host_leaf.grad()), twice, 1e-6));
  Tensor gpu_leaf = to(values_host, kCuda).requires_grad_();
  const Tensor on_host = to(gpu_leaf, kCpu);
  autograd::backward(sum(mul(on_host, on_host)));
  ASSERT_TRUE(gpu_leaf.grad().device().is_cuda());
  EXPECT_TRUE(test::all_close(values(gpu_leaf.grad()), twice, 1e-6));
}

// ---- reductions, softmax, cumsum ---------------------------------------------------------------

// Rows with no zero, one zero and two zeros.
Input with_zeros(DType dtype) {
  std::vector<double> v = test::to_doubles(random_tensor({3, 5}, DType::Float64));
  v[5 + 2] = 0;
  v[10 + 0] = v[10 + 4] = 0;
  return {tensor_of(v, {3, 5}, dtype)};
}

// Tied maxima and minima.
Input with_ties(DType dtype) { return {tensor_of({3, 1, 3, -2, 0, -2, 3, 0.5}, {2, 4}, dtype)}; }

TEST(CudaAutograd, Reductions) {
  RCUDA_REQUIRE_CUDA();
  for (const DType dtype : kDtypes) {
    const auto x = [&] { return transposed({4, 5}, dtype); };
    const auto x3 = [&] { return dense({2, 3, 4}, dtype); };
    std::vector<Case> cases = {
        {"sum", [](const TensorList& t) { return sum(t[0]); }, {x()}},
        {"sum dims keepdim",
         [](const TensorList& t) {
           return sum(t[0], {0, -1}, true);
         },
         {x3()}},
        {"mean dim", [](const TensorList& t) { return mean(t[0], {-2}); }, {x3()}},
        {"prod", [](const TensorList& t) { return prod(t[0]); }, {dense({2, 3}, dtype)}},
        {"prod dim", [](const TensorList& t) { return prod(t[0], {1}); }, {x()}},
        {"prod zeros",
         [](const TensorList& t) { return prod(t[0], {-1}, true); },
         {with_zeros(dtype)}},
        {"max", [](const TensorList& t) { return max(t[0]); }, {x()}},
        {"min", [](const TensorList& t) { return min(t[0]); }, {x3()}},
        {"max ties", [](const TensorList& t) { return max(t[0]); }, {with_ties(dtype)}},
        {"min ties", [](const TensorList& t) { return min(t[0]); }, {with_ties(dtype)}},
        {"max dim", [](const TensorList& t) { return max(t[0], 1).first; }, {x()}},
        {"min dim keepdim", [](const TensorList& t) { return min(t[0], -1, true).first; }, {x3()}},
        {"max dim ties",
         [](const TensorList& t) { return max(t[0], 1).first; },
         {with_ties(dtype)}},
        {"var", [](const TensorList& t) { return var(t[0]); }, {x()}},
        {"var dims",
         [](const TensorList& t) {
           return var(t[0], {0, 2}, 0, true);
         },
         {x3()}},
        {"std", [](const TensorList& t) { return rcuda::std(t[0], {1}); }, {x()}},
        {"std correction", [](const TensorList& t) { return rcuda::std(t[0], {-1}, 2.5); }, {x3()}},
        {"logsumexp", [](const TensorList& t) { return logsumexp(t[0], {1}); }, {x()}},
        {"logsumexp dims",
         [](const TensorList& t) {
           return logsumexp(t[0], {0, -1}, true);
         },
         {x3()}},
        {"softmax", [](const TensorList& t) { return softmax(t[0], 1); }, {x()}},
        {"softmax dim 0", [](const TensorList& t) { return softmax(t[0], 0); }, {x3()}},
        {"log_softmax", [](const TensorList& t) { return log_softmax(t[0], -1); }, {x()}},
        {"cumsum", [](const TensorList& t) { return cumsum(t[0], 1); }, {x()}},
        {"cumsum dim 0", [](const TensorList& t) { return cumsum(t[0], 0); }, {x3()}},
    };
    for (const double p : {2.0, 1.0, kInf, 0.0, 3.0, 1.5, 0.5}) {
      const std::string name = "norm p " + std::to_string(p);
      cases.push_back({name,
                       [p](const TensorList& t) { return norm(t[0], p); },
                       {away_from_zero({4, 5}, dtype)}});
      cases.push_back({name + " dim",
                       [p](const TensorList& t) { return norm(t[0], p, {1}); },
                       {away_from_zero({4, 5}, dtype)}});
    }
    cases.push_back({"norm at zero",
                     [](const TensorList& t) { return norm(t[0], 2, {1}); },
                     {{test::tensor_of({0, 0, 0, 1, 2, 2}, {2, 3}, dtype)}}});
    expect_same_gradients(cases, dtype);
  }
}

// ---- matrix products ---------------------------------------------------------------------------

TEST(CudaAutograd, MatrixProducts) {
  RCUDA_REQUIRE_CUDA();
  for (const DType dtype : kDtypes) {
    const Op matmul_f = [](const TensorList& t) { return matmul(t[0], t[1]); };
    const std::vector<Case> cases = {
        {"dot", matmul_f, {dense({4}, dtype), dense({4}, dtype)}},
        {"matrix-vector", matmul_f, {dense({3, 4}, dtype), dense({4}, dtype)}},
        {"vector-matrix", matmul_f, {dense({4}, dtype), dense({4, 5}, dtype)}},
        {"matrix", matmul_f, {transposed({3, 4}, dtype), transposed({4, 5}, dtype)}},
        {"batched x matrix", matmul_f, {dense({2, 3, 4}, dtype), dense({4, 5}, dtype)}},
        {"broadcast batch", matmul_f, {dense({2, 1, 3, 4}, dtype), dense({3, 4, 2}, dtype)}},
        {"mm",
         [](const TensorList& t) { return mm(t[0], t[1]); },
         {dense({3, 4}, dtype), transposed({4, 2}, dtype)}},
        {"bmm",
         [](const TensorList& t) { return bmm(t[0], t[1]); },
         {dense({2, 3, 4}, dtype), dense({2, 4, 5}, dtype)}},
        {"addmm",
         [](const TensorList& t) { return addmm(t[0], t[1], t[2], 0.5, -2); },
         {dense({5}, dtype), dense({3, 4}, dtype), transposed({4, 5}, dtype)}},
        {"addmm full bias",
         [](const TensorList& t) { return addmm(t[0], t[1], t[2]); },
         {dense({3, 5}, dtype), dense({3, 4}, dtype), dense({4, 5}, dtype)}},
    };
    expect_same_gradients(cases, dtype);
  }
}

// ---- joining, splitting, indexing --------------------------------------------------------------

TEST(CudaAutograd, JoiningSplittingAndIndexing) {
  RCUDA_REQUIRE_CUDA();
  for (const DType dtype : kDtypes) {
    const Tensor picks = random_index({7}, 4);
    const Tensor gather_index = random_index({6, 3}, 4);
    const Tensor scatter_index = distinct_index({3, 4}, 1, 5);
    const Tensor add_index = random_index({5, 5}, 3);
    const Tensor mask = random_tensor({3, 4}, DType::Bool);
    const Tensor row_mask = random_tensor({4}, DType::Bool);
    const std::vector<Case> cases = {
        {"cat",
         [](const TensorList& t) {
           return cat({t[0], t[1], t[2]}, 0);
         },
         {dense({2, 3}, dtype), dense({0}, dtype), transposed({4, 3}, dtype)}},
        {"cat last dim",
         [](const TensorList& t) {
           return cat({t[0], t[1]}, -1);
         },
         {dense({2, 2, 3}, dtype), dense({2, 2, 1}, dtype)}},
        {"stack",
         [](const TensorList& t) {
           return stack({t[0], t[1]}, 1);
         },
         {dense({2, 3}, dtype), transposed({2, 3}, dtype)}},
        {"split",
         [](const TensorList& t) {
           const std::vector<Tensor> p = split(t[0], std::vector<int64_t>{1, 3, 1}, -1);
           return cat({mul(p[1], 2.0), p[0], mul(p[2], -1.5)}, -1);
         },
         {transposed({5, 5}, dtype)}},
        {"chunk",
         [](const TensorList& t) {
           const std::vector<Tensor> p = chunk(t[0], 3, 0);
           return add(sum(mul(p[0], p[1])), sum(p[2]));
         },
         {dense({5, 5}, dtype)}},
        {"index_select",
         [](const TensorList& t) { return index_select(t[0], 1, t[1]); },
         {transposed({4, 4}, dtype), constant(picks)}},
        {"gather",
         [](const TensorList& t) { return gather(t[0], 0, t[1]); },
         {dense({4, 4}, dtype), constant(gather_index)}},
        {"scatter",
         [](const TensorList& t) { return scatter(t[0], 1, t[2], t[1]); },
         {transposed({4, 5}, dtype), dense({5, 6}, dtype), constant(scatter_index)}},
        {"scatter value",
         [](const TensorList& t) { return scatter(t[0], 1, t[1], 2.5); },
         {dense({4, 5}, dtype), constant(scatter_index)}},
        {"scatter_add",
         [](const TensorList& t) { return scatter_add(t[0], 0, t[2], t[1]); },
         {dense({3, 5}, dtype), transposed({6, 6}, dtype), constant(add_index)}},
        {"masked_fill",
         [](const TensorList& t) { return masked_fill(t[0], t[1], -1.0); },
         {transposed({3, 4}, dtype), constant(mask)}},
        {"masked_fill broadcast",
         [](const TensorList& t) { return masked_fill(t[0], t[1], 7.0); },
         {dense({3, 4}, dtype), constant(row_mask)}},
        {"masked_select",
         [](const TensorList& t) { return masked_select(t[0], t[1]); },
         {transposed({3, 4}, dtype), constant(mask)}},
        {"masked_select broadcast x",
         [](const TensorList& t) { return masked_select(t[0], t[1]); },
         {dense({3, 1}, dtype), constant(mask)}},
    };
    expect_same_gradients(cases, dtype);
  }
}

// ---- a whole model -----------------------------------------------------------------------------

// Two linear layers (matmul + bias) with a relu made of where(), and a sum-of-squares loss.
Tensor small_model_loss(const TensorList& p) {
  const Tensor& x = p[0];
  const Tensor h = add(matmul(x, p[1]), p[2]);
  const Tensor relu_h = where(gt(h, 0.0), h, 0.0);
  const Tensor out = add(matmul(relu_h, p[3]), p[4]);
  return sum(mul(out, out));
}

TEST(CudaAutograd, SmallModelGivesTheSameParameterGradients) {
  RCUDA_REQUIRE_CUDA();
  for (const DType dtype : kDtypes) {
    SCOPED_TRACE(dtype_name(dtype));
    // Weights drawn as a linear layer's default initialisation, U(-1/sqrt(fan_in), ...), so
    // that activations and gradients stay of order 1. The input's gradient is compared too.
    const double bound1 = 1 / std::sqrt(5.0), bound2 = 1 / std::sqrt(16.0);
    const std::vector<Input> inputs = {
        dense({8, 5}, dtype, -1, 1), dense({5, 16}, dtype, -bound1, bound1),
        dense({16}, dtype, -bound1, bound1), transposed({16, 3}, dtype, -bound2, bound2),
        dense({3}, dtype, -bound2, bound2)};
    const TensorList cpu = leaves_on(inputs, kCpu), gpu = leaves_on(inputs, kCuda);
    autograd::backward(small_model_loss(cpu));
    autograd::backward(small_model_loss(gpu));
    for (size_t i = 0; i < inputs.size(); ++i) {
      SCOPED_TRACE("leaf " + std::to_string(i));
      ASSERT_TRUE(gpu[i].grad().defined());
      EXPECT_TRUE(gpu[i].grad().device().is_cuda());
      // Gradients of order 1 made of sums of up to 24 x 16 products: 2e-4 leaves room for
      // float32's summation order.
      EXPECT_TRUE(test::all_close(values(gpu[i].grad()), test::to_doubles(cpu[i].grad()),
                                  dtype == DType::Float32 ? 2e-4 : 1e-10));
    }
  }
}

// ---- gradients of gradients ---------------------------------------------------------------------

// Hessian-vector products grad(<grad(L, x), v>, x) of L = sum(w1 * f + w2 * f^2), made with
// create_graph on each device (Note [Gradients of gradients] in docs/autograd.md): CUDA's equal
// the CPU's, which tests/autograd/test_double_backward.cpp checks against central differences.
TensorList hessian_vector_products(const Op& f, const TensorList& x, const TensorList& weights,
                                   const TensorList& directions) {
  const Tensor out = f(x);
  const Tensor loss = add(sum(mul(out, weights[0])), sum(mul(mul(out, out), weights[1])));
  TensorList wrt;
  for (const Tensor& t : x)
    if (t.requires_grad()) wrt.push_back(t);
  const TensorList g = autograd::grad({loss}, wrt, {}, false, /*allow_unused=*/true,
                                      /*create_graph=*/true);
  Tensor projected;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!g[i].defined()) continue;
    const Tensor term = sum(mul(g[i], directions[i]));
    projected = projected.defined() ? add(projected, term) : term;
  }
  return autograd::grad({projected}, wrt, {}, false, /*allow_unused=*/true);
}

::testing::AssertionResult same_second_derivatives(const Op& f, const std::vector<Input>& inputs,
                                                   double tol) {
  const TensorList cpu = leaves_on(inputs, kCpu), gpu = leaves_on(inputs, kCuda);
  const Tensor out = f(cpu);
  const TensorList weights = {random_tensor(out.shape(), out.dtype(), 0.5, 1.5),
                              random_tensor(out.shape(), out.dtype(), 0.5, 1.5)};
  TensorList directions;
  for (const Tensor& t : cpu)
    if (t.requires_grad()) directions.push_back(random_tensor(t.shape(), t.dtype(), -1, 1));
  const auto on_cuda = [](const TensorList& ts) {
    TensorList out;
    for (const Tensor& t : ts) out.push_back(to(t, kCuda));
    return out;
  };
  const TensorList expected = hessian_vector_products(f, cpu, weights, directions);
  const TensorList got = hessian_vector_products(f, gpu, on_cuda(weights), on_cuda(directions));
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i].defined() != got[i].defined())
      return ::testing::AssertionFailure() << "input " << i << ": defined on one device only";
    if (!expected[i].defined()) continue;
    if (!got[i].device().is_cuda())
      return ::testing::AssertionFailure() << "input " << i << ": on " << got[i].device().str();
    const ::testing::AssertionResult close =
        test::all_close(values(got[i]), test::to_doubles(expected[i]), tol);
    if (!close) return ::testing::AssertionFailure() << "input " << i << ": " << close.message();
  }
  return ::testing::AssertionSuccess();
}

TEST(CudaAutograd, GradientsOfGradientsMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  const DType dtype = DType::Float64;
  const Tensor index = random_index({3, 2}, 4);
  const std::vector<Case> cases = {
      {"tanh(matmul)",
       [](const TensorList& x) { return tanh(matmul(x[0], x[1])); },
       {dense({3, 4}, dtype), transposed({4, 2}, dtype)}},
      {"mul broadcast",
       [](const TensorList& x) { return mul(x[0], exp(x[1])); },
       {dense({3, 4}, dtype), dense({4}, dtype)}},
      {"div",
       [](const TensorList& x) { return div(x[0], x[1]); },
       {dense({3, 4}, dtype), away_from_zero({3, 4}, dtype)}},
      {"activations",
       [](const TensorList& x) { return add(sigmoid(x[0]), add(gelu(x[0]), softplus(x[0]))); },
       {transposed({3, 4}, dtype)}},
      {"silu and elu",
       [](const TensorList& x) { return mul(silu(x[0]), elu(x[0])); },
       {dense({3, 4}, dtype)}},
      {"softmax", [](const TensorList& x) { return softmax(x[0], 1); }, {dense({3, 4}, dtype)}},
      {"log_softmax",
       [](const TensorList& x) { return log_softmax(x[0], 0); },
       {dense({3, 4}, dtype)}},
      {"norm and var",
       [](const TensorList& x) { return add(norm(x[0], 2, {1}), var(x[0], {1})); },
       {dense({3, 4}, dtype)}},
      {"prod and logsumexp",
       [](const TensorList& x) { return mul(prod(x[0], {1}), logsumexp(x[0], {1})); },
       {dense({3, 4}, dtype, 0.5, 1.5)}},
      {"views",
       [](const TensorList& x) { return exp(x[0].slice(1, 1, 4).t().select(0, 1)); },
       {dense({3, 4}, dtype)}},
      {"cat and gather",
       [&](const TensorList& x) {
         return exp(gather(cat({x[0], x[1]}, 1), 1, to(index, x[0].device())));
       },
       {dense({3, 2}, dtype), dense({3, 2}, dtype)}},
      {"linear",
       [](const TensorList& x) { return nn::linear(tanh(x[0]), x[1], x[2]); },
       {dense({5, 3}, dtype), dense({4, 3}, dtype), dense({4}, dtype)}},
      {"layer_norm",
       [](const TensorList& x) { return nn::layer_norm(x[0], {4}, x[1], x[2]); },
       {dense({3, 4}, dtype), dense({4}, dtype), dense({4}, dtype)}},
  };
  for (const Case& c : cases) EXPECT_TRUE(same_second_derivatives(c.f, c.inputs, 1e-10)) << c.name;
  // cuDNN has no float64 convolutions: float32 on both devices, to float32's summation order
  // (cuDNN's algorithms add in another order than the CPU's loops).
  const Case conv = {"conv2d (cuDNN)",
                     [](const TensorList& x) {
                       ConvParams params;
                       params.stride = {2, 1};
                       params.padding = {1, 1};
                       return tanh(conv2d(x[0], x[1], x[2], params));
                     },
                     {dense({2, 2, 5, 5}, DType::Float32), dense({3, 2, 3, 3}, DType::Float32),
                      dense({3}, DType::Float32)}};
  EXPECT_TRUE(same_second_derivatives(conv.f, conv.inputs, 2e-3)) << conv.name;
}

// A gradient penalty's parameter gradients on CUDA equal the CPU's; a transposed convolution is
// refused by name with create_graph, as on the CPU.
TEST(CudaAutograd, GradientPenaltyAndRefusalMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  const DType dtype = DType::Float64;
  const std::vector<Input> inputs = {dense({6, 3}, dtype), dense({5, 3}, dtype), dense({5}, dtype),
                                     dense({1, 5}, dtype)};
  const auto penalty = [](const TensorList& p) {
    const Tensor critic = sum(nn::linear(tanh(nn::linear(p[0], p[1], p[2])), p[3], {}));
    const Tensor g = autograd::grad({critic}, {p[0]}, {}, false, false, true)[0];
    return mean(pow(sub(sqrt(sum(mul(g, g), {1})), 1.0), 2));
  };
  const TensorList cpu = leaves_on(inputs, kCpu), gpu = leaves_on(inputs, kCuda);
  autograd::backward(penalty(cpu));
  autograd::backward(penalty(gpu));
  for (size_t i = 0; i < inputs.size(); ++i) {
    SCOPED_TRACE("leaf " + std::to_string(i));
    ASSERT_TRUE(gpu[i].grad().defined());
    EXPECT_TRUE(gpu[i].grad().device().is_cuda());
    EXPECT_TRUE(test::all_close(values(gpu[i].grad()), test::to_doubles(cpu[i].grad()), 1e-10));
  }
  const TensorList conv =
      leaves_on({dense({1, 2, 5, 5}, DType::Float32), dense({2, 3, 3, 3}, DType::Float32)}, kCuda);
  const std::string message = test::error_message([&] {
    autograd::grad({sum(conv_transpose2d(conv[0], conv[1]))}, {conv[0]}, {}, false, false, true);
  });
  EXPECT_NE(message.find(
                "conv_transpose2d: gradients of gradients (create_graph = TRUE) are not supported"),
            std::string::npos)
      << message;
}

// ---- no waiting for the GPU --------------------------------------------------------------------

// Backward queues its work on the stream and returns: with a long job queued ahead of it, a
// backward that waited for the GPU (reading a value back, synchronising) would take as long as
// the job. The indexing formulas are left out: the index primitives check their indices on the
// host (Note [Index bounds on the GPU] in src/backend/cuda/kernels/index.cu).
TEST(CudaAutograd, BackwardQueuesWorkWithoutWaitingForTheGpu) {
  RCUDA_REQUIRE_CUDA();
  const DType dtype = DType::Float32;
  const std::vector<Input> inputs = {dense({8, 5}, dtype), transposed({5, 16}, dtype),
                                     dense({16}, dtype), dense({16, 3}, dtype), dense({3}, dtype)};
  const auto loss_of = [](const TensorList& p) {
    const Tensor& w = p[1];
    const Tensor doubled = cat({w, w.t().t()}, 0);
    Tensor total = small_model_loss(p);
    for (const Tensor& part :
         {sum(softmax(w, 1)), sum(log_softmax(w, 0)), sum(cumsum(w, 1)), sum(max(w, 1).first),
          max(w), sum(prod(w, {1})), norm(w), norm(w, kInf), rcuda::std(w), sum(var(w, {0})),
          sum(logsumexp(w, {0})), sum(stack({w, w}, 0)), mean(w.narrow(1, 2, 3)),
          sum(masked_fill(doubled, gt(doubled, 0.0), 0.0))})
      total = add(total, part);
    return total;
  };
  // A job of at least 100 ms on the stream: a chain of [4096, 4096] products.
  const Tensor a = zeros({4096, 4096}, {DType::Float32, kCuda});
  int products = 4;
  const auto job = [&] {
    Tensor c = a;
    for (int i = 0; i < products; ++i) c = matmul(c, a);
  };
  job();  // the first product creates cuBLASLt's handle and picks its algorithm: not timed
  cuda::synchronize(0);
  double job_ms = cuda::time_ms(0, job);
  while (job_ms < 100 && products < 4096) {
    products *= 2;
    job_ms = cuda::time_ms(0, job);
  }
  // The first backward creates library handles and grows the memory pool: not measured.
  autograd::backward(loss_of(leaves_on(inputs, kCuda)));
  cuda::synchronize(0);

  const TensorList p = leaves_on(inputs, kCuda);
  const Tensor loss = loss_of(p);
  cuda::synchronize(0);
  job();
  const auto start = std::chrono::steady_clock::now();
  autograd::backward(loss);
  const double backward_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  cuda::synchronize(0);
  EXPECT_LT(backward_ms, job_ms / 2) << "backward took " << backward_ms
                                     << " ms on the host behind a GPU job of " << job_ms << " ms";
  for (const Tensor& t : p) {
    ASSERT_TRUE(t.grad().defined());
    EXPECT_TRUE(t.grad().device().is_cuda());
  }
}

}  // namespace
}  // namespace rcuda
