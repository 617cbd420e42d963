// Levels, their durations and the sizing of operand sets (stress_plan.h).
#include "stress_plan.h"

#include <algorithm>

#include "rcuda/core/error.h"

namespace rcuda::stress {

const char* gemm_name(GemmKind kind) {
  switch (kind) {
    case GemmKind::Float32:
      return "float32";
    case GemmKind::TF32:
      return "tf32";
    case GemmKind::BFloat16:
      return "bfloat16";
    case GemmKind::Float8:
      return "float8_e4m3fn";
  }
  return "?";
}

DType input_dtype(GemmKind kind) {
  switch (kind) {
    case GemmKind::Float32:
    case GemmKind::TF32:
      return DType::Float32;
    case GemmKind::BFloat16:
      return DType::BFloat16;
    case GemmKind::Float8:
      return DType::Float8E4M3FN;
  }
  return DType::Float32;
}

DType output_dtype(GemmKind kind) {
  return kind == GemmKind::Float32 || kind == GemmKind::TF32 ? DType::Float32 : DType::BFloat16;
}

namespace {
int needed_capability(GemmKind kind) {
  switch (kind) {
    case GemmKind::Float32:
      return 0;
    case GemmKind::TF32:
    case GemmKind::BFloat16:
      return 80;
    case GemmKind::Float8:
      return 89;
  }
  return 0;
}
}  // namespace

bool gemm_supported(GemmKind kind, int major, int minor) {
  return major * 10 + minor >= needed_capability(kind);
}

std::string gemm_unsupported_reason(GemmKind kind, int major, int minor) {
  const int need = needed_capability(kind);
  return std::string(gemm_name(kind)) + " needs compute capability " + std::to_string(need / 10) +
         "." + std::to_string(need % 10) + " or newer; this GPU has " + std::to_string(major) +
         "." + std::to_string(minor);
}

Plan plan_for_level(int level) {
  Plan p;
  p.level = level;
  switch (level) {
    case 1:
      return p;  // the defaults: 4 x 8 s of products, 3 s + 4 s of copies
    case 2:
      p.gemm_seconds = 60;
      p.device_copy_seconds = 20;
      p.host_copy_seconds = 20;
      p.reference_sets = 4;
      p.reference_rows = 4;
      p.device_copy_bytes = 2ULL << 30;
      p.host_copy_bytes = 1ULL << 30;
      return p;
    case 3:
      p.gemm_seconds = 300;
      p.device_copy_seconds = 60;
      p.host_copy_seconds = 60;
      p.matrix_size = 16384;
      p.reference_sets = 8;
      p.reference_rows = 4;
      p.device_copy_bytes = 4ULL << 30;
      p.host_copy_bytes = 1ULL << 30;
      return p;
    default:
      throw ValueError("stress: --level must be 1, 2 or 3, got " + std::to_string(level));
  }
}

double planned_seconds(const Plan& plan, int gemm_kinds, bool host_copies) {
  return plan.gemm_seconds * gemm_kinds + plan.device_copy_seconds +
         (host_copies ? plan.host_copy_seconds : 0.0);
}

Plan scaled_to(const Plan& plan, double seconds, int gemm_kinds, bool host_copies) {
  RCUDA_CHECK(seconds > 0, ValueError, "stress: --seconds must be positive, got ", seconds);
  const double total = planned_seconds(plan, gemm_kinds, host_copies);
  Plan p = plan;
  if (total <= 0) return p;
  const double f = seconds / total;
  p.gemm_seconds *= f;
  p.device_copy_seconds *= f;
  p.host_copy_seconds *= f;
  return p;
}

OperandSizing size_operand_sets(uint64_t free_bytes, double fraction, int64_t n, DType input,
                                DType output, int64_t max_sets) {
  const double budget = static_cast<double>(free_bytes) * std::clamp(fraction, 0.0, 1.0);
  const uint64_t in = element_size(input), out = element_size(output);
  for (; n > 0; n = n > 256 ? std::max<int64_t>(n / 2 / 16 * 16, 256) : 0) {
    const uint64_t elements = static_cast<uint64_t>(n) * static_cast<uint64_t>(n);
    // a, b, the first product, the latest product
    const uint64_t per_set = elements * (2 * in + 2 * out);
    // while sets are made, the float32 values an operand is cast from; in the rounds, a product
    // in flight (allocated before the one it replaces is freed) and the comparison's bool mask;
    // cuBLASLt's workspace and small tensors
    const uint64_t fixed = elements * std::max<uint64_t>(out + 1, 4) + kFixedReserveBytes;
    if (budget < static_cast<double>(fixed + per_set)) continue;
    const auto fit =
        static_cast<int64_t>((budget - static_cast<double>(fixed)) / static_cast<double>(per_set));
    OperandSizing s;
    s.n = n;
    s.sets = std::clamp<int64_t>(fit, 1, std::max<int64_t>(max_sets, 1));
    s.bytes_per_set = per_set;
    s.bytes_total = fixed + per_set * static_cast<uint64_t>(s.sets);
    return s;
  }
  return {};
}

}  // namespace rcuda::stress
