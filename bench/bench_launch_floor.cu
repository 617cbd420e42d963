// The host cost of the CUDA runtime calls that one eager op is made of, each alone, with no
// rcuda code around it: the floor under bench_op_overhead's figures on this machine. Each
// figure is the median over 25 bursts of 200 calls, host clock only, the stream synchronised
// after each burst (short enough that the launch queue never fills and blocks the host). The
// empty launch is timed through each of the runtime's entry points and the driver's.
//   bench_launch_floor
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace {

#define CHECK(call)                                                                \
  do {                                                                             \
    const cudaError_t status_ = (call);                                            \
    if (status_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(status_)); \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

#define CHECK_DRIVER(call)                                     \
  do {                                                         \
    const CUresult status_ = (call);                           \
    if (status_ != CUDA_SUCCESS) {                             \
      std::fprintf(stderr, "%s failed: %d\n", #call, status_); \
      std::exit(1);                                            \
    }                                                          \
  } while (0)

__global__ void empty_kernel() {}

// About the size of the elementwise engine's strided arguments for three operands.
struct Big {
  long long words[48];
};
__global__ void big_argument_kernel(Big b, float* out) {
  if (threadIdx.x == 0 && b.words[0] == 12345) out[0] = 1.0f;
}

// About the size of the CUDA reduction engine's layout (reduction::Layout, 10 dims).
struct Layout {
  long long words[78];
};
__global__ void layout_argument_kernel(Layout l, float* out) {
  extern __shared__ float scratch[];
  if (threadIdx.x == 0 && l.words[0] == 12345) out[0] = scratch[0];
}

__global__ void add_kernel(const float* a, const float* b, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

double burst_us(cudaStream_t stream, const std::function<void()>& f) {
  for (int i = 0; i < 200; ++i) f();
  CHECK(cudaStreamSynchronize(stream));
  std::vector<double> bursts;
  for (int round = 0; round < 25; ++round) {
    const auto t = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) f();
    bursts.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() /
        200);
    CHECK(cudaStreamSynchronize(stream));
  }
  std::sort(bursts.begin(), bursts.end());
  return bursts[bursts.size() / 2];
}

void log(const char* name, double us) { std::printf("%s: %.3f\n", name, us); }

}  // namespace

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA device\n");
    return 1;
  }
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *a, *b, *out;
  CHECK(cudaMalloc(&a, 256));
  CHECK(cudaMalloc(&b, 256));
  CHECK(cudaMalloc(&out, 256));
  Big big{};
  int device = -1;

  log("launch_empty_us", burst_us(stream, [&] { empty_kernel<<<1, 1, 0, stream>>>(); }));
  log("launch_empty_checked_us", burst_us(stream, [&] {
        empty_kernel<<<1, 1, 0, stream>>>();
        CHECK(cudaGetLastError());
      }));
  log("launch_add_checked_us", burst_us(stream, [&] {
        add_kernel<<<1, 256, 0, stream>>>(a, b, out, 1);
        CHECK(cudaGetLastError());
      }));
  log("launch_384_byte_argument_us", burst_us(stream, [&] {
        big_argument_kernel<<<1, 32, 0, stream>>>(big, out);
        CHECK(cudaGetLastError());
      }));
  // The same launches through the runtime's explicit entry points and through the driver's
  // cuLaunchKernel with the kernel's CUfunction looked up once: what the runtime's own work
  // (finding the function for a host stub, its per-thread state) adds to the driver's.
  log("launch_empty_cudaLaunchKernel_us", burst_us(stream, [&] {
        CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(empty_kernel), dim3(1), dim3(1),
                               nullptr, 0, stream));
      }));
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(1);
  config.stream = stream;
  log("launch_empty_cudaLaunchKernelEx_us",
      burst_us(stream, [&] { CHECK(cudaLaunchKernelEx(&config, empty_kernel)); }));
  cudaFunction_t empty_function = nullptr, add_function = nullptr;
  CHECK(cudaGetFuncBySymbol(&empty_function, reinterpret_cast<const void*>(empty_kernel)));
  CHECK(cudaGetFuncBySymbol(&add_function, reinterpret_cast<const void*>(add_kernel)));
  const CUstream driver_stream = reinterpret_cast<CUstream>(stream);
  log("launch_empty_cuLaunchKernel_us", burst_us(stream, [&] {
        CHECK_DRIVER(cuLaunchKernel(reinterpret_cast<CUfunction>(empty_function), 1, 1, 1, 1, 1, 1,
                                    0, driver_stream, nullptr, nullptr));
      }));
  // The same with the context-independent CUkernel (cudaGetKernel), which the driver resolves to
  // the context's function at each launch.
  cudaKernel_t empty_handle = nullptr;
  CHECK(cudaGetKernel(&empty_handle, reinterpret_cast<const void*>(empty_kernel)));
  log("launch_empty_cuLaunchKernel_cukernel_us", burst_us(stream, [&] {
        CHECK_DRIVER(cuLaunchKernel(reinterpret_cast<CUfunction>(empty_handle), 1, 1, 1, 1, 1, 1, 0,
                                    driver_stream, nullptr, nullptr));
      }));
  // A reduction's launch: a 624-byte argument and dynamic shared memory.
  cudaFunction_t layout_function = nullptr;
  CHECK(
      cudaGetFuncBySymbol(&layout_function, reinterpret_cast<const void*>(layout_argument_kernel)));
  Layout layout{};
  void* layout_arguments[] = {&layout, &out};
  log("launch_624_byte_argument_shared_cuLaunchKernel_us", burst_us(stream, [&] {
        CHECK_DRIVER(cuLaunchKernel(reinterpret_cast<CUfunction>(layout_function), 1, 1, 1, 32, 1,
                                    1, 128, driver_stream, layout_arguments, nullptr));
      }));
  int one = 1;
  void* add_arguments[] = {&a, &b, &out, &one};
  log("launch_add_cuLaunchKernel_us", burst_us(stream, [&] {
        CHECK_DRIVER(cuLaunchKernel(reinterpret_cast<CUfunction>(add_function), 1, 1, 1, 256, 1, 1,
                                    0, driver_stream, add_arguments, nullptr));
      }));
  log("launch_empty_legacy_stream_us", burst_us(nullptr, [&] { empty_kernel<<<1, 1>>>(); }));
  log("get_device_twice_us", burst_us(stream, [&] {
        CHECK(cudaGetDevice(&device));
        CHECK(cudaGetDevice(&device));
      }));
  cudaMemPool_t pool;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  log("pool_malloc_free_async_us", burst_us(stream, [&] {
        void* p = nullptr;
        CHECK(cudaMallocFromPoolAsync(&p, 256, pool, stream));
        CHECK(cudaFreeAsync(p, stream));
      }));
  log("pool_malloc_launch_free_us", burst_us(stream, [&] {
        float* p = nullptr;
        CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&p), 256, pool, stream));
        add_kernel<<<1, 256, 0, stream>>>(a, b, p, 1);
        CHECK(cudaGetLastError());
        CHECK(cudaFreeAsync(p, stream));
      }));
  return 0;
}
