// What the backends share: the collectives as values, the argument checks every backend makes
// before touching memory, and the fingerprint that ranks exchange to agree on each call.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "rcuda/dist/process_group.h"

namespace rcuda::dist {

enum class Collective : uint8_t { AllReduce, Broadcast, AllGather, ReduceScatter, Barrier };
constexpr int kNumCollectives = 5;
const char* collective_name(Collective c);  // "all_reduce", ...

// Note [Collective fingerprints]
// Before each collective (when check_shapes is on) every rank sends every other rank a few
// integers describing its call: which collective, its sequence number in the group, the reduce
// op, the root, the dtype and the shapes. Each rank then compares all of them and throws the
// same DistError when they differ, before any data moves, so a mismatched call is an error on
// every rank and never a read or write past a buffer. The exchange is point to point (not one
// allgather) so that a rank that never sends is known by name: "rank 1 did not answer".
struct Fingerprint {
  static constexpr int kMaxDims = 6;
  // collective, sequence, op, root, dtype, ndim, shape hash, out_numel, dims...
  static constexpr int kWords = 8 + kMaxDims;
  std::array<int64_t, kWords> words{};
};
// `shape` and `dtype` describe the input (the tensor for all_reduce and broadcast); out_numel
// the output's size (all_gather, reduce_scatter), or -1.
Fingerprint make_fingerprint(Collective c, int64_t sequence, ReduceOp op, int root, DType dtype,
                             const Shape& shape, int64_t out_numel);
// "" when every rank's fingerprint equals the first's, else a message naming what differs and
// which ranks hold which value ("ranks disagree on the dtype: rank 0, 2: float32; rank 1: int64").
std::string compare_fingerprints(const std::vector<Fingerprint>& by_rank);

// "all_reduce #7": the collective and its sequence number in the group, as errors name it.
std::string call_name(Collective c, int64_t sequence);
// "5 s", "0.25 s"
std::string seconds_text(std::chrono::milliseconds ms);

// ValueError / DeviceError / DTypeError naming the collective and the argument: `t` must be a
// defined, contiguous tensor on `device_type`.
void check_tensor(Collective c, const char* argument, const Tensor& t, DeviceType device_type,
                  Backend backend);
// DTypeError unless `op` can reduce `dtype`: Avg needs a floating dtype; complex and float8
// values are not reduced (broadcast and all_gather move any dtype).
void check_reducible(Collective c, ReduceOp op, DType dtype);
// ShapeError unless out [size * n, ...] and in [n, ...] fit together (all_gather; reduce_scatter
// with the roles swapped).
void check_gather_shapes(Collective c, const Tensor& big, const char* big_name, const Tensor& small,
                         const char* small_name, int size);
// IndexError unless 0 <= root < size.
void check_root(Collective c, int root, int size);

}  // namespace rcuda::dist
