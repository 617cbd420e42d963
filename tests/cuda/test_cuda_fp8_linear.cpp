// fp8 casts, the delayed-scaling update and fp8_linear on the GPU against the CPU backend: casts
// and scales bit for bit (both backends share backend/float8_scaling.h), products within the fp8
// tensor cores' accumulation error; and a captured fp8 training step replayed against eager steps.
#include <cmath>
#include <vector>

#include "rcuda/backend/cuda_graph.h"
#include "rcuda/nn/fp8_linear.h"
#include "rcuda/ops/float8.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

const DType kE4M3 = DType::Float8E4M3FN;
const DType kE5M2 = DType::Float8E5M2;

bool fp8_supported() {
  const cuda::DeviceProperties p = cuda::properties(0);
  return p.major * 10 + p.minor >= 89;
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor c = contiguous(t.device().is_cpu() ? t : to(t, kCpu));
  const auto* p = static_cast<const uint8_t*>(c.data_ptr());
  return {p, p + c.numel()};
}

Tensor one_float(double v) { return tensor_of({v}, {1}, DType::Float32); }

TEST(CudaFloat8Cast, MatchesTheCpuBitForBit) {
  RCUDA_REQUIRE_CUDA();
  // Odd sizes take the scalar kernel; sizes that are multiples of 4 the wide one (full and
  // partial 64 x 64 tiles).
  const std::vector<Shape> shapes = {{70, 45},     {1, 33},   {129, 1},     {32, 32},
                                     {1000, 1030}, {100, 68}, {1000, 1024}, {64, 4}};
  for (DType format : {kE4M3, kE5M2})
    for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16})
      for (const Shape& shape : shapes) {
        // Values over a wide range, some saturating at scale 37, and a NaN in one case.
        std::vector<double> v = to_doubles(random_tensor(shape, DType::Float64, -1, 1));
        for (size_t i = 0; i < v.size(); ++i)
          v[i] = std::ldexp(v[i], static_cast<int>(i % 21) - 10);
        Tensor x = tensor_of(v, shape, dtype);
        if (shape[0] == 70) x = transposed_copy(x);  // a non-contiguous input
        const Tensor scale = one_float(37);
        const Tensor amax_cpu = one_float(0.25), amax_gpu = on_cuda(amax_cpu);
        const ops::Float8Cast c = ops::float8_cast(x, scale, amax_cpu, format, true, true);
        const ops::Float8Cast g =
            ops::float8_cast(on_cuda(x), on_cuda(scale), amax_gpu, format, true, true);
        const std::string what =
            std::string(dtype_name(dtype)) + " -> " + dtype_name(format) + " " + shape_str(shape);
        EXPECT_EQ(bytes_of(g.data), bytes_of(c.data)) << what;
        EXPECT_EQ(bytes_of(g.data_t), bytes_of(c.data_t)) << what;
        EXPECT_EQ(values(amax_gpu), values(amax_cpu)) << what;
        // One direction only.
        const ops::Float8Cast t =
            ops::float8_cast(on_cuda(x), on_cuda(scale), amax_gpu, format, false, true);
        EXPECT_FALSE(t.data.defined());
        EXPECT_EQ(bytes_of(t.data_t), bytes_of(c.data_t)) << what;
      }
}

TEST(CudaFloat8Cast, NaNReachesAmax) {
  RCUDA_REQUIRE_CUDA();
  std::vector<double> v = to_doubles(random_tensor({64, 64}, DType::Float64));
  v[1234] = std::nan("");
  const Tensor amax = on_cuda(one_float(0));
  ops::float8_cast(on_cuda(tensor_of(v, {64, 64}, DType::BFloat16)), on_cuda(one_float(1)), amax,
                   kE4M3);
  EXPECT_TRUE(std::isnan(values(amax)[0]));
}

TEST(CudaFloat8UpdateScales, MatchesTheCpuBitForBit) {
  RCUDA_REQUIRE_CUDA();
  for (int64_t length : {1, 5, 32, 33, 1024}) {
    std::vector<double> h = to_doubles(random_tensor({3, length}, DType::Float64, 0.001, 500));
    if (length > 3) h[static_cast<size_t>(length + 2)] = INFINITY;  // row 1 keeps its scale
    const Tensor history = tensor_of(h, {3, length}, DType::Float32);
    const Tensor scale = tensor_of({0.5, 3, 7}, {3}, DType::Float32);
    const Tensor h_cpu = clone(history), h_gpu = on_cuda(history);
    for (int margin : {0, 3}) {
      const ops::Float8Scales c =
          ops::float8_update_scales(h_cpu, scale, {kE4M3, kE4M3, kE5M2}, margin);
      const ops::Float8Scales g =
          ops::float8_update_scales(h_gpu, on_cuda(scale), {kE4M3, kE4M3, kE5M2}, margin);
      EXPECT_EQ(values(g.scale), values(c.scale)) << length << " margin " << margin;
      EXPECT_EQ(values(g.scale_inv), values(c.scale_inv)) << length;
      EXPECT_EQ(values(h_gpu), values(h_cpu)) << length;  // rolled alike, twice
    }
  }
}

// Element bound of a float8 product computed on the GPU against the CPU: Hopper's fp8 tensor
// cores accumulate with about 14 mantissa bits (tests/cuda/test_cuda_linalg.cpp), so 2^-12 of
// sum |a b| per element, plus the output dtype's rounding.
// With a bias, the one rounding is of product + bias, which may cancel: its error is relative to
// the terms, not to the result (rounded_terms).
void expect_products_close(const Tensor& got, const Tensor& want, const Tensor& terms,
                           const std::string& what, bool rounded_terms = false) {
  const std::vector<double> g = values(got), e = values(want), t = values(terms);
  ASSERT_EQ(g.size(), e.size()) << what;
  const double rounding = backend_tolerance(got.dtype());
  for (size_t i = 0; i < e.size(); ++i) {
    const double rounded = rounded_terms ? std::max(t[i], std::fabs(e[i])) : std::fabs(e[i]);
    ASSERT_LE(std::fabs(g[i] - e[i]), std::ldexp(t[i], -12) + rounding * rounded + 1e-30)
        << what << ": element " << i << " " << g[i] << " vs " << e[i];
  }
}

TEST(CudaFp8Linear, StepsMatchTheCpu) {
  RCUDA_REQUIRE_CUDA();
  if (!fp8_supported()) GTEST_SKIP() << "fp8 needs compute capability 8.9 or newer";
  const int64_t m = 64, k = 96, n = 48;
  for (DType dtype : {DType::BFloat16, DType::Float32}) {
    nn::Fp8LinearState cpu_state(kCpu, {4, 0}), gpu_state(kCuda, {4, 0});
    const Tensor w = random_tensor({n, k}, DType::Float32, -0.3, 0.3);
    const Tensor b = random_tensor({n}, dtype);
    const Tensor wc = clone(w).requires_grad_(), wg = on_cuda(w).requires_grad_();
    const Tensor bc = clone(b).requires_grad_(), bg = on_cuda(b).requires_grad_();
    for (int step = 0; step < 3; ++step) {
      const Tensor x = random_tensor({m, k}, dtype, -1.0 - step, 1.0 + step);
      const Tensor g = random_tensor({m, n}, dtype, -0.01, 0.01);
      const Tensor xc = clone(x).requires_grad_(), xg = on_cuda(x).requires_grad_();
      const Tensor yc = nn::fp8_linear(xc, wc, bc, cpu_state);
      const Tensor yg = nn::fp8_linear(xg, wg, bg, gpu_state);
      const std::string what = std::string(dtype_name(dtype)) + " step " + std::to_string(step);
      EXPECT_EQ(values(gpu_state.scale()), values(cpu_state.scale())) << what;
      const Tensor ax = abs(to(x, DType::Float64)), aw = abs(to(w, DType::Float64));
      const Tensor ag = abs(to(g, DType::Float64));
      expect_products_close(yg, yc, add(matmul(ax, aw.t()), abs(to(b, DType::Float64))),
                            what + " output", true);
      autograd::backward(yc, g);
      autograd::backward(yg, on_cuda(g));
      EXPECT_EQ(values(gpu_state.amax_history()), values(cpu_state.amax_history())) << what;
      expect_products_close(xg.grad(), xc.grad(), matmul(ag, aw), what + " input gradient");
      expect_products_close(wg.grad(), wc.grad(), matmul(ag.t(), ax), what + " weight gradient");
      EXPECT_TRUE(all_close(values(bg.grad()), values(bc.grad()), 10 * backend_tolerance(dtype)))
          << what;
      for (const Tensor& p : {wc, wg, bc, bg}) p.set_grad(Tensor());
    }
  }
}

// An fp8 layer's forward and backward captured once and replayed: each replay updates the scales
// from the history and draws nothing from the host, so it equals an eager step bit for bit.
TEST(CudaFp8Linear, CapturedStepsReplayLikeEagerSteps) {
  RCUDA_REQUIRE_CUDA();
  if (!fp8_supported()) GTEST_SKIP() << "fp8 needs compute capability 8.9 or newer";
  const int64_t m = 32, k = 64, n = 32, steps = 6;
  const Tensor w0 = random_tensor({n, k}, DType::Float32, -0.5, 0.5);
  std::vector<Tensor> xs, gs;
  for (int s = 0; s < steps; ++s) {
    xs.push_back(on_cuda(random_tensor({m, k}, DType::BFloat16, -1.0 - s, 1.0 + s)));
    gs.push_back(on_cuda(random_tensor({m, n}, DType::BFloat16, -0.1, 0.1)));
  }
  nn::Fp8LinearState eager_state(kCuda, {3, 0});
  const Tensor w_eager = on_cuda(w0).requires_grad_();
  std::vector<std::vector<double>> eager_out, eager_grad;
  for (int s = 0; s < steps; ++s) {
    const Tensor y = nn::fp8_linear(xs[s], w_eager, Tensor(), eager_state);
    autograd::backward(y, gs[s]);
    eager_out.push_back(values(y));
    eager_grad.push_back(values(w_eager.grad()));
    w_eager.set_grad(Tensor());
  }

  nn::Fp8LinearState state(kCuda, {3, 0});
  const Tensor w = on_cuda(w0).requires_grad_();
  // One eager step first, as a warm-up would (cuBLASLt's plan, the pool's blocks).
  autograd::backward(nn::fp8_linear(xs[0], w, Tensor(), state), gs[0]);
  EXPECT_EQ(values(w.grad()), eager_grad[0]);
  w.set_grad(Tensor());
  const Tensor x = clone(xs[1]), g = clone(gs[1]);
  Tensor y, gw;
  cuda::Graph graph;
  cuda::capture(graph, [&] {
    y = nn::fp8_linear(x, w, Tensor(), state);
    gw = autograd::grad({y}, {w}, {g})[0];
  });
  for (int s = 1; s < steps; ++s) {
    copy_(x, xs[s]);
    copy_(g, gs[s]);
    graph.replay();
    EXPECT_EQ(values(y), eager_out[s]) << "step " << s;
    EXPECT_EQ(values(gw), eager_grad[s]) << "step " << s;
  }
  EXPECT_EQ(values(state.amax_history()), values(eager_state.amax_history()));
}

}  // namespace
}  // namespace rcuda::test
