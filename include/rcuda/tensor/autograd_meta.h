// What a tensor carries for autograd, as data. The tensor layer keeps the slot and the flags;
// the autograd layer (src/autograd/) gives them behaviour: it records nodes, runs backward and
// fills `grad`. Read docs/autograd.md first.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda {

namespace autograd {
class Node;
}

// A hook sees the gradient of its tensor and may return a replacement (undefined: keep it).
using GradHook = std::function<Tensor(const Tensor&)>;

// Note [Autograd metadata]
// Each TensorImpl owns its own AutogradMeta (or none): views do not share their base's, so a
// view's gradient is its own. A tensor requires grad when it is a leaf with `requires_grad` set
// or when an op recorded a node that produced it (`grad_fn`). Leaves accumulate into `grad`;
// non-leaves only when `retains_grad`.
struct AutogradMeta {
  bool requires_grad = false;  // set by the user on leaves
  bool retains_grad = false;   // non-leaves: keep the gradient in `grad`
  uint32_t output_nr = 0;      // which output of grad_fn this tensor is
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;
  // The node that adds into a leaf's `grad`, made when an op first records the leaf (Note [The
  // leaf keeps its accumulator] in rcuda/autograd/node.h).
  std::shared_ptr<autograd::Node> grad_accumulator;
  // A leaf's hooks (a non-leaf's live on its grad_fn, which it owns).
  std::vector<GradHook> hooks;
};

// Note [Grad mode]: thread-local; when off, no op records a node (inference, optimizer steps,
// and the ops that autograd itself calls below its entry points).
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Scoped switches of grad mode, restoring the previous state on exit.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

class EnableGradGuard {
 public:
  EnableGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(previous_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

// The view ops of the Tensor class, as data: enough to send a gradient back to the base.
enum class ViewKind : uint8_t {
  AsStrided,
  View,  // view, and squeeze/unsqueeze/t of sizes that only reshape
  Permute,
  Transpose,
  Slice,
  Select,
  Expand,
  Diagonal,
};

struct ViewSpec {
  ViewKind kind = ViewKind::View;
  int64_t dim0 = 0, dim1 = 0;            // Transpose, Slice/Select (dim0), Diagonal (dim1, dim2)
  int64_t start = 0, end = 0, step = 1;  // Slice; Select's index in start; Diagonal's offset
  std::vector<int64_t> dims;             // Permute
};

// Note [Views record through a hook]
// The Tensor class's view methods (t(), slice(), ...) sit below autograd, yet `w.t()` of a
// parameter must carry its gradient. So the tensor layer calls this hook, which the autograd
// layer installs at load time, for every view of a tensor that has autograd metadata while grad
// mode is on, and for every view while an observer of op calls is alive (a trace: Note [The
// funnel] in rcuda/autograd/funnel.h). One mechanism, so no view can be missed and none is
// recorded twice.
using ViewHook = void (*)(const Tensor& base, const Tensor& view, const ViewSpec& spec);
void set_view_hook(ViewHook hook);
// Counts an observer of op calls in (on) or out: while any is alive, every view reaches the hook.
void observe_views(bool on);

}  // namespace rcuda
