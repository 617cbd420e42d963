// CUDA backend vs CPU backend: devices, transfers, memory pool, elementwise ops, creation,
// copies and random streams. Each test draws fresh inputs on the host, runs the op on both
// devices and compares; the CPU backend is itself checked against double loops in tests/ops/.
#include <gtest/gtest.h>

#include <cstring>

#include "rcuda/core/philox.h"
#include "rcuda/ops/copy.h"
#include "rcuda/tensor/memory_format.h"
#include "support/devices.h"

namespace rcuda {
namespace {

using test::kCpu;
using test::kCuda;
using test::on_cuda;
using test::random_tensor;
using test::values;

TEST(CudaDevice, CountPropertiesAndBadIndex) {
  RCUDA_REQUIRE_CUDA();
  const int n = cuda::device_count();
  const cuda::DeviceProperties p = cuda::properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.major, 7);
  EXPECT_GT(p.total_memory_bytes, int64_t{1} << 30);
  EXPECT_GT(p.multiprocessor_count, 0);
  EXPECT_EQ(p.uuid.rfind("GPU-", 0), 0u);
  EXPECT_FALSE(p.pci_bus_id.empty());
  EXPECT_GT(cuda::runtime_version(), 11000);
  EXPECT_GE(cuda::driver_version(), cuda::runtime_version() / 1000 * 1000);
  EXPECT_THROW(cuda::properties(n), DeviceError);
  EXPECT_THROW(Tensor::empty({2}, DType::Float32, Device(DeviceType::CUDA, n)), DeviceError);
  try {
    cuda::properties(n + 3);
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(n + 3)), std::string::npos) << e.what();
  }
}

TEST(CudaCopy, RoundTripIsBitExactForEveryDtypeAndLayout) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::all_dtypes()) {
    const Tensor x = random_tensor({37, 129}, dtype, -1000, 1000);
    const Tensor back = to(on_cuda(x), kCpu);
    ASSERT_EQ(back.dtype(), dtype);
    EXPECT_EQ(std::memcmp(back.data_ptr(), x.data_ptr(), x.numel() * x.element_size()), 0)
        << dtype_name(dtype);
    // Non-contiguous on either side.
    const Tensor t = test::transposed_copy(x);
    EXPECT_EQ(values(on_cuda(t)), test::to_doubles(t)) << dtype_name(dtype);
    const Tensor g = on_cuda(x).slice(1, 1, 129, 3);
    EXPECT_EQ(values(g), test::to_doubles(x.slice(1, 1, 129, 3))) << dtype_name(dtype);
  }
}

TEST(CudaCopy, ConversionsMatchTheCpuBackend) {
  RCUDA_REQUIRE_CUDA();
  for (DType from : test::all_dtypes()) {
    const Tensor x = random_tensor({1000}, from, -300, 300);
    const Tensor xc = on_cuda(x);
    for (DType dtype : test::all_dtypes()) {
      EXPECT_EQ(values(to(xc, dtype)), values(to(x, dtype)))
          << dtype_name(from) << " -> " << dtype_name(dtype);
      // Host -> device with conversion, and device -> host with conversion.
      EXPECT_EQ(values(to(x, kCuda, dtype)), values(to(x, dtype)));
      EXPECT_EQ(values(to(xc, kCpu, dtype)), values(to(x, dtype)));
    }
  }
}

TEST(CudaCopy, CopyIntoStridedViewsAndBroadcast) {
  RCUDA_REQUIRE_CUDA();
  Tensor dst = zeros({6, 8}, {DType::Float32, kCuda});
  Tensor host_dst = zeros({6, 8});
  const Tensor row = random_tensor({4}, DType::Float64);
  copy_(dst.slice(1, 0, 8, 2), row);  // broadcast over rows, strided columns, with conversion
  copy_(host_dst.slice(1, 0, 8, 2), row);
  EXPECT_EQ(values(dst), values(host_dst));
  // Overlapping views of one device storage.
  const Tensor x = random_tensor({100}, DType::Float32);
  Tensor y = on_cuda(x), z = clone(x);
  copy_(y.slice(0, 1, 100), y.slice(0, 0, 99));
  copy_(z.slice(0, 1, 100), z.slice(0, 0, 99));
  EXPECT_EQ(values(y), values(z));
}

TEST(CudaCopy, BetweenTwoDevices) {
  RCUDA_REQUIRE_CUDA();
  if (cuda::device_count() < 2)
    GTEST_SKIP() << "needs 2 CUDA devices, found " << cuda::device_count();
  const Device second(DeviceType::CUDA, 1);
  const Tensor x = random_tensor({300, 77}, DType::Float32);
  const Tensor on0 = on_cuda(x);
  const Tensor on1 = to(on0, second);
  EXPECT_EQ(on1.device(), second);
  EXPECT_EQ(values(on1), test::to_doubles(x));
  // Strided source and a dtype change on the way.
  const Tensor t = to(to(on0.t(), second), DType::Float64);
  EXPECT_EQ(values(t), test::to_doubles(x.t()));
  EXPECT_EQ(values(add(on1, 1.0)), values(add(x, 1.0)));
  EXPECT_THROW(add(on0, on1), DeviceError);
}

TEST(CudaMemory, StatsPoolAndOutOfMemoryRecovery) {
  RCUDA_REQUIRE_CUDA();
  cuda::synchronize(0);
  const MemoryStats before = cuda::memory_stats(0);
  {
    Tensor t = Tensor::empty({1 << 20}, DType::Float32, kCuda);
    const MemoryStats during = cuda::memory_stats(0);
    EXPECT_EQ(during.allocated_bytes - before.allocated_bytes, 4 << 20);
    EXPECT_GE(during.reserved_bytes, during.allocated_bytes);
    EXPECT_GE(during.peak_allocated_bytes, during.allocated_bytes);
    EXPECT_EQ(during.allocation_count, before.allocation_count + 1);
  }
  EXPECT_EQ(cuda::memory_stats(0).allocated_bytes, before.allocated_bytes);

  // Ask for more than the card has: a recoverable OutOfMemoryError after the hooks ran.
  int hook_calls = 0;
  const int hook = cuda::add_oom_hook([&](int, size_t) { ++hook_calls; });
  const int64_t too_many = cuda::properties(0).total_memory_bytes;  // bytes as float32 elements
  try {
    Tensor::empty({too_many}, DType::Float32, kCuda);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.requested_bytes, static_cast<size_t>(too_many) * 4);
    EXPECT_GT(e.total_bytes, 0u);
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos);
  }
  cuda::remove_oom_hook(hook);
  EXPECT_EQ(hook_calls, 1);
  EXPECT_EQ(cuda::memory_stats(0).oom_count, before.oom_count + 1);
  // The process is still usable.
  const Tensor x = random_tensor({1000}, DType::Float32);
  EXPECT_EQ(values(add(on_cuda(x), 1.0)), values(add(x, 1.0)));
  cuda::empty_cache(0);
  EXPECT_EQ(cuda::memory_stats(0).reserved_bytes,
            cuda::memory_stats(0).allocated_bytes == 0 ? 0 : cuda::memory_stats(0).reserved_bytes);
  cuda::set_release_threshold(0, 123 << 20);
  EXPECT_EQ(cuda::release_threshold(0), uint64_t{123} << 20);
}

// Every unary op on every dtype it accepts, contiguous and strided, against the CPU backend.
TEST(CudaElementwise, UnaryOpsMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  const char* floating_ops[] = {"exp", "expm1", "log",  "log1p",   "sqrt", "rsqrt",
                                "sin", "cos",   "tanh", "sigmoid", "gelu", "silu"};
  const char* any_ops[] = {"neg", "abs", "sign", "relu", "floor", "ceil", "round", "logical_not"};
  for (DType dtype : test::all_dtypes()) {
    const Tensor x = random_tensor({67, 45}, dtype, 0.01, 3);
    const Tensor views[] = {x, test::transposed_copy(x), x.slice(1, 0, 45, 2)};
    for (const Tensor& v : views) {
      const Tensor vc = on_cuda(v);
      for (const char* op : any_ops) {
        if (dtype == DType::Bool && std::strcmp(op, "logical_not") != 0 &&
            std::strcmp(op, "sign") != 0 && std::strcmp(op, "floor") != 0 &&
            std::strcmp(op, "ceil") != 0 && std::strcmp(op, "round") != 0)
          continue;
        EXPECT_TRUE(test::all_close(values(unary_op(op, vc)), values(unary_op(op, v)),
                                    test::backend_tolerance(dtype)))
            << op << " " << dtype_name(dtype);
      }
      for (const char* op : floating_ops) {
        const Tensor expected = unary_op(op, v);
        EXPECT_TRUE(test::all_close(values(unary_op(op, vc)), values(expected),
                                    test::backend_tolerance(expected.dtype())))
            << op << " " << dtype_name(dtype);
      }
    }
  }
  // Special values: NaN through relu and clamp, round half to even.
  const Tensor s = test::tensor_of({NAN, -0.5, 0.5, 1.5, 2.5, -INFINITY}, {6}, DType::Float32);
  EXPECT_TRUE(test::all_close(values(relu(on_cuda(s))), values(relu(s)), 0));
  EXPECT_TRUE(test::all_close(values(round(on_cuda(s))), values(round(s)), 0));
  EXPECT_TRUE(test::all_close(values(clamp(on_cuda(s), Scalar(-1.0), Scalar(1.0))),
                              values(clamp(s, Scalar(-1.0), Scalar(1.0))), 0));
  EXPECT_TRUE(test::all_close(values(pow(on_cuda(s), 3)), values(pow(s, 3)), 1e-6));
  EXPECT_TRUE(test::all_close(values(gelu(on_cuda(s), "tanh")), values(gelu(s, "tanh")), 1e-6));
}

TEST(CudaElementwise, BinaryOpsMatchCpuWithBroadcasting) {
  RCUDA_REQUIRE_CUDA();
  const char* ops[] = {"add",     "sub",     "mul",         "div",        "remainder",  "pow",
                       "maximum", "minimum", "eq",          "ne",         "lt",         "le",
                       "gt",      "ge",      "logical_and", "logical_or", "logical_xor"};
  for (DType dtype : test::all_dtypes()) {
    const Tensor a = random_tensor({3, 1, 50}, dtype, 1, 9);
    const Tensor b = random_tensor({40, 50}, dtype, 1, 5);  // no zeros: integer remainder
    for (const char* op : ops) {
      if (dtype == DType::Bool &&
          (std::strcmp(op, "sub") == 0 || std::strcmp(op, "remainder") == 0))
        continue;
      const Tensor expected = binary_op(op, a, b);
      const Tensor got = binary_op(op, on_cuda(a), on_cuda(b));
      ASSERT_EQ(got.dtype(), expected.dtype()) << op;
      EXPECT_TRUE(test::all_close(values(got), values(expected),
                                  4 * test::backend_tolerance(expected.dtype())))
          << op << " " << dtype_name(dtype);
      // Strided operands.
      const Tensor at = test::transposed_copy(random_tensor({40, 50}, dtype, 1, 9));
      EXPECT_TRUE(test::all_close(values(binary_op(op, on_cuda(at), on_cuda(b))),
                                  values(binary_op(op, at, b)),
                                  4 * test::backend_tolerance(expected.dtype())))
          << op << " strided " << dtype_name(dtype);
    }
  }
  // Scalars, mixed dtypes and a large contiguous (vectorised) case with an odd tail.
  const Tensor x = random_tensor({1 << 20 | 3}, DType::Float32);
  const Tensor y = random_tensor({1 << 20 | 3}, DType::Float16);
  EXPECT_TRUE(test::all_close(values(add(on_cuda(x), on_cuda(y))), values(add(x, y)), 1e-6));
  EXPECT_TRUE(test::all_close(values(mul(on_cuda(x), 2.5)), values(mul(x, 2.5)), 0));
  EXPECT_TRUE(test::all_close(values(add(on_cuda(x).slice(0, 1, 1 << 20), 1.0)),
                              values(add(x.slice(0, 1, 1 << 20), 1.0)), 0));  // misaligned
  const Tensor cond = random_tensor({40, 50}, DType::Bool);
  const Tensor wa = random_tensor({40, 1}, DType::Int32), wb = random_tensor({50}, DType::Float64);
  EXPECT_EQ(values(where(on_cuda(cond), on_cuda(wa), on_cuda(wb))), values(where(cond, wa, wb)));
  EXPECT_THROW(add(on_cuda(x), x), DeviceError);
}

// A number beside a tensor reaches the kernel by value (Note [Numbers as operands]): every op,
// dtype and side against the CPU, whose loops read the number as a broadcast 0-dim tensor and
// are checked against double loops in tests/ops; contiguous, transposed, misaligned, empty and
// 0-dim tensors, numbers that promote (2.5 beside integers), that wrap (300 in int8) and bools.
// An error on the CPU must be an error on CUDA too.
TEST(CudaElementwise, NumberOperandsMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  const char* ops[] = {"add",         "sub",        "mul",         "div",         "remainder",
                       "pow",         "maximum",    "minimum",     "atan2",       "eq",
                       "ne",          "lt",         "le",          "gt",          "ge",
                       "logical_and", "logical_or", "logical_xor", "floor_divide"};
  const Scalar numbers[] = {Scalar(int64_t{3}), Scalar(2.5), Scalar(true), Scalar(int64_t{300}),
                            Scalar(int64_t{0})};
  for (DType dtype : test::all_dtypes()) {
    const Tensor base = random_tensor({40, 50}, dtype, 1, 4);  // no zeros: integer remainder
    const std::vector<Tensor> inputs = {
        base, test::transposed_copy(base), base.slice(1, 1, 50),  // misaligned rows
        random_tensor({0, 3}, dtype), random_tensor({}, dtype, 1, 4)};
    for (const char* op : ops) {
      for (const Scalar& number : numbers) {
        // Integer powers past the width overflow, which the backends need not agree on.
        if (std::strcmp(op, "pow") == 0 && number.to_double() > 4) continue;
        for (bool number_first : {false, true}) {
          for (const Tensor& x : inputs) {
            SCOPED_TRACE(std::string(op) + " " + dtype_name(dtype) + " number " +
                         std::to_string(number.to_double()) + (number_first ? " first" : "") + " " +
                         shape_str(x.shape()));
            const auto run = [&](const Tensor& t) {
              return number_first ? binary_op(op, number, t) : binary_op(op, t, number);
            };
            Tensor expected;
            try {
              expected = run(x);
            } catch (const Error&) {
              // A zero among the divisor's elements is the one error a kernel cannot raise
              // (docs/design.md, differences from the CPU backend): bool tensors hold zeros.
              const bool zero_divisor = number_first && std::strcmp(op, "remainder") == 0 &&
                                        item(any(eq(x, Scalar(int64_t{0})))).to_bool();
              if (!zero_divisor) {
                EXPECT_THROW(run(on_cuda(x)), Error);
              }
              continue;
            }
            const Tensor got = run(on_cuda(x));
            ASSERT_EQ(got.dtype(), expected.dtype());
            ASSERT_EQ(got.shape(), expected.shape());
            EXPECT_TRUE(test::all_close(values(got), values(expected),
                                        4 * test::backend_tolerance(expected.dtype())));
          }
        }
      }
    }
  }
}

// Operands sharing one dense permuted layout (channels-last activations) take the flat kernels:
// values match the CPU, the result keeps the layout (Note [Elementwise outputs keep
// channels-last]), and a mix of layouts, a sliced channels-last view or a broadcast operand
// still gives the right values through the strided kernels.
TEST(CudaElementwise, ChannelsLastOperandsMatchCpu) {
  RCUDA_REQUIRE_CUDA();
  // Copies between devices are contiguous: the layout is made on the GPU.
  const auto cl_on_cuda = [](const Tensor& t) {
    return contiguous(on_cuda(t), MemoryFormat::ChannelsLast);
  };
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float64, DType::Int32}) {
    const Tensor a =
        contiguous(random_tensor({3, 5, 7, 9}, dtype, 1, 9), MemoryFormat::ChannelsLast);
    const Tensor b =
        contiguous(random_tensor({3, 5, 7, 9}, dtype, 1, 9), MemoryFormat::ChannelsLast);
    const double tol = 4 * test::backend_tolerance(dtype);
    for (const char* op : {"add", "mul", "maximum", "lt"}) {
      const Tensor got = binary_op(op, cl_on_cuda(a), cl_on_cuda(b));
      EXPECT_EQ(got.strides(), a.strides()) << op << " " << dtype_name(dtype);
      EXPECT_TRUE(test::all_close(values(got), values(binary_op(op, a, b)), tol))
          << op << " " << dtype_name(dtype);
    }
    const Tensor plain = random_tensor({3, 5, 7, 9}, dtype, 1, 9);
    EXPECT_TRUE(
        test::all_close(values(add(cl_on_cuda(a), on_cuda(plain))), values(add(a, plain)), tol))
        << dtype_name(dtype);
    const Tensor bias = random_tensor({1, 5, 1, 1}, dtype, 1, 9);
    EXPECT_TRUE(
        test::all_close(values(mul(cl_on_cuda(a), on_cuda(bias))), values(mul(a, bias)), tol))
        << dtype_name(dtype);
    const Tensor cut = a.slice(2, 1, 6);  // channels-last strides, no longer dense
    EXPECT_TRUE(
        test::all_close(values(sub(cl_on_cuda(a).slice(2, 1, 6), cl_on_cuda(b).slice(2, 1, 6))),
                        values(sub(cut, b.slice(2, 1, 6))), tol))
        << dtype_name(dtype);
  }
}

TEST(CudaElementwise, FloorDivideMatchesCpu) {
  RCUDA_REQUIRE_CUDA();
  // Composed from other ops (Note [Floor division]): the CPU backend is the reference, over
  // negative operands, broadcasting, strides, a scalar, and the integer zero-divisor check
  // (which reads the divisor back from the GPU).
  for (DType dtype : test::all_dtypes()) {
    if (dtype == DType::Bool) continue;
    const double low = dtype == DType::UInt8 ? 0 : -9;
    const Tensor a = random_tensor({3, 1, 50}, dtype, low, 9);
    Tensor b = random_tensor({40, 50}, dtype, 1, 5);
    if (dtype != DType::UInt8) b = where(random_tensor({40, 50}, DType::Bool), b, neg(b));
    const Tensor expected = floor_divide(a, b);
    const Tensor got = floor_divide(on_cuda(a), on_cuda(b));
    ASSERT_EQ(got.dtype(), expected.dtype()) << dtype_name(dtype);
    EXPECT_EQ(values(got), values(expected)) << dtype_name(dtype);
    const Tensor at = test::transposed_copy(random_tensor({40, 50}, dtype, low, 9));
    EXPECT_EQ(values(floor_divide(on_cuda(at), on_cuda(b))), values(floor_divide(at, b)))
        << dtype_name(dtype) << " strided";
    EXPECT_EQ(values(floor_divide(on_cuda(a), 3)), values(floor_divide(a, 3))) << dtype_name(dtype);
  }
  const Tensor i = random_tensor({1000}, DType::Int64, -9, 9);
  Tensor zero_at_end = random_tensor({1000}, DType::Int64, 1, 5);
  zero_at_end = cat({zero_at_end.slice(0, 0, 999), zeros({1}, DType::Int64)}, 0);
  EXPECT_THROW(floor_divide(on_cuda(i), on_cuda(zero_at_end)), ValueError);
  const std::vector<double> z =
      values(floor_divide(on_cuda(test::tensor_of({1, -1, 0}, {3}, DType::Float32)), 0.0));
  EXPECT_TRUE(std::isinf(z[0]) && z[0] > 0 && std::isinf(z[1]) && z[1] < 0 && std::isnan(z[2]));
}

TEST(CudaCreation, FillRangesAndEye) {
  RCUDA_REQUIRE_CUDA();
  for (DType dtype : test::all_dtypes()) {
    const TensorOptions on(dtype, kCuda);
    EXPECT_EQ(values(full({5, 7}, 3, on)), values(full({5, 7}, 3, dtype)));
    EXPECT_EQ(values(eye(4, 6, on)), values(eye(4, 6, dtype)));
    if (dtype != DType::Bool) {
      EXPECT_EQ(values(arange(2, 90, 3, dtype, kCuda)), values(arange(2, 90, 3, dtype)));
      EXPECT_TRUE(test::all_close(values(linspace(-1, 7, 33, on)),
                                  values(linspace(-1, 7, 33, dtype)),
                                  test::backend_tolerance(dtype)));
    }
  }
  Tensor z = zeros({6, 8}, {DType::Int64, kCuda});
  fill_(z.slice(0, 1, 6, 2), 9);
  Tensor zc = zeros({6, 8}, DType::Int64);
  fill_(zc.slice(0, 1, 6, 2), 9);
  EXPECT_EQ(values(z), values(zc));
}

TEST(CudaRandom, SameStreamsAsTheCpu) {
  RCUDA_REQUIRE_CUDA();
  manual_seed(2024);
  const std::vector<double> cpu_u = values(rand({100003}));
  const std::vector<double> cpu_n = values(randn({100003}));
  const std::vector<double> cpu_i = values(randint(-50, 50, {1001}));
  const std::vector<double> cpu_d = values(randn({999}, DType::Float64));
  manual_seed(2024);
  EXPECT_EQ(values(rand({100003}, {DType::Float32, kCuda})), cpu_u);  // bit-identical
  EXPECT_TRUE(test::all_close(values(randn({100003}, {DType::Float32, kCuda})), cpu_n,
                              test::kNormalFloatTolerance));
  EXPECT_EQ(values(randint(-50, 50, {1001}, {DType::Int64, kCuda})), cpu_i);
  EXPECT_TRUE(test::all_close(values(randn({999}, {DType::Float64, kCuda})), cpu_d, 1e-13));
  // Strided in-place fill follows element order.
  Tensor base = zeros({6, 8}, {DType::Float32, kCuda});
  manual_seed(3);
  uniform_(base.slice(1, 0, 8, 2));
  const std::vector<double> got = values(base);
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 8; c += 2)
      EXPECT_EQ(static_cast<float>(got[r * 8 + c]),
                philox::uniform_float(3, 0, static_cast<uint64_t>(r * 4 + c / 2)));
}

// Poisson and Gamma draws: each element runs the CPU's sampler on the same Philox stream (Note
// [A Philox stream per element]), so the draws agree but where an acceptance test lands within
// an ulp of its bound, where CUDA's log, exp or lgamma differ from glibc's in the last place.
TEST(CudaRandom, PoissonAndGammaFollowTheCpuStreams) {
  RCUDA_REQUIRE_CUDA();
  const Tensor rates =
      test::tensor_of({0, 0.5, 4, 9.99, 10, 37, 1e4}, {7}, DType::Float64).expand({4000, 7});
  for (DType dtype : {DType::Float64, DType::Float32, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor r = to(rates, dtype), alpha = to(add(rates, 0.05), dtype);
    manual_seed(31);
    const std::vector<double> cpu_p = values(poisson(r)), cpu_g = values(standard_gamma(alpha));
    manual_seed(31);
    const std::vector<double> gpu_p = values(poisson(on_cuda(r)));
    const std::vector<double> gpu_g = values(standard_gamma(on_cuda(alpha)));
    size_t same_p = 0, same_g = 0;
    for (size_t i = 0; i < cpu_p.size(); ++i) {
      same_p += cpu_p[i] == gpu_p[i];
      same_g += std::fabs(cpu_g[i] - gpu_g[i]) <= 1e-6 * cpu_g[i];
    }
    EXPECT_GT(same_p, cpu_p.size() * 999 / 1000);
    EXPECT_GT(same_g, cpu_g.size() * 999 / 1000);
    // The gradient is a function of (alpha, x), but its central difference in alpha turns the
    // last-ulp differences of CUDA's lgamma and log into 1e-9 relative (it is good to 1e-8).
    const Tensor x = standard_gamma(alpha);
    EXPECT_TRUE(test::all_close(values(standard_gamma_grad(on_cuda(alpha), on_cuda(x))),
                                values(standard_gamma_grad(alpha, x)),
                                dtype == DType::Float64   ? 1e-7
                                : dtype == DType::Float32 ? 1e-6
                                                          : 1e-2));
  }
  EXPECT_THROW(poisson(on_cuda(test::tensor_of({1, -1}, {2}, DType::Float32))), ValueError);
}

}  // namespace
}  // namespace rcuda
