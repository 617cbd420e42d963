// The work of `rcuda stress` on the devices: sustained products with every result checked, device
// copies, host<->device copies, and NVML sampled throughout (docs/stress.md). Only the engine's
// public API: the phases run on any device, the CPU included (the tests run them there), and
// the host copies and TF32 on CUDA devices only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rcuda/core/device.h"
#include "rcuda/tensor/tensor.h"
#include "stress_plan.h"
#include "stress_report.h"

namespace rcuda::stress {

// What every phase is given: when to stop early, where progress lines go, and a hook the tests
// use to plant faults.
struct PhaseContext {
  std::function<bool()> should_stop;            // polled between products and rounds; empty: never
  std::function<void(const std::string&)> log;  // one line of progress; empty: none
  // Called with each timed product before it is compared with its set's first product (round
  // and set numbers from 0); a test writes a wrong element into it here. Empty: none.
  std::function<void(const Tensor& product, int64_t round, int64_t set)> after_product;
};

// Sustained products of one kind on `device` for plan.gemm_seconds: operand sets sized from
// `free_bytes` (size_operand_sets), each set's first product kept, then rounds of one product per
// set, timed on the device, each compared element by element with its set's first; the first
// products of plan.reference_sets sets checked on plan.reference_rows rows against the host's
// double-precision products while the rounds run. At least one round runs unless stopped.
// For GemmKind::TF32 the caller turns cuda::set_allow_tf32 on (it is process-wide).
GemmResult run_gemm_phase(Device device, GemmKind kind, const Plan& plan, uint64_t free_bytes,
                          const PhaseContext& context);

// Device-to-device copies (the engine's copy_) of a buffer of up to plan.device_copy_bytes for
// plan.device_copy_seconds, the copy compared with its source after each timed chunk; the
// rate counts bytes read and written.
CopyResult run_device_copy(Device device, const Plan& plan, uint64_t free_bytes,
                           const PhaseContext& context);

// Copies from pinned host memory to the CUDA device and back into pinned memory, half of
// plan.host_copy_seconds each; the round trip compared with the host's original at the end.
void run_host_copies(int device, const Plan& plan, uint64_t free_bytes, const PhaseContext& context,
                     CopyResult* to_device, CopyResult* to_host);

struct RunOptions {
  Plan plan;
  std::vector<int> devices;  // CUDA indices, all of them run each phase at once
  std::vector<GemmKind> kinds = {std::begin(kGemmKinds), std::end(kGemmKinds)};
  std::chrono::milliseconds sample_interval{200};
  PhaseContext context;
};

// Every phase on every device of options.devices (one thread per device, phases in step, so
// that the whole machine is loaded at once), NVML sampled throughout. The report's GPUs,
// seconds and interruption are filled; its baseline fields and figures are left to the caller.
Report run_stress(const RunOptions& options);

}  // namespace rcuda::stress
