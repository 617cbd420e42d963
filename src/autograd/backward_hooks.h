// The engine's side of the post-accumulate hooks and the end-of-backward callbacks
// (register_post_accumulate_grad_hook and queue_callback in rcuda/autograd.h; Note [Hooks
// beside the graph] in backward_hooks.cpp).
#pragma once

#include <functional>
#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda::autograd {

// Whether any post-accumulate hook is registered (one atomic read): the engine looks a leaf up
// only then.
bool has_post_accumulate_grad_hooks();
// Runs the hooks of `leaf` (an undefined tensor runs none), after its accumulator has written
// its grad.
void run_post_accumulate_grad_hooks(const Tensor& leaf);

// The callbacks of one backward pass: opened by run_backward on the thread that runs the pass;
// queue_callback adds to the innermost open one. A pass inside a hook (grad() in a hook) opens
// its own, so its callbacks run when it ends, not when the outer one does.
class BackwardCallbacks {
 public:
  BackwardCallbacks();
  ~BackwardCallbacks();
  BackwardCallbacks(const BackwardCallbacks&) = delete;
  BackwardCallbacks& operator=(const BackwardCallbacks&) = delete;
  // Runs the queued callbacks in order, including those queued by a callback; the first that
  // throws ends the run and the rest are dropped.
  void run();

 private:
  std::vector<std::function<void()>> callbacks_;
};

}  // namespace rcuda::autograd
