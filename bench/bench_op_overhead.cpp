// Where a tiny op's host time goes, on the CPU and (when there is one) the GPU: the pieces of
// `add(a, b)` on one-element tensors timed alone, from allocation and the backend primitive up
// to the public op with autograd recording. Prints `name: value` lines in microseconds per op.
// RCUDA_RUNTIME_LAUNCH=1 launches through the runtime instead of the driver (Note [Launching
// through the driver] in src/backend/cuda/kernel_launch.h), to compare the two in one call.
//
// The interleaved rows (CUDA builds) set each tiny op beside the machine's floor: the launch of
// an empty kernel through the driver, with no rcuda code. Each round times a burst of 200 calls
// of the floor and of every op in turn; a row is the median burst over 25 rounds, and its
// above_floor row the median of its difference from the floor's burst of the same round. A
// virtual machine's launch cost drifts by a microsecond between runs, more than the host work
// rcuda adds; the difference within a round keeps the drift out of what rcuda adds.
//   bench_op_overhead [--reps N] [--only ROW]     (--only: that row alone, e.g. under a profiler;
//                                                  --only interleaved: the interleaved rows)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#if defined(RCUDA_BENCH_DRIVER)
#include <cuda.h>
#include <cuda_runtime.h>
#endif

#include "rcuda/backend/cuda.h"
#include "rcuda/rcuda.h"

namespace {

using namespace rcuda;

int reps = 20000;
std::string only;  // --only: the one row to time, with or without its "_us"

void log(const std::string& name, double value) {
  std::printf("%s: %.3f\n", name.c_str(), value);
  std::fflush(stdout);
}

using Timer = double (*)(const Device&, const std::function<void()>&);

// Host microseconds per call over `reps` calls, after a warm-up; on CUDA the final
// synchronisation is inside the timed region, so queued work is paid for too.
double per_call_us(const Device& device, const std::function<void()>& f) {
  for (int i = 0; i < 200; ++i) f();
  if (device.is_cuda()) cuda::synchronize(device.index);
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    const auto t = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) f();
    if (device.is_cuda()) cuda::synchronize(device.index);
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() /
        reps;
    best = std::min(best, us);
  }
  return best;
}

// Host microseconds per call with nothing waited for: bursts of 200 calls, short enough that
// the GPU's launch queue never fills and blocks the host, each synchronised after the clock
// stops; the median burst. On the CPU the same as per_call_us.
double enqueue_us(const Device& device, const std::function<void()>& f) {
  if (!device.is_cuda()) return per_call_us(device, f);
  for (int i = 0; i < 200; ++i) f();
  cuda::synchronize(device.index);
  std::vector<double> bursts;
  for (int round = 0; round < 25; ++round) {
    const auto t = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) f();
    bursts.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() /
        200);
    cuda::synchronize(device.index);
  }
  std::sort(bursts.begin(), bursts.end());
  return bursts[bursts.size() / 2];
}

// Times f with `timer` and prints the row, unless --only names another row.
void row(const std::string& name, Timer timer, const Device& device,
         const std::function<void()>& f) {
  if (!only.empty() && only != name && only + "_us" != name) return;
  log(name, timer(device, f));
}

#if defined(RCUDA_BENCH_DRIVER)
// An empty kernel launched with cuLaunchKernel, as rcuda launches its kernels, on a non-blocking
// stream of its own, as rcuda's. Loaded from PTX at run time, so that this C++ benchmark needs
// no CUDA compiler; the driver's JIT compiles it for the GPU once.
constexpr char kEmptyKernelPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry empty()
{
  ret;
}
)";

void check_driver(CUresult status, const char* call) {
  if (status == CUDA_SUCCESS) return;
  std::fprintf(stderr, "%s failed: CUresult %d\n", call, static_cast<int>(status));
  std::exit(1);
}

// A driver function through the runtime, as rcuda finds cuLaunchKernel (no link to libcuda, so
// that the benchmark still runs its CPU rows where no driver is installed).
template <typename F>
F driver_function(const char* name) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &entry, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    std::fprintf(stderr, "no driver entry point for %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(entry);
}
#define RCUDA_DRIVER(name) driver_function<decltype(&name)>(#name)

class EmptyLaunch {
 public:
  // Needs the context rcuda made current (after its first CUDA op on this thread).
  EmptyLaunch() : launch_(RCUDA_DRIVER(cuLaunchKernel)) {
    check_driver(RCUDA_DRIVER(cuModuleLoadData)(&module_, kEmptyKernelPtx), "cuModuleLoadData");
    check_driver(RCUDA_DRIVER(cuModuleGetFunction)(&function_, module_, "empty"),
                 "cuModuleGetFunction");
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess) {
      std::fprintf(stderr, "cudaStreamCreateWithFlags failed\n");
      std::exit(1);
    }
  }
  ~EmptyLaunch() { cudaStreamDestroy(stream_); }  // the module goes with the context
  EmptyLaunch(const EmptyLaunch&) = delete;
  EmptyLaunch& operator=(const EmptyLaunch&) = delete;
  void operator()() const {
    check_driver(launch_(function_, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(stream_),
                         nullptr, nullptr),
                 "cuLaunchKernel");
  }
  void synchronize() const { cudaStreamSynchronize(stream_); }

 private:
  decltype(&cuLaunchKernel) launch_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// The interleaved rows (see the top of this file): rows[0] is the floor.
void interleaved(const Device& device, const EmptyLaunch& floor,
                 const std::vector<std::pair<std::string, std::function<void()>>>& rows) {
  constexpr int kRounds = 25, kBurst = 200;
  const auto settle = [&] {
    cuda::synchronize(device.index);
    floor.synchronize();
  };
  for (const auto& [name, f] : rows)
    for (int i = 0; i < kBurst; ++i) f();
  settle();
  std::vector<std::vector<double>> bursts(rows.size());
  for (int round = 0; round < kRounds; ++round)
    for (size_t r = 0; r < rows.size(); ++r) {
      const auto t = std::chrono::steady_clock::now();
      for (int i = 0; i < kBurst; ++i) rows[r].second();
      bursts[r].push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() /
          kBurst);
      settle();
    }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (size_t r = 0; r < rows.size(); ++r) {
    log("interleaved_" + rows[r].first + "_cuda_us", median(bursts[r]));
    if (r == 0) continue;
    std::vector<double> above(kRounds);
    for (int round = 0; round < kRounds; ++round)
      above[round] = bursts[r][round] - bursts[0][round];
    log("above_floor_" + rows[r].first + "_cuda_us", median(above));
  }
}
#endif

void run(const Device& device, const std::string& tag) {
  const TensorOptions f32(DType::Float32, device);
  const Tensor a = ones({1}, f32), b = ones({1}, f32), out = empty({1}, f32);
  const Tensor out_0d = empty({1}, f32);  // sum's output in keepdim form
  Tensor w = ones({1}, f32);
  w.requires_grad_();
  Backend& backend = backend_for(device);
  row("empty_" + tag + "_us", per_call_us, device,
      [&] { Tensor::empty({1}, DType::Float32, device); });
  row("fill_preallocated_" + tag + "_us", per_call_us, device, [&] { ops::fill_(out, 1.0); });
  row("backend_binary_preallocated_" + tag + "_us", per_call_us, device,
      [&] { backend.binary(BinaryOp::Add, out, a, b); });
  row("ops_add_" + tag + "_us", per_call_us, device, [&] { ops::add(a, b); });
  row("add_" + tag + "_us", per_call_us, device, [&] { add(a, b); });
  row("add_recording_" + tag + "_us", per_call_us, device, [&] { add(a, w); });
  row("mul_recording_" + tag + "_us", per_call_us, device, [&] { mul(a, w); });
  row("mul_number_" + tag + "_us", per_call_us, device, [&] { mul(a, 2.0); });
  row("mul_number_recording_" + tag + "_us", per_call_us, device, [&] { mul(w, 2.0); });
  row("number_minus_tensor_recording_" + tag + "_us", per_call_us, device,
      [&] { binary_op("sub", Scalar(1.0), w); });
  row("sum_recording_" + tag + "_us", per_call_us, device, [&] { sum(w); });
  row("relu_recording_" + tag + "_us", per_call_us, device, [&] { relu(w); });
  row("matmul_recording_" + tag + "_us", per_call_us, device, [&] {
    matmul(a.view({1, 1}), w.view({1, 1}));
  });
  if (device.is_cuda()) {
    row("host_only_fill_preallocated_" + tag + "_us", enqueue_us, device,
        [&] { ops::fill_(out, 1.0); });
    row("host_only_ops_add_" + tag + "_us", enqueue_us, device, [&] { ops::add(a, b); });
    row("host_only_add_recording_" + tag + "_us", enqueue_us, device, [&] { add(a, w); });
    row("host_only_mul_number_" + tag + "_us", enqueue_us, device, [&] { mul(a, 2.0); });
    row("host_only_mul_number_recording_" + tag + "_us", enqueue_us, device, [&] { mul(w, 2.0); });
    row("host_only_relu_recording_" + tag + "_us", enqueue_us, device, [&] { relu(w); });
    row("host_only_sum_recording_" + tag + "_us", enqueue_us, device, [&] { sum(w); });
  }
  // Forward and backward of a two-op graph: recording, the engine, the accumulation.
  row("mul_sum_backward_" + tag + "_us", per_call_us, device,
      [&] { autograd::backward(sum(mul(a, w))); });
#if defined(RCUDA_BENCH_DRIVER)
  if (device.is_cuda() && (only.empty() || only == "interleaved")) {
    const EmptyLaunch floor;
    interleaved(device, floor,
                {{"empty_kernel_launch", [&] { floor(); }},
                 {"fill_preallocated", [&] { ops::fill_(out, 1.0); }},
                 {"backend_add_preallocated", [&] { backend.binary(BinaryOp::Add, out, a, b); }},
                 {"backend_sum_preallocated", [&] { backend.reduce(ReduceOp::Sum, out_0d, a, 0); }},
                 {"add", [&] { add(a, b); }},
                 {"add_recording", [&] { add(a, w); }},
                 {"mul_recording", [&] { mul(a, w); }},
                 {"mul_number_recording", [&] { mul(w, 2.0); }},
                 {"relu_recording", [&] { relu(w); }},
                 {"sum_recording", [&] { sum(w); }}});
  }
#endif
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--reps") == 0)
      reps = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--only") == 0)
      only = argv[i + 1];
  run(Device(DeviceType::CPU), "cpu");
  if (cuda::device_count() > 0) run(Device(DeviceType::CUDA, 0), "cuda");
  return 0;
}
