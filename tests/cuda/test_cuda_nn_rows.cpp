// CUDA layer_norm and cross_entropy (forward and backward) against the CPU backend (itself
// checked against double loops and central differences in tests/ops/test_nn_kernels_*.cpp).
// Row lengths cover the warp-per-row path (<= 1024) and the block-per-row path, 16-byte and
// scalar loads (lengths that are not a multiple of the vector width, misaligned rows), many rows
// (several chunks in the weight-gradient reduction), every floating dtype and every option.
// Tolerances: backend_tolerance (float32 1e-5, the half types one rounding, float64 1e-12)
// relative to max(1, |x|); the GPU accumulates in float32 where the CPU uses double.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <string>
#include <vector>

#include "rcuda/ops/nn.h"
#include "support/devices.h"

namespace rcuda {
namespace {

using test::backend_tolerance;
using test::floating_dtypes;
using test::kCuda;
using test::on_cuda;
using test::random_tensor;
using test::values;

// Values of t on the GPU starting one element past a 16-byte boundary: contiguous but
// misaligned, so that the kernels take their scalar path.
Tensor misaligned_on_cuda(const Tensor& t) {
  const Tensor flat = on_cuda(ops::reshape(t, {t.numel()}));
  Tensor padded = ops::zeros({t.numel() + 1}, {t.dtype(), kCuda});
  ops::copy_(padded.slice(0, 1, t.numel() + 1), flat);
  return padded.slice(0, 1, t.numel() + 1).view(t.shape());
}

::testing::AssertionResult close(const Tensor& gpu, const Tensor& cpu, double tol) {
  if (gpu.shape() != cpu.shape())
    return ::testing::AssertionFailure()
           << "shape " << shape_str(gpu.shape()) << " vs " << shape_str(cpu.shape());
  return test::all_close(values(gpu), values(cpu), tol);
}

TEST(CudaNnLayerNorm, ForwardAndBackwardMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : floating_dtypes()) {
    // Warp rows (vectorised, odd length), block rows (vectorised and not), many rows.
    for (const Shape& shape : {Shape{37, 64}, Shape{5, 3, 33}, Shape{9, 4096}, Shape{6, 3001},
                               Shape{2000, 96}, Shape{3, 1}}) {
      for (bool affine : {true, false}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(shape) +
                     (affine ? " affine" : ""));
        const Shape normalized = {shape.back()};
        const Tensor x = random_tensor(shape, dtype, -2, 3);
        const Tensor w = affine ? random_tensor(normalized, dtype) : Tensor();
        const Tensor b = affine ? random_tensor(normalized, dtype) : Tensor();
        const Tensor g = random_tensor(shape, dtype);
        const double tol = dtype == DType::Float32 ? 2e-5 : backend_tolerance(dtype);
        const ops::LayerNormForward cpu = ops::layer_norm_forward(x, normalized, w, b, 1e-5);
        for (bool aligned : {true, false}) {
          const Tensor dx = aligned ? on_cuda(x) : misaligned_on_cuda(x);
          const Tensor dw = affine ? on_cuda(w) : Tensor(), db = affine ? on_cuda(b) : Tensor();
          const ops::LayerNormForward gpu = ops::layer_norm_forward(dx, normalized, dw, db, 1e-5);
          EXPECT_TRUE(close(gpu.out, cpu.out, tol)) << "out";
          EXPECT_TRUE(close(gpu.mean, cpu.mean, backend_tolerance(cpu.mean.dtype())));
          EXPECT_TRUE(close(gpu.rstd, cpu.rstd, backend_tolerance(cpu.rstd.dtype())));
          const ops::LayerNormGrads cg =
              ops::layer_norm_backward(g, x, normalized, cpu.mean, cpu.rstd, w, b);
          const ops::LayerNormGrads gg =
              ops::layer_norm_backward(aligned ? on_cuda(g) : misaligned_on_cuda(g), dx, normalized,
                                       gpu.mean, gpu.rstd, dw, db);
          // grad_input is rstd times a difference of row means, so its rounding error grows with
          // rstd: up to 1 / sqrt(eps) = 316 for the one-element rows of [3, 1], where every
          // exact gradient is 0.
          double rstd_max = 1;
          for (double r : values(cpu.rstd)) rstd_max = std::max(rstd_max, r);
          EXPECT_TRUE(close(gg.grad_input, cg.grad_input, tol * rstd_max)) << "grad_input";
          // The weight and bias gradients sum over all rows: a float32 sum of up to 2000 terms.
          if (affine) {
            const double sum_tol = dtype == DType::Float32 ? 1e-4 : tol;
            EXPECT_TRUE(close(gg.grad_weight, cg.grad_weight, sum_tol)) << "grad_weight";
            EXPECT_TRUE(close(gg.grad_bias, cg.grad_bias, sum_tol)) << "grad_bias";
          }
        }
      }
    }
  }
}

TEST(CudaNnLayerNorm, NonContiguousOutputMaskAndEmpty) {
  RCUDA_REQUIRE_CUDA();
  const Tensor x = random_tensor({40, 30}, DType::Float32);
  const Tensor xt = on_cuda(ops::contiguous(x.t())).t();
  ASSERT_FALSE(xt.is_contiguous());
  const Tensor w = random_tensor({30}, DType::Float32);
  const ops::LayerNormForward cpu = ops::layer_norm_forward(x, {30}, w);
  const ops::LayerNormForward gpu = ops::layer_norm_forward(xt, {30}, on_cuda(w));
  EXPECT_TRUE(close(gpu.out, cpu.out, 2e-5));
  const Tensor g = random_tensor({40, 30}, DType::Float32);
  const ops::LayerNormGrads only_weight = ops::layer_norm_backward(
      on_cuda(g), xt, {30}, gpu.mean, gpu.rstd, on_cuda(w), Tensor(), {false, true, false});
  EXPECT_FALSE(only_weight.grad_input.defined());
  const ops::LayerNormGrads cg =
      ops::layer_norm_backward(g, x, {30}, cpu.mean, cpu.rstd, w, Tensor());
  EXPECT_TRUE(close(only_weight.grad_weight, cg.grad_weight, 1e-4));
  const Tensor empty = Tensor::empty({0, 8}, DType::Float16, kCuda);
  const ops::LayerNormForward fe =
      ops::layer_norm_forward(empty, {8}, on_cuda(ops::ones({8}, DType::Float16)));
  EXPECT_EQ(fe.out.shape(), (Shape{0, 8}));
  const ops::LayerNormGrads ge = ops::layer_norm_backward(
      empty, empty, {8}, fe.mean, fe.rstd, on_cuda(ops::ones({8}, DType::Float16)), Tensor());
  EXPECT_EQ(values(ge.grad_weight), std::vector<double>(8, 0.0));
}

struct CeConfig {
  bool weighted;
  const char* reduction;
  bool with_ignored;
  double smoothing;
  bool probabilities;
};

std::vector<CeConfig> ce_configs() {
  std::vector<CeConfig> configs;
  for (bool probabilities : {false, true})
    for (bool weighted : {false, true})
      for (const char* reduction : {"none", "mean", "sum"})
        for (bool with_ignored : {false, true})
          for (double smoothing : {0.0, 0.1}) {
            if (probabilities && with_ignored) continue;
            configs.push_back({weighted, reduction, with_ignored, smoothing, probabilities});
          }
  return configs;
}

// Class-index targets in [0, classes), every third row set to ignore_index when asked.
Tensor class_targets(int64_t rows, int64_t classes, bool with_ignored, int64_t ignore_index) {
  const Tensor t = ops::remainder(ops::arange(0, rows * 7919, 7919, DType::Int64), classes);
  if (!with_ignored) return t;
  std::vector<double> v = test::to_doubles(t);
  for (size_t r = 1; r < v.size(); r += 3) v[r] = static_cast<double>(ignore_index);
  return test::tensor_of(v, {rows}, DType::Int64);
}

TEST(CudaNnCrossEntropy, ForwardAndBackwardMatchCpuForEveryOption) {
  RCUDA_REQUIRE_CUDA();
  for (const CeConfig& c : ce_configs()) {
    for (DType dtype : floating_dtypes()) {
      // Warp rows (vectorised and not), block rows (vectorised and not).
      for (const Shape& shape : {Shape{33, 64}, Shape{17, 37}, Shape{6, 5000}, Shape{5, 2051}}) {
        SCOPED_TRACE(std::string(c.probabilities ? "probabilities " : "indices ") +
                     (c.weighted ? "weighted " : "") + c.reduction +
                     (c.with_ignored ? " ignored" : "") + " smoothing " +
                     std::to_string(c.smoothing) + " " + dtype_name(dtype) + " " +
                     shape_str(shape));
        const int64_t rows = shape[0], classes = shape[1];
        const Tensor logits = random_tensor(shape, dtype, -4, 4);
        Tensor target;
        if (c.probabilities) {
          const Tensor raw = random_tensor(shape, DType::Float64, 0, 1);
          target = ops::to(ops::div(raw, ops::sum(raw, {1}, true)), dtype);
        } else {
          target = class_targets(rows, classes, c.with_ignored, 3);
        }
        ops::CrossEntropyOptions options;
        options.reduction = c.reduction;
        options.ignore_index = 3;
        options.label_smoothing = c.smoothing;
        if (c.weighted) options.weight = random_tensor({classes}, dtype, 0.2, 2);
        ops::CrossEntropyOptions device_options = options;
        if (c.weighted) device_options.weight = on_cuda(options.weight);

        const ops::CrossEntropyForward cpu = ops::cross_entropy_forward(logits, target, options);
        const Tensor dl = on_cuda(logits), dt = on_cuda(target);
        const ops::CrossEntropyForward gpu = ops::cross_entropy_forward(dl, dt, device_options);
        const double tol = dtype == DType::Float32 ? 2e-5 : backend_tolerance(dtype);
        EXPECT_TRUE(close(gpu.loss, cpu.loss, tol)) << "loss";
        const Tensor g = random_tensor(cpu.loss.shape(), dtype, 0.5, 2);
        const Tensor cg = ops::cross_entropy_backward(g, logits, target, cpu, options);
        const Tensor gg = ops::cross_entropy_backward(on_cuda(g), dl, dt, gpu, device_options);
        EXPECT_TRUE(close(gg, cg, tol)) << "grad";
        // The scalar path on misaligned logits.
        const Tensor ml = misaligned_on_cuda(logits);
        const ops::CrossEntropyForward gm = ops::cross_entropy_forward(ml, dt, device_options);
        EXPECT_TRUE(close(gm.loss, cpu.loss, tol)) << "misaligned loss";
        EXPECT_TRUE(
            close(ops::cross_entropy_backward(on_cuda(g), ml, dt, gm, device_options), cg, tol))
            << "misaligned grad";
      }
    }
  }
}

TEST(CudaNnCrossEntropy, SpatialInputsEmptyAndOutOfRangeTargets) {
  RCUDA_REQUIRE_CUDA();
  // (N, C, d1, d2) with class indices: the class dim moves last on both devices.
  const Tensor logits = random_tensor({2, 5, 3, 4}, DType::Float32);
  const Tensor target = ops::remainder(ops::arange(0, 24, 1, DType::Int64), 5).view({2, 3, 4});
  ops::CrossEntropyOptions options;
  options.label_smoothing = 0.2;
  const ops::CrossEntropyForward cpu = ops::cross_entropy_forward(logits, target, options);
  const ops::CrossEntropyForward gpu =
      ops::cross_entropy_forward(on_cuda(logits), on_cuda(target), options);
  EXPECT_TRUE(close(gpu.loss, cpu.loss, 2e-5));
  const Tensor g = ops::ones({});
  EXPECT_TRUE(
      close(ops::cross_entropy_backward(on_cuda(g), on_cuda(logits), on_cuda(target), gpu, options),
            ops::cross_entropy_backward(g, logits, target, cpu, options), 2e-5));
  // Empty batches.
  const Tensor empty = Tensor::empty({0, 5}, DType::Float32, kCuda);
  const Tensor no_targets = Tensor::empty({0}, DType::Int64, kCuda);
  EXPECT_TRUE(std::isnan(values(ops::cross_entropy(empty, no_targets))[0]));
  // An out-of-range class: the CPU throws at once; the GPU gives NaN for that row and raises the
  // IndexError at the next synchronisation (Note [Deferred device errors]), once.
  const Tensor bad = test::tensor_of({1, 9, 2}, {3}, DType::Int64);
  const Tensor z = random_tensor({3, 5}, DType::Float32);
  EXPECT_THROW(ops::cross_entropy(z, bad), IndexError);
  options = {};
  options.reduction = "none";
  const ops::CrossEntropyForward f = ops::cross_entropy_forward(on_cuda(z), on_cuda(bad), options);
  try {
    cuda::synchronize(0);
    ADD_FAILURE() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("cross_entropy: target 9 is out of bounds for 5 classes "
                                         "(row 1)"),
              std::string::npos)
        << e.what();
  }
  const std::vector<double> loss = values(f.loss);
  EXPECT_FALSE(std::isnan(loss[0]));
  EXPECT_TRUE(std::isnan(loss[1]));
  const Tensor mean = ops::cross_entropy(on_cuda(z), on_cuda(bad));
  EXPECT_THROW(cuda::synchronize(0), IndexError);
  EXPECT_TRUE(std::isnan(values(mean)[0]));
  const std::vector<double> grad = values(
      ops::cross_entropy_backward(on_cuda(ops::ones({3})), on_cuda(z), on_cuda(bad), f, options));
  EXPECT_FALSE(std::isnan(grad[0]));
  EXPECT_TRUE(std::isnan(grad[5]));
}

}  // namespace
}  // namespace rcuda
