// CUDA optimizer steps and gradient clipping against the CPU backend (itself checked against
// double references of torch's algorithms in tests/optim/): the same parameters and gradients
// on both devices, the same optimizer on each, parameters and every state buffer compared after
// each step. 130 tensors per group (more than one multi-tensor launch holds), of sizes around
// the vector widths and the 4096-element chunk, empty ones, and misaligned ones (views one
// element into an allocation, which take the element-wise path beside aligned ones in the
// same launch); every floating dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "support/devices.h"

namespace rcuda {
namespace {

using optim::OptionMap;
using optim::ParamGroup;
using test::kCpu;
using test::kCuda;
using test::on_cuda;
using test::values;

const std::vector<int64_t> kSizes = {0,    1,    2,    3,    5,    7,     8,     9,     31,
                                     1023, 4095, 4096, 4097, 8191, 12289, 70001, 262147};
constexpr size_t kTensors = 130;

// Backends differ by contraction into fused multiply-adds and the order of a few roundings:
// a couple of ulps per step, carried over three steps.
double step_tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return 1e-12;
    case DType::Float32:
      return 1e-5;
    case DType::Float16:
      return 4e-3;
    default:
      return 3e-2;
  }
}

// A CUDA copy of `t`; misaligned: a view starting one element into a larger allocation.
Tensor cuda_copy(const Tensor& t, bool misaligned) {
  if (!misaligned) return on_cuda(t);
  const Tensor base = ops::empty({t.numel() + 1}, {t.dtype(), kCuda});
  const Tensor view = base.narrow(0, 1, t.numel()).view(t.shape());
  ops::copy_(view, t);
  return view;
}

struct Tensors {
  std::vector<Tensor> cpu, cuda;
};

int64_t size_of(size_t i) {
  const int64_t n = kSizes[i % kSizes.size()];
  return (i >= kSizes.size() && n > 100000) ? 33 : n;  // one large tensor is enough
}

// Values uniform in +-[low, high].
Tensor random_signed(const Shape& shape, DType dtype, double low, double high) {
  std::vector<double> v = test::to_doubles(test::random_tensor(shape, DType::Float64, low, high));
  for (double& x : v)
    if (test::rng()() & 1) x = -x;
  return test::tensor_of(v, shape, dtype);
}

Tensors make_params(DType dtype, bool misaligned) {
  Tensors t;
  for (size_t i = 0; i < kTensors; ++i) {
    const int64_t n = size_of(i);
    const Shape shape = (n % 4 == 0 && n > 0) ? Shape{4, n / 4} : Shape{n};
    const Tensor p = test::random_tensor(shape, dtype);
    t.cpu.push_back(p);
    t.cuda.push_back(cuda_copy(p, misaligned && i % 3 == 1));
  }
  return t;
}

using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<ParamGroup>)>;

template <typename Opt>
Make maker() {
  return [](std::vector<ParamGroup> groups) -> std::unique_ptr<optim::Optimizer> {
    return std::make_unique<Opt>(std::move(groups));
  };
}

void expect_same_state(const optim::Optimizer& cpu, const optim::Optimizer& cuda,
                       const Tensors& params, double tol) {
  for (size_t i = 0; i < params.cpu.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i) + " of " + std::to_string(params.cpu[i].numel()) +
                 " elements");
    EXPECT_TRUE(params.cuda[i].device().is_cuda());
    EXPECT_TRUE(test::all_close(values(params.cuda[i]), test::to_doubles(params.cpu[i]), tol));
    const optim::ParamState* a = cpu.state(params.cpu[i]);
    const optim::ParamState* b = cuda.state(params.cuda[i]);
    ASSERT_EQ(a == nullptr, b == nullptr);
    if (a == nullptr) continue;
    EXPECT_EQ(a->step, b->step);
    for (size_t k = 0; k < a->buffers.size(); ++k) {
      ASSERT_EQ(a->buffers[k].defined(), b->buffers[k].defined()) << cpu.buffer_names()[k];
      if (!a->buffers[k].defined()) continue;
      EXPECT_TRUE(b->buffers[k].device().is_cuda());
      EXPECT_TRUE(test::all_close(values(b->buffers[k]), test::to_doubles(a->buffers[k]), tol))
          << cpu.buffer_names()[k];
    }
  }
}

// Three steps of the same optimizer on both devices; at the first step every fifth tensor has
// no gradient (so the second step mixes new and existing state).
void expect_cuda_matches_cpu(const std::string& label, const Make& make, const OptionMap& options,
                             const std::vector<DType>& dtypes) {
  for (DType dtype : dtypes) {
    for (bool misaligned : {false, true}) {
      SCOPED_TRACE(label + " " + dtype_name(dtype) + (misaligned ? " misaligned" : ""));
      const Tensors params = make_params(dtype, misaligned);
      auto cpu = make({ParamGroup(params.cpu, options)});
      auto cuda = make({ParamGroup(params.cuda, options)});
      const double low = is_reduced_float(dtype) ? 0.25 : 0;  // half second moments stay normal
      for (int step = 0; step < 3; ++step) {
        for (size_t i = 0; i < kTensors; ++i) {
          if (step == 0 && i % 5 == 0) {
            params.cpu[i].set_grad(Tensor());
            params.cuda[i].set_grad(Tensor());
            continue;
          }
          const Tensor g = random_signed(params.cpu[i].shape(), dtype, low, 2);
          params.cpu[i].set_grad(g);
          params.cuda[i].set_grad(cuda_copy(g, misaligned && i % 3 == 1));
        }
        cpu->step();
        cuda->step();
        SCOPED_TRACE("step " + std::to_string(step));
        expect_same_state(*cpu, *cuda, params, step_tolerance(dtype));
      }
    }
  }
}

const std::vector<DType> kAllFloating = {DType::Float32, DType::Float64, DType::Float16,
                                         DType::BFloat16};

TEST(CudaOptim, SgdMatchesCpu) {
  RCUDA_REQUIRE_CUDA();
  expect_cuda_matches_cpu("plain", maker<optim::SGD>(), {{"lr", 0.1}}, kAllFloating);
  expect_cuda_matches_cpu("momentum dampening", maker<optim::SGD>(),
                          {{"lr", 0.1}, {"momentum", 0.9}, {"dampening", 0.2}}, kAllFloating);
  expect_cuda_matches_cpu("nesterov weight_decay maximize", maker<optim::SGD>(),
                          {{"lr", 0.05},
                           {"momentum", 0.8},
                           {"nesterov", true},
                           {"weight_decay", 0.1},
                           {"maximize", true}},
                          {DType::Float32, DType::Float64});
}

TEST(CudaOptim, AdamMatchesCpu) {
  RCUDA_REQUIRE_CUDA();
  expect_cuda_matches_cpu("defaults", maker<optim::Adam>(), {{"lr", 0.05}}, kAllFloating);
  expect_cuda_matches_cpu(
      "amsgrad weight_decay maximize", maker<optim::Adam>(),
      {{"lr", 0.05}, {"amsgrad", true}, {"weight_decay", 0.1}, {"maximize", true}}, kAllFloating);
}

TEST(CudaOptim, AdamWMatchesCpu) {
  RCUDA_REQUIRE_CUDA();
  expect_cuda_matches_cpu("weight_decay amsgrad", maker<optim::AdamW>(),
                          {{"lr", 0.05}, {"weight_decay", 0.3}, {"amsgrad", true}}, kAllFloating);
}

TEST(CudaOptim, RmspropMatchesCpu) {
  RCUDA_REQUIRE_CUDA();
  expect_cuda_matches_cpu("defaults", maker<optim::RMSprop>(), {}, kAllFloating);
  expect_cuda_matches_cpu(
      "centered momentum weight_decay", maker<optim::RMSprop>(),
      {{"centered", true}, {"momentum", 0.5}, {"weight_decay", 0.1}, {"maximize", true}},
      kAllFloating);
}

TEST(CudaOptim, AdagradMatchesCpu) {
  RCUDA_REQUIRE_CUDA();
  expect_cuda_matches_cpu(
      "lr_decay weight_decay accumulator", maker<optim::Adagrad>(),
      {{"lr", 0.1}, {"lr_decay", 0.1}, {"weight_decay", 0.1}, {"initial_accumulator_value", 0.3}},
      kAllFloating);
}

TEST(CudaOptim, StateDictMovesBetweenDevices) {
  RCUDA_REQUIRE_CUDA();
  const Tensors params = make_params(DType::Float32, false);
  const OptionMap options = {{"lr", 0.05}, {"amsgrad", true}};
  optim::Adam cpu(std::vector<ParamGroup>{ParamGroup(params.cpu, options)});
  for (const Tensor& p : params.cpu) p.set_grad(test::random_tensor(p.shape(), p.dtype()));
  cpu.step();
  // The CUDA parameters take the CPU's current values and state, then both go on.
  for (size_t i = 0; i < kTensors; ++i) ops::copy_(params.cuda[i], params.cpu[i]);
  optim::Adam cuda(std::vector<ParamGroup>{ParamGroup(params.cuda)});
  cuda.load_state_dict(cpu.state_dict());
  for (int step = 0; step < 2; ++step) {
    for (size_t i = 0; i < kTensors; ++i) {
      const Tensor g = test::random_tensor(params.cpu[i].shape(), DType::Float32);
      params.cpu[i].set_grad(g);
      params.cuda[i].set_grad(on_cuda(g));
    }
    cpu.step();
    cuda.step();
  }
  expect_same_state(cpu, cuda, params, step_tolerance(DType::Float32));
}

// The step of an Adam over a 784-512-512-10 MLP: one multi-tensor launch. Reported, not
// asserted (timings vary by machine).
TEST(CudaOptim, AdamStepOnMlpTime) {
  RCUDA_REQUIRE_CUDA();
  std::vector<Tensor> params;
  for (const Shape& s : std::vector<Shape>{{512, 784}, {512}, {512, 512}, {512}, {10, 512}, {10}}) {
    const Tensor p = on_cuda(test::random_tensor(s, DType::Float32));
    p.set_grad(on_cuda(test::random_tensor(s, DType::Float32)));
    params.push_back(p);
  }
  optim::Adam opt(params, {});
  opt.step();  // creates the state
  cuda::synchronize(0);
  const double ms = cuda::time_ms(0, [&] {
    for (int i = 0; i < 100; ++i) opt.step();
  });
  RecordProperty("adam_mlp_step_us", std::to_string(ms * 10));
  std::printf("[ rcuda ] Adam step, 784-512-512-10 MLP (669706 floats): %.1f us\n", ms * 10);
}

// ---- clip_grad_norm_ / clip_grad_value_ ----

struct Grads {
  std::vector<Tensor> cpu_params, cuda_params;
};

// Parameters whose gradients have mixed sizes, 2 of every 3 float32 and the rest `other`.
Grads make_grads(DType other, bool misaligned, double scale = 1) {
  Grads g;
  for (size_t i = 0; i < kTensors; ++i) {
    const DType dtype = i % 3 == 2 ? other : DType::Float32;
    const Shape shape{size_of(i)};
    const Tensor cpu = test::random_tensor(shape, dtype), cuda = on_cuda(cpu);
    const Tensor grad = test::random_tensor(shape, dtype, -scale, scale);
    cpu.set_grad(grad);
    cuda.set_grad(cuda_copy(grad, misaligned && i % 4 == 3));
    g.cpu_params.push_back(cpu);
    g.cuda_params.push_back(cuda);
  }
  return g;
}

TEST(CudaOptim, ClipGradNormMatchesCpu) {
  RCUDA_REQUIRE_CUDA();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (DType other : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (double p : {1.0, 2.0, kInf, 2.5}) {
      for (double max_norm : {1.0, 1e9}) {
        for (bool foreach : {true, false}) {
          for (bool misaligned : {false, true}) {
            SCOPED_TRACE(std::string(dtype_name(other)) + " p=" + std::to_string(p) +
                         " max_norm=" + std::to_string(max_norm) + (foreach ? " foreach" : "") +
                         (misaligned ? " misaligned" : ""));
            const Grads g = make_grads(other, misaligned);
            const Tensor expected = optim::clip_grad_norm_(g.cpu_params, max_norm, p);
            const Tensor actual =
                optim::clip_grad_norm_(g.cuda_params, max_norm, p, false, foreach);
            EXPECT_TRUE(actual.device().is_cuda());
            EXPECT_EQ(actual.dim(), 0);
            EXPECT_EQ(actual.dtype(), expected.dtype());
            // The fused norm accumulates in double on both devices: the totals differ by their
            // summation orders. Without foreach each gradient's norm is the engine's reduction,
            // which on the GPU accumulates float32 in float32 (as torch's): ~1e-5 over 1e5
            // elements.
            // float16/bfloat16 gradients' norms are also rounded to their dtype (as torch's
            // foreach=False): up to 2^-9 / 2^-12 relative.
            const double per_tensor = other == DType::BFloat16  ? 4e-3
                                      : other == DType::Float16 ? 5e-4
                                                                : 1e-4;
            const double tol = !foreach                             ? per_tensor
                               : expected.dtype() == DType::Float64 ? 1e-12
                                                                    : 2e-6;
            EXPECT_TRUE(test::all_close(values(actual), values(expected), tol));
            for (size_t i = 0; i < kTensors; ++i)
              // Scaled by the clip coefficient, so within the norm's tolerance when clipped.
              EXPECT_TRUE(test::all_close(values(g.cuda_params[i].grad()),
                                          values(g.cpu_params[i].grad()),
                                          std::max(test::backend_tolerance(g.cpu_params[i].dtype()),
                                                   max_norm < 1e9 ? tol : 0.0)))
                  << "gradient " << i;
          }
        }
      }
    }
  }
}

TEST(CudaOptim, ClipGradNormNonFinite) {
  RCUDA_REQUIRE_CUDA();
  const Grads g = make_grads(DType::Float32, false);
  const Tensor bad = on_cuda(test::tensor_of({1, std::nan(""), 2}, {3}, DType::Float32));
  const Tensor p = on_cuda(test::random_tensor({3}, DType::Float32));
  p.set_grad(bad);
  std::vector<Tensor> params = g.cuda_params;
  params.push_back(p);
  const std::vector<double> before = values(g.cuda_params[7].grad());
  EXPECT_THROW(optim::clip_grad_norm_(params, 1.0, 2, true), ValueError);
  EXPECT_EQ(values(g.cuda_params[7].grad()), before);  // untouched
  const Tensor total = optim::clip_grad_norm_(params, 1.0);
  EXPECT_TRUE(std::isnan(values(total)[0]));
}

TEST(CudaOptim, ClipGradValueMatchesCpu) {
  RCUDA_REQUIRE_CUDA();
  const Grads g = make_grads(DType::Float64, true, 3);
  optim::clip_grad_value_(g.cpu_params, 1.5);
  optim::clip_grad_value_(g.cuda_params, 1.5);
  for (size_t i = 0; i < kTensors; ++i)
    EXPECT_EQ(values(g.cuda_params[i].grad()), values(g.cpu_params[i].grad())) << i;
}

}  // namespace
}  // namespace rcuda
