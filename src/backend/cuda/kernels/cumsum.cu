// cumsum along any dim on the GPU, every dtype the CPU accepts. As the CPU backend
// (src/backend/cpu/softmax_cumsum.cpp), running sums are kept in AccumulateType (double for
// float32, float for the half types) and integers wrap as int64 (in uint64, defined behaviour).
//
// Note [Chunked scan]
// A line is cut into chunks so that a few long lines still fill the GPU: (1) each chunk's sum,
// (2) per line, an exclusive scan of its chunk sums (the carry into each chunk), (3) each
// chunk scanned again from its carry. Every step has a fixed order, so results are the same
// bits on every run (a decoupled look-back scan, as cub::DeviceScan, adds floating-point
// partials in an order that depends on timing). Memory sees two reads and one write when a line
// is cut, one read and one write when it is not.
// Lines along a stride-1 dim ("rows") are scanned by a block (cub::BlockScan over 2048-element
// tiles, loads and stores coalesced through cub::BlockExchange); other lines by one thread each,
// neighbouring lines in neighbouring threads so that warps read coalesced.
#include <cuda_runtime.h>

#include <cub/block/block_exchange.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/reduce.cuh"

namespace rcuda::cuda {
namespace {

using backend::convert;
using reduction::ceil_div;
using reduction::line_offsets;
using reduction::Lines;
using reduction::make_lines;

template <typename T>
using ScanType = std::conditional_t<std::is_integral_v<backend::AccumulateType<T>>, uint64_t,
                                    backend::AccumulateType<T>>;

template <typename T, typename Acc>
__device__ __forceinline__ T from_accumulator(Acc sum) {
  if constexpr (std::is_same_v<Acc, uint64_t>)
    return convert<T>(static_cast<int64_t>(sum));
  else
    return convert<T>(sum);
}

constexpr int kScanThreads = 256;
constexpr int kScanItems = 8;
constexpr int64_t kTile = kScanThreads * kScanItems;

// Feeds cub::BlockScan the running total of the earlier tiles of a chunk.
template <typename Acc>
struct Carry {
  Acc running;
  __device__ Acc operator()(Acc tile_total) {
    const Acc before = running;
    running = running + tile_total;
    return before;
  }
};

// Step (1) for rows: block (row, chunk) writes its chunk's sum to sums[chunk * rows + row].
template <typename T>
__global__ void __launch_bounds__(kScanThreads)
    row_chunk_sums_kernel(Lines l, const T* in, int64_t chunk_length, ScanType<T>* sums) {
  using Acc = ScanType<T>;
  using BlockReduce = cub::BlockReduce<Acc, kScanThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  const int64_t row = blockIdx.x, chunk = blockIdx.y;
  const int64_t begin = chunk * chunk_length;
  const int64_t end = begin + chunk_length < l.length ? begin + chunk_length : l.length;
  int64_t in_offset, out_offset;
  line_offsets(l, row, in_offset, out_offset);
  const T* x = in + in_offset;
  Acc sum = Acc(0);
  for (int64_t k = begin + threadIdx.x; k < end; k += kScanThreads) sum += convert<Acc>(x[k]);
  sum = BlockReduce(temp).Sum(sum);
  if (threadIdx.x == 0) sums[chunk * l.count + row] = sum;
}

// Step (3) for rows (or the whole scan when a row is one chunk): block (row, chunk).
template <typename T>
__global__ void __launch_bounds__(kScanThreads)
    scan_rows_kernel(Lines l, const T* in, T* out, int64_t chunk_length,
                     const ScanType<T>* carries) {
  using Acc = ScanType<T>;
  using BlockScan = cub::BlockScan<Acc, kScanThreads>;
  using Exchange = cub::BlockExchange<Acc, kScanThreads, kScanItems>;
  __shared__ union {
    typename BlockScan::TempStorage scan;
    typename Exchange::TempStorage exchange;
  } temp;
  const int64_t row = blockIdx.x, chunk = blockIdx.y;
  const int64_t begin = chunk * chunk_length;
  const int64_t end = begin + chunk_length < l.length ? begin + chunk_length : l.length;
  int64_t in_offset, out_offset;
  line_offsets(l, row, in_offset, out_offset);
  const T* x = in + in_offset;
  T* y = out + out_offset;
  Carry<Acc> carry{carries ? carries[chunk * l.count + row] : Acc(0)};
  for (int64_t start = begin; start < end; start += kTile) {
    const int64_t valid = end - start < kTile ? end - start : kTile;
    Acc items[kScanItems];
#pragma unroll
    for (int i = 0; i < kScanItems; ++i) {  // striped: coalesced
      const int64_t k = threadIdx.x + i * kScanThreads;
      items[i] = k < valid ? convert<Acc>(x[start + k]) : Acc(0);
    }
    Exchange(temp.exchange).StripedToBlocked(items);
    __syncthreads();
    BlockScan(temp.scan).InclusiveSum(items, items, carry);
    __syncthreads();
    Exchange(temp.exchange).BlockedToStriped(items);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kScanItems; ++i) {
      const int64_t k = threadIdx.x + i * kScanThreads;
      if (k < valid) y[start + k] = from_accumulator<T>(items[i]);
    }
  }
}

// Steps (1) (kSumsOnly) and (3) for lines of any stride: a thread per (line, chunk).
template <typename T, bool kSumsOnly>
__global__ void scan_lines_kernel(Lines l, const T* in, T* out, int64_t chunk_length,
                                  ScanType<T>* carries) {
  using Acc = ScanType<T>;
  const int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (line >= l.count) return;
  const int64_t chunk = blockIdx.y, begin = chunk * chunk_length;
  const int64_t end = begin + chunk_length < l.length ? begin + chunk_length : l.length;
  int64_t in_offset, out_offset;
  line_offsets(l, line, in_offset, out_offset);
  const T* x = in + in_offset;
  T* y = out + out_offset;
  const int64_t is = l.in_stride, os = l.out_stride;
  Acc running = !kSumsOnly && carries ? carries[chunk * l.count + line] : Acc(0);
  int64_t k = begin;
  for (; k + 3 < end; k += 4) {
    Acc v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = convert<Acc>(x[(k + u) * is]);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      running += v[u];
      if constexpr (!kSumsOnly) y[(k + u) * os] = from_accumulator<T>(running);
    }
  }
  for (; k < end; ++k) {
    running += convert<Acc>(x[k * is]);
    if constexpr (!kSumsOnly) y[k * os] = from_accumulator<T>(running);
  }
  if constexpr (kSumsOnly) carries[chunk * l.count + line] = running;
}

// Step (2): sums[chunk * lines + line] becomes the total of the line's earlier chunks.
template <typename Acc>
__global__ void exclusive_chunk_scan_kernel(Acc* sums, int64_t lines, int64_t chunks) {
  const int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (line >= lines) return;
  Acc running = Acc(0);
  for (int64_t c = 0; c < chunks; ++c) {
    const Acc v = sums[c * lines + line];
    sums[c * lines + line] = running;
    running += v;
  }
}

template <typename T>
void cumsum_typed(const Tensor& out, const Tensor& in, int64_t dim) {
  using Acc = ScanType<T>;
  const Lines l = make_lines(out, in, dim);
  if (l.count == 0 || l.length == 0) return;
  const int device = in.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream(device);
  const int64_t sms = multiprocessors(device);
  const int64_t target_blocks = sms * 8;  // 256-thread blocks resident at once
  const T* x = in.data<T>();
  T* y = out.data<T>();
  const bool rows = l.in_stride == 1 && l.out_stride == 1 && l.length >= 64;

  int64_t blocks_x, threads_x, chunks = 1;
  if (rows) {
    threads_x = kScanThreads;
    blocks_x = l.count;
    const int64_t tiles = ceil_div(l.length, kTile);
    if (blocks_x < target_blocks) chunks = std::min(tiles, ceil_div(target_blocks, blocks_x));
  } else {
    threads_x = 256;
    while (threads_x > 32 && ceil_div(l.count, threads_x) < 2 * sms) threads_x /= 2;
    blocks_x = ceil_div(l.count, threads_x);
    if (blocks_x < target_blocks)
      chunks = std::max<int64_t>(1, std::min(ceil_div(target_blocks, blocks_x), l.length / 64));
  }
  chunks = std::min<int64_t>(chunks, 65535);
  int64_t chunk_length = ceil_div(l.length, chunks);
  if (rows) chunk_length = ceil_div(chunk_length, kTile) * kTile;
  chunks = ceil_div(l.length, chunk_length);
  RCUDA_CHECK(blocks_x <= 0x7fffffff, ShapeError, "cumsum: ", l.count, " lines are too many");
  const dim3 grid(static_cast<unsigned>(blocks_x), static_cast<unsigned>(chunks));

  Tensor workspace;
  Acc* carries = nullptr;
  if (chunks > 1) {
    workspace = Tensor::empty({chunks * l.count * static_cast<int64_t>(sizeof(Acc))}, DType::UInt8,
                              in.device());
    carries = static_cast<Acc*>(workspace.data_ptr());
    if (rows)
      row_chunk_sums_kernel<T><<<grid, kScanThreads, 0, stream>>>(l, x, chunk_length, carries);
    else
      scan_lines_kernel<T, true>
          <<<grid, static_cast<unsigned>(threads_x), 0, stream>>>(l, x, y, chunk_length, carries);
    RCUDA_CUDA_CHECK_LAUNCH();
    exclusive_chunk_scan_kernel<Acc>
        <<<static_cast<unsigned>(ceil_div(l.count, 256)), 256, 0, stream>>>(carries, l.count,
                                                                            chunks);
    RCUDA_CUDA_CHECK_LAUNCH();
  }
  if (rows)
    scan_rows_kernel<T><<<grid, kScanThreads, 0, stream>>>(l, x, y, chunk_length, carries);
  else
    scan_lines_kernel<T, false>
        <<<grid, static_cast<unsigned>(threads_x), 0, stream>>>(l, x, y, chunk_length, carries);
  RCUDA_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaBackend::cumsum(const Tensor& out, const Tensor& in, int64_t dim) {
  backend::dispatch_all(in.dtype(), [&](auto tag) { cumsum_typed<decltype(tag)>(out, in, dim); });
}

}  // namespace rcuda::cuda
