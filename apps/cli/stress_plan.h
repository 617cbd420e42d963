// `rcuda stress`: what each level runs, for how long, on how much of the device's memory
// (docs/stress.md). Pure arithmetic, no device.
#pragma once

#include <cstdint>
#include <string>

#include "rcuda/core/dtype.h"

namespace rcuda::stress {

// The matrix products stressed, in the order they run. TF32 is float32 operands with
// cuda::set_allow_tf32(true); Float8 is scaled_mm of float8_e4m3fn operands into bfloat16.
enum class GemmKind { Float32, TF32, BFloat16, Float8 };
inline constexpr GemmKind kGemmKinds[] = {GemmKind::Float32, GemmKind::TF32, GemmKind::BFloat16,
                                          GemmKind::Float8};

const char* gemm_name(GemmKind kind);  // "float32", "tf32", "bfloat16", "float8_e4m3fn"
DType input_dtype(GemmKind kind);
DType output_dtype(GemmKind kind);
// Whether a GPU of compute capability major.minor has the kind's tensor cores: TF32 and bfloat16
// from 8.0 (Ampere), float8 from 8.9 (Ada, Hopper); float32 everywhere.
bool gemm_supported(GemmKind kind, int major, int minor);
// Why not, in words ("float8 needs compute capability 8.9 or newer; this GPU has 8.0").
std::string gemm_unsupported_reason(GemmKind kind, int major, int minor);

struct Plan {
  int level = 1;
  double gemm_seconds = 8;         // per product kind
  double device_copy_seconds = 3;  // device-to-device copies
  double host_copy_seconds = 4;    // host-to-device and device-to-host, half each
  int64_t matrix_size = 8192;      // n of the n x n x n products
  int reference_sets = 2;          // operand sets whose first product is checked on the host
  int reference_rows = 2;          // rows checked in each of those
  double memory_fraction = 0.9;    // of the device's free memory taken by the operand sets
  uint64_t device_copy_bytes = 1ULL << 30;  // each of the two device buffers (at most)
  uint64_t host_copy_bytes = 512ULL << 20;  // each of the two pinned host buffers (at most)
};

// Levels 1 (about 45 s), 2 (about 5 min) and 3 (about 22 min); ValueError for others.
Plan plan_for_level(int level);
// Seconds the plan's phases add up to with `gemm_kinds` product kinds (host copies only when
// `host_copies`: a CUDA device).
double planned_seconds(const Plan& plan, int gemm_kinds, bool host_copies);
// The plan with every phase scaled by one factor so that they add up to `seconds`.
Plan scaled_to(const Plan& plan, double seconds, int gemm_kinds, bool host_copies);

// How many operand sets of a product kind fit in the free memory. A set is the operands a [n,n]
// and b [n,n], the first product and the latest one; besides the sets, a product in flight and
// the comparison's mask (or the float32 values an operand is cast from, the larger) and
// kFixedReserveBytes for cuBLASLt's workspace and small tensors are kept free. Where not
// even one set of side n fits, n is halved (down to 256, or n itself when smaller; a multiple
// of 16 stays one, as fp8's kernels need) until one does; n = 0 when none fits.
struct OperandSizing {
  int64_t n = 0;
  int64_t sets = 0;
  uint64_t bytes_per_set = 0;
  uint64_t bytes_total = 0;  // sets and the fixed reserve
};
inline constexpr uint64_t kFixedReserveBytes = 256ULL << 20;
OperandSizing size_operand_sets(uint64_t free_bytes, double fraction, int64_t n, DType input,
                                DType output, int64_t max_sets = 512);

}  // namespace rcuda::stress
