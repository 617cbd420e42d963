// Autocast: the thread's regions, the policy table and the cache of parameter casts.
//
// Note [Autocast at the entry points]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch puts autocast in its dispatcher, between the Python call and autograd. rcuda has no
// dispatcher: each public entry point opens an OpCall (Note [The funnel] in
// rcuda/autograd/funnel.h), whose autocast::Region reads the op's policy from the table in
// autocast_policy.cpp, indexed by OpId. The region casts the floating inputs through rcuda::to,
// which records like any op, so gradients flow back to each input in its own dtype, and turns
// autocast off for the call it wraps, so that the composite ops (linear over addmm, the losses
// over elementwise ops) are cast once, at the top. The ops themselves know nothing of autocast.
//
// The table follows PyTorch 2.11's lists (torch.amp's "CUDA Ops that can autocast to
// float16/float32", and the CPU lists), restricted to the ops rcuda has; tests/golden/
// make_golden_autocast.py checks it against PyTorch on both device types. The CPU list is
// shorter: softmax, exp, the norms and sums keep their input dtype there, and of the recurrent
// layers the GRU keeps its input dtype there.
//
// Cast cache: within the outermost enabled region, the cast of a leaf that requires grad (a
// parameter) to one dtype is made once and reused, as PyTorch's, so a weight used by several
// calls is converted once per step. The entry is dropped when the parameter's storage version
// changes (an optimizer step inside the region) and when the outermost region ends.
#include "rcuda/autograd/autocast.h"

#include <atomic>
#include <map>
#include <string>
#include <utility>

#include "rcuda/autograd/api.h"
#include "rcuda/core/error.h"
#include "rcuda/tensor/storage.h"

namespace rcuda {
namespace autocast {
namespace {

struct State {
  bool enabled[kNumDeviceTypes] = {false, false};
  DType dtype[kNumDeviceTypes] = {DType::BFloat16, DType::Float16};  // CPU, CUDA
  int depth = 0;  // enabled guards alive, of either device type
  int any = 0;    // device types enabled now
  struct Cached {
    Tensor source;  // kept alive, so that its address is not reused while cached
    Tensor cast;
    uint64_t version = 0;
  };
  std::map<std::pair<const void*, DType>, Cached> cache;
};

thread_local State state;
// Enabled guards on every thread: an op outside any region pays one relaxed load, not a
// thread-local lookup (Note [Made once, read often] in src/backend/once.h on what those cost).
std::atomic<int> enabled_guards{0};

int index_of(DeviceType t) { return static_cast<int>(t); }

void recount() {
  state.any = 0;
  for (bool on : state.enabled) state.any += on ? 1 : 0;
}

Tensor cached_cast(const Tensor& t, DType target) {
  // Only parameters are cached: activations are cast once anyway.
  const bool cacheable = t.is_leaf() && t.requires_grad();
  if (!cacheable) return rcuda::to(t, target);
  const auto key = std::make_pair(static_cast<const void*>(t.impl()), target);
  const uint64_t version = t.storage()->version();
  auto it = state.cache.find(key);
  if (it != state.cache.end() && it->second.version == version) return it->second.cast;
  Tensor cast = rcuda::to(t, target);
  state.cache[key] = State::Cached{t, cast, version};
  return cast;
}

}  // namespace

bool any_enabled() { return state.any > 0; }

Region::Region(OpId op, const Tensor& like) {
  if (enabled_guards.load(std::memory_order_relaxed) == 0) return;
  if (state.any == 0 || !like.defined()) return;
  device_type_ = like.device().type;
  if (!state.enabled[index_of(device_type_)]) return;
  policy_ = policy(op, device_type_);
  if (policy_ == Policy::AsIs) return;
  RCUDA_CHECK(!(device_type_ == DeviceType::CUDA && op == OpId::BinaryCrossEntropy), ValueError,
              "binary_cross_entropy: unsafe to autocast on CUDA (a float16 probability of 1 or 0 "
              "loses the loss); use binary_cross_entropy_with_logits on the logits, or compute "
              "this loss outside the autocast region");
  target_ = policy_ == Policy::LowerPrecision ? state.dtype[index_of(device_type_)]
            : policy_ == Policy::Float16      ? DType::Float16
                                              : DType::Float32;
  // Off for the wrapped call, on every device type, as PyTorch's redispatch below autocast.
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    suspended_[i] = state.enabled[i];
    state.enabled[i] = false;
  }
  recount();
}

Region::~Region() {
  if (policy_ == Policy::AsIs) return;
  for (int i = 0; i < kNumDeviceTypes; ++i) state.enabled[i] = suspended_[i];
  recount();
}

Tensor Region::operator()(const Tensor& t) const {
  if (policy_ == Policy::AsIs || !t.defined() || t.device().type != device_type_) return t;
  const DType d = t.dtype();
  if (!is_floating(d) || d == DType::Float64 || is_float8(d) || d == target_) return t;
  if (policy_ != Policy::Float32) return cached_cast(t, target_);
  return rcuda::to(t, target_);
}

}  // namespace autocast

AutocastGuard::AutocastGuard(DeviceType device_type, DType dtype, bool enabled)
    : device_type_(device_type) {
  RCUDA_CHECK(dtype == DType::Float16 || dtype == DType::BFloat16, ValueError,
              "autocast: dtype must be float16 or bfloat16, got ", dtype_name(dtype));
  autocast::State& s = autocast::state;
  const int i = autocast::index_of(device_type);
  was_enabled_ = s.enabled[i];
  previous_dtype_ = s.dtype[i];
  s.enabled[i] = enabled;
  s.dtype[i] = dtype;
  counted_ = enabled;
  if (enabled) {
    ++s.depth;
    autocast::enabled_guards.fetch_add(1, std::memory_order_relaxed);
  }
  autocast::recount();
}

AutocastGuard::~AutocastGuard() {
  autocast::State& s = autocast::state;
  const int i = autocast::index_of(device_type_);
  s.enabled[i] = was_enabled_;
  s.dtype[i] = previous_dtype_;
  autocast::recount();
  if (!counted_) return;
  autocast::enabled_guards.fetch_sub(1, std::memory_order_relaxed);
  if (--s.depth == 0) s.cache.clear();
}

bool is_autocast_enabled(DeviceType device_type) {
  return autocast::state.enabled[autocast::index_of(device_type)];
}

DType autocast_dtype(DeviceType device_type) {
  return autocast::state.dtype[autocast::index_of(device_type)];
}

void clear_autocast_cache() { autocast::state.cache.clear(); }

}  // namespace rcuda
