// The observers of the funnel (Note [The funnel] in rcuda/autograd/funnel.h).
#include "rcuda/autograd/funnel.h"

#include "rcuda/core/error.h"

namespace rcuda::autograd {
namespace detail {

std::atomic<int> observers_alive{0};

namespace {
thread_local OpObserver* observer = nullptr;
thread_local int call_depth = 0;
}  // namespace

OpObserver* thread_observer() { return observer; }
int& thread_call_depth() { return call_depth; }

}  // namespace detail

ObserverGuard::ObserverGuard(OpObserver* o) {
  RCUDA_CHECK(o != nullptr, ValueError, "ObserverGuard: the observer is null");
  RCUDA_CHECK(detail::observer == nullptr, ValueError,
              "ObserverGuard: this thread already has an observer (a trace is running here; "
              "traces do not nest)");
  detail::observer = o;
  detail::call_depth = 0;
  detail::observers_alive.fetch_add(1, std::memory_order_relaxed);
  observe_views(true);
}

ObserverGuard::~ObserverGuard() {
  detail::observer = nullptr;
  detail::call_depth = 0;
  detail::observers_alive.fetch_sub(1, std::memory_order_relaxed);
  observe_views(false);
}

void OpCall::open_observed() {
  if (detail::observer == nullptr) return;
  reported_ = detail::call_depth == 0;
  ++detail::call_depth;
  counted_ = true;
}

void OpCall::report(const std::vector<Tensor>& inputs, const Attributes& attrs,
                    const std::vector<Tensor>& outputs) const {
  if (!reported_ || detail::observer == nullptr) return;
  // The observer's own work (a constant's copy) is not part of the traced function.
  UnobservedGuard observers_own_work;
  detail::observer->on_op(op_, inputs, attrs, outputs);
}

void OpCall::will_change(const Tensor& t) const {
  if (!reported_ || detail::observer == nullptr) return;
  UnobservedGuard observers_own_work;
  detail::observer->on_change(op_, t);
}

void report_op(OpId op, const std::vector<Tensor>& inputs, const Attributes& attrs,
               const std::vector<Tensor>& outputs) {
  if (!observed() || detail::call_depth != 0) return;
  UnobservedGuard observers_own_work;
  detail::observer->on_op(op, inputs, attrs, outputs);
}

void report_host_read(const char* what, const Tensor& t) {
  // Reads inside an op are its implementation's, not the traced code's.
  if (!observed() || detail::call_depth != 0) return;
  detail::observer->on_host_read(what, t);
}

}  // namespace rcuda::autograd
