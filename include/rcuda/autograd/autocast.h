// Automatic mixed precision (torch.autocast): inside an AutocastGuard for a device type, the
// ops of a policy table (src/autograd/autocast.cpp, docs/mixed-precision.md) run with their
// floating inputs cast: matrix products, linear layers, convolutions and recurrent layers to the
// guard's low-precision dtype (float16 or bfloat16; PyTorch's CUDA recurrent layers take float16
// in either), and on CUDA softmax, log_softmax, exp, log,
// pow, sum, the norms and the losses to float32; other ops run as they are, and binary ops on
// mixed inputs promote to the wider dtype as everywhere. The casts are recorded like any to(), so
// gradients reach each parameter in its own dtype. Within the outermost region, the cast of a
// leaf that requires grad (a parameter) is made once per dtype and reused.
//
//   {
//     rcuda::AutocastGuard autocast(rcuda::DeviceType::CUDA, rcuda::DType::BFloat16);
//     loss = rcuda::nn::cross_entropy(model(x), y);   // linears in bf16, the loss in float32
//   }
//   rcuda::autograd::backward(loss);                 // outside the region, as PyTorch advises
#pragma once

#include "rcuda/core/device.h"
#include "rcuda/core/dtype.h"
#include "rcuda/core/op.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda {

// Enables (or, with enabled = false, disables) autocast for one device type on this thread
// until destroyed, then restores what was there. dtype must be float16 or bfloat16 (a
// ValueError otherwise); CUDA and CPU are the device types. Leaving the outermost enabled
// region drops the cached casts.
class AutocastGuard {
 public:
  AutocastGuard(DeviceType device_type, DType dtype, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DeviceType device_type_;
  bool was_enabled_;
  DType previous_dtype_;
  bool counted_;  // an enabled guard: the last one to end drops the cast cache
};

// Whether autocast is on for the device type on this thread, and its dtype there (float16 for
// CUDA and bfloat16 for the CPU when no guard set one, as PyTorch's defaults).
bool is_autocast_enabled(DeviceType device_type);
DType autocast_dtype(DeviceType device_type);
// Drops the cached casts of parameters (done when the outermost region ends).
void clear_autocast_cache();

}  // namespace rcuda

// How an entry point applies autocast: through its OpCall (rcuda/autograd/funnel.h, Note [The
// funnel]), which holds the op's Region. A Region is true when autocast is on for the device type
// of its tensor and the table has a policy for the op there; while it lives, autocast is off on
// this thread, so the call it makes with the cast inputs (and whatever that call runs inside) sees
// them as they are.
namespace rcuda::autocast {

// What an op does with its floating inputs under autocast.
enum class Policy : uint8_t {
  AsIs,            // not in the table: runs as it is
  LowerPrecision,  // cast to the region's float16 or bfloat16
  Float32,         // cast to float32 (float64 inputs stay float64)
  Float16,         // cast to float16 whatever the region's dtype (PyTorch's CUDA recurrent layers)
};

// The op's policy on the device type (the table in autocast_policy.cpp, indexed by OpId).
Policy policy(OpId op, DeviceType device_type);

// Any autocast region on this thread: one load, the entry points' fast path.
bool any_enabled();

class Region {
 public:
  // `like` is the op's first tensor argument: its device type picks the region.
  Region(OpId op, const Tensor& like);
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  explicit operator bool() const { return policy_ != Policy::AsIs; }
  // t as the policy casts it: undefined, non-floating and float64 tensors, tensors of another
  // device type and tensors already in the target dtype pass through.
  Tensor operator()(const Tensor& t) const;

 private:
  Policy policy_ = Policy::AsIs;
  DeviceType device_type_ = DeviceType::CPU;
  DType target_ = DType::Float32;
  bool suspended_[kNumDeviceTypes] = {};
};

}  // namespace rcuda::autocast
