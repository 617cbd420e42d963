// CUDA against the CPU backend (itself checked against double loops in tests/ops/) for the Math
// group, atan2, the cumulative ops and the sort family: the same fresh random inputs on both
// devices, contiguous and transposed, every dtype each op accepts, plus the gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/devices.h"

namespace rcuda::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Values with ties, NaN and infinities for the floating dtypes.
Tensor tied(const Shape& shape, DType dtype) {
  Tensor t = random_tensor(shape, dtype, 0, 6);
  if (!is_floating(dtype)) return t;
  std::vector<double> v = to_doubles(t);
  for (double& x : v) {
    const uint64_t r = rng()() % 12;
    if (r == 0) x = kNaN;
    if (r == 1) x = kInf;
    if (r == 2) x = -kInf;
  }
  return tensor_of(v, shape, dtype);
}

TEST(CudaSortMath, UnaryMathMatchesTheCpu) {
  RCUDA_REQUIRE_CUDA();
  const std::vector<std::pair<const char*, std::pair<double, double>>> ops = {
      {"tan", {-1.2, 1.2}},      {"asin", {-0.99, 0.99}}, {"acos", {-0.99, 0.99}},
      {"atan", {-5, 5}},         {"sinh", {-3, 3}},       {"cosh", {-3, 3}},
      {"asinh", {-5, 5}},        {"acosh", {1.01, 6}},    {"atanh", {-0.95, 0.95}},
      {"trunc", {-5, 5}},        {"erf", {-3, 3}},        {"erfc", {-3, 3}},
      {"erfinv", {-0.99, 0.99}}, {"lgamma", {-3.9, 12}},  {"digamma", {-3.9, 25}},
      {"log2", {0.01, 50}},      {"log10", {0.01, 50}},   {"exp2", {-8, 8}},
      {"reciprocal", {0.1, 4}}};
  for (const auto& [name, range] : ops) {
    for (DType dtype : floating_dtypes()) {
      SCOPED_TRACE(std::string(name) + " " + dtype_name(dtype));
      const Tensor x = random_tensor({37, 29}, dtype, range.first, range.second);
      const Tensor cpu = unary_op(name, x);
      const Tensor gpu = unary_op(name, on_cuda(x));
      // The special functions differ by a few ulp between libm and CUDA's math library.
      EXPECT_TRUE(all_close(values(gpu), values(cpu), backend_tolerance(dtype) * 16));
      const Tensor t = transposed_copy(x);
      EXPECT_TRUE(all_close(values(unary_op(name, on_cuda(t))), values(unary_op(name, t)),
                            backend_tolerance(dtype) * 16));
      // The gradient pass, fused as the forward.
      if (is_floating(dtype) && std::string(name) != "trunc") {
        const Tensor g = random_tensor(x.shape(), dtype);
        const UnaryOp op = ops::unary_op_from_name(name);
        EXPECT_TRUE(all_close(values(ops::unary_grad(op, on_cuda(g), on_cuda(x), on_cuda(cpu))),
                              values(ops::unary_grad(op, g, x, cpu)),
                              backend_tolerance(dtype) * 16));
      }
    }
  }
  const Tensor a = random_tensor({8, 1}, DType::Float32), b = random_tensor({5}, DType::Float32);
  EXPECT_TRUE(all_close(values(atan2(on_cuda(a), on_cuda(b))), values(atan2(a, b)), 1e-5));
}

TEST(CudaSortMath, SortEveryDtypeMatchesTheCpuExactly) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : all_dtypes()) {
    for (bool descending : {false, true}) {
      for (const Shape& shape : {Shape{7, 33}, Shape{3, 5000}, Shape{2000, 3}, Shape{1}}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + (descending ? " descending " : " ") +
                     shape_str(shape));
        const Tensor x = tied(shape, dtype);
        for (int64_t dim = 0; dim < x.dim(); ++dim) {
          auto [cv, ci] = sort(x, dim, descending);
          auto [gv, gi] = sort(on_cuda(x), dim, descending);
          EXPECT_TRUE(all_close(values(gv), values(cv), 0));
          EXPECT_EQ(values(gi), values(ci));  // stable on both
        }
      }
    }
  }
  const Tensor t = transposed_copy(tied({40, 30}, DType::Float64));
  EXPECT_EQ(values(argsort(on_cuda(t), 0)), values(argsort(t, 0)));
  EXPECT_EQ(sort(on_cuda(Tensor::empty({0, 3}, DType::Float32)), 1).first.numel(), 0);
}

TEST(CudaSortMath, OrderStatisticsUniqueAndCountsMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = tied({12, 9}, DType::Float32);
  const Tensor gx = on_cuda(x);
  auto same = [](const std::pair<Tensor, Tensor>& g, const std::pair<Tensor, Tensor>& c) {
    EXPECT_TRUE(all_close(values(g.first), values(c.first), 0));
    EXPECT_EQ(values(g.second), values(c.second));
  };
  same(topk(gx, 4, 1), topk(x, 4, 1));
  same(topk(gx, 3, 0, false), topk(x, 3, 0, false));
  same(kthvalue(gx, 5, 1), kthvalue(x, 5, 1));
  same(median(gx, 0, true), median(x, 0, true));
  same(mode(gx, 1), mode(x, 1));
  const Tensor ints = random_tensor({50}, DType::Int64, -5, 5);
  const UniqueResult cu = unique(ints), gu = unique(on_cuda(ints));
  EXPECT_EQ(values(gu.values), values(cu.values));
  EXPECT_EQ(values(gu.inverse), values(cu.inverse));
  EXPECT_EQ(values(gu.counts), values(cu.counts));
  const Tensor edges = tensor_of({0, 1, 2.5, 4}, {4}, DType::Float32);
  EXPECT_EQ(values(bucketize(gx, on_cuda(edges), false, true)),
            values(bucketize(x, edges, false, true)));
  const Tensor finite = random_tensor({300}, DType::Float32, -2, 2);
  EXPECT_EQ(values(histc(on_cuda(finite), 10, -1, 1)), values(histc(finite, 10, -1, 1)));
  const Tensor q = tensor_of({0.2, 0.5}, {2}, DType::Float32);
  EXPECT_TRUE(all_close(values(quantile(gx, on_cuda(q), 1)), values(quantile(x, q, 1)), 1e-6));
  // randperm draws the same Philox stream on both devices.
  manual_seed(test_seed());
  const Tensor cpu_perm = randperm(777);
  manual_seed(test_seed());
  EXPECT_EQ(values(randperm(777, TensorOptions(DType::Int64, kCuda))), values(cpu_perm));
}

TEST(CudaSortMath, CumulativeOpsAndTheirGradientsMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : all_dtypes()) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = transposed_copy(tied({9, 300}, dtype));
    for (int64_t dim : {0, 1}) {
      auto [cv, ci] = cummax(x, dim);
      auto [gv, gi] = cummax(on_cuda(x), dim);
      EXPECT_TRUE(all_close(values(gv), values(cv), 0));
      EXPECT_EQ(values(gi), values(ci));
      auto [mv, mi] = cummin(on_cuda(x), dim);
      EXPECT_EQ(values(mi), values(cummin(x, dim).second));
      if (dtype != DType::Bool) {
        const Tensor small = random_tensor({9, 20}, dtype, -1, 3);
        EXPECT_TRUE(all_close(values(cumprod(on_cuda(small), dim)), values(cumprod(small, dim)),
                              backend_tolerance(dtype) * 8));
      }
    }
  }
  for (DType dtype : floating_dtypes()) {
    const Tensor x = random_tensor({6, 50}, dtype, -10, 10);
    const Tensor g = random_tensor({6, 50}, dtype);
    const Tensor out = logcumsumexp(x, 1);
    EXPECT_TRUE(
        all_close(values(logcumsumexp(on_cuda(x), 1)), values(out), backend_tolerance(dtype) * 8));
    EXPECT_TRUE(
        all_close(values(ops::logcumsumexp_backward(on_cuda(g), on_cuda(x), on_cuda(out), 1)),
                  values(ops::logcumsumexp_backward(g, x, out, 1)), backend_tolerance(dtype) * 8));
    Tensor z = random_tensor({6, 50}, dtype, -1.2, 1.2);
    const Tensor p = cumprod(z, 1);
    EXPECT_TRUE(all_close(values(ops::cumprod_backward(on_cuda(g), on_cuda(z), on_cuda(p), 1)),
                          values(ops::cumprod_backward(g, z, p, 1)), backend_tolerance(dtype) * 8));
  }
  // Gradients of the picked values through the whole engine.
  const Tensor x = random_tensor({5, 8}, DType::Float32);
  Tensor c = x.alias().requires_grad_(), gcu = on_cuda(x).requires_grad_();
  autograd::backward(sum(mul(sort(c, 1).first, arange(0, 8, 1, DType::Float32))));
  autograd::backward(sum(mul(sort(gcu, 1).first, arange(0, 8, 1, DType::Float32, kCuda))));
  EXPECT_TRUE(all_close(values(gcu.grad()), values(c.grad()), 0));
}

}  // namespace
}  // namespace rcuda::test
