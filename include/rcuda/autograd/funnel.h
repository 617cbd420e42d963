// The funnel every public op passes (Note [The funnel]): autocast, the decision to record a node,
// and the observers of op calls (the tracer of rcuda/graph; data-parallel hooks next).
//
//   Tensor softmax(const Tensor& x, int64_t dim) {
//     autograd::OpCall call(OpId::Softmax, x);
//     if (call.autocasts()) return softmax(call.cast(x), dim);
//     Tensor out = ...;                       // records a node when call.records(x)
//     if (call.reported()) call.report({x}, {{"dim", dim}}, {out});
//     return out;
//   }
//
// Note [The funnel]
// ~~~~~~~~~~~~~~~~~
// PyTorch puts autocast, autograd and its tracer at one dispatcher. rcuda has no dispatcher, so
// each public entry point opens an OpCall before anything else, naming its OpId:
// - autocast: the policy table indexed by OpId (src/autograd/autocast.cpp) says whether the
//   op's floating inputs are cast on the first tensor's device type. When it applies, the entry
//   point calls itself again with call.cast(...) inputs; that call sees autocast off, as
//   PyTorch's redispatch below autocast does. The redirecting OpCall reports nothing.
// - recording: call.records(inputs...) is the one place that decides (grad mode on and an input
//   requires grad).
// - observers: an OpObserver registered on the thread (ObserverGuard) hears of every call that
//   is outermost on the thread, with its inputs, attributes and outputs; calls made inside an
//   op (linear's reshape, a loss's elementwise steps) are its implementation and stay unheard.
//   The attributes are made only when call.reported() is true, so an unobserved op pays one
//   relaxed atomic load for all of this.
// Views are reported by the tensor layer's view hook (Note [Views record through a hook]).
#pragma once

#include <atomic>
#include <vector>

#include "rcuda/autograd/autocast.h"
#include "rcuda/core/op.h"
#include "rcuda/tensor/autograd_meta.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::autograd {

// Hears of the public op calls made on the thread it is registered on.
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  // An outermost public op ran. inputs holds the op's tensor arguments in the op's order, an
  // undefined tensor for an absent optional one (a linear without bias).
  virtual void on_op(OpId op, const std::vector<Tensor>& inputs, const Attributes& attrs,
                     const std::vector<Tensor>& outputs) = 0;
  // A tensor's values are read on the host (item(), a copy to an R array): code that branches
  // on them follows one path only. `what` names the reading function.
  virtual void on_host_read(const char* what, const Tensor& t) {}
  // An in-place op is about to change t: an observer that keeps tensors as they were (a trace's
  // constants) takes its copy now, before the op writes.
  virtual void on_change(OpId op, const Tensor& t) {}
};

// Registers `observer` on this thread until destroyed (one at a time; a second is a ValueError).
class ObserverGuard {
 public:
  explicit ObserverGuard(OpObserver* observer);
  ~ObserverGuard();
  ObserverGuard(const ObserverGuard&) = delete;
  ObserverGuard& operator=(const ObserverGuard&) = delete;
};

namespace detail {
// Observers registered on any thread: the fast path's one load.
extern std::atomic<int> observers_alive;
OpObserver* thread_observer();
int& thread_call_depth();
}  // namespace detail

// Whether this thread has an observer (a trace is running here).
inline bool observed() {
  return detail::observers_alive.load(std::memory_order_relaxed) > 0 &&
         detail::thread_observer() != nullptr;
}

// Hides the calls made while it lives from this thread's observer: a binding's own work (a copy
// into an R array) is not part of the traced code.
class UnobservedGuard {
 public:
  UnobservedGuard() { ++detail::thread_call_depth(); }
  ~UnobservedGuard() { --detail::thread_call_depth(); }
  UnobservedGuard(const UnobservedGuard&) = delete;
  UnobservedGuard& operator=(const UnobservedGuard&) = delete;
};

// Tells this thread's observer, if any, that `what` reads t's values on the host.
void report_host_read(const char* what, const Tensor& t);

// Reports an op made outside an OpCall (the view hook's views); outermost calls only.
void report_op(OpId op, const std::vector<Tensor>& inputs, const Attributes& attrs,
               const std::vector<Tensor>& outputs);

class OpCall {
 public:
  // `like` is the op's first tensor argument: its device type picks autocast's region.
  OpCall(OpId op, const Tensor& like) : op_(op), cast_(op, like) {
    if (cast_ || detail::observers_alive.load(std::memory_order_relaxed) == 0) return;
    open_observed();
  }
  ~OpCall() {
    if (counted_) --detail::thread_call_depth();
  }
  OpCall(const OpCall&) = delete;
  OpCall& operator=(const OpCall&) = delete;

  OpId op() const { return op_; }
  // Autocast casts this op's inputs: call the entry point again with cast(x) for each tensor.
  bool autocasts() const { return static_cast<bool>(cast_); }
  Tensor cast(const Tensor& t) const { return cast_(t); }

  // The decision to record a node for this call: grad mode on and some input requires grad.
  template <typename... Ts>
  static bool records(const Ts&... inputs) {
    return GradMode::is_enabled() && ((inputs.defined() && inputs.requires_grad()) || ...);
  }
  static bool records_list(const std::vector<Tensor>& inputs) {
    if (!GradMode::is_enabled()) return false;
    for (const Tensor& t : inputs)
      if (t.defined() && t.requires_grad()) return true;
    return false;
  }

  // An observer wants to hear of this call: build its attributes and report() its outputs.
  bool reported() const { return reported_; }
  // An in-place op calls this before it writes to t (OpObserver::on_change).
  void will_change(const Tensor& t) const;
  void report(const std::vector<Tensor>& inputs, const Attributes& attrs,
              const std::vector<Tensor>& outputs) const;

 private:
  void open_observed();

  OpId op_;
  autocast::Region cast_;
  bool counted_ = false;
  bool reported_ = false;
};

}  // namespace rcuda::autograd
