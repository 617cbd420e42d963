// register_post_accumulate_grad_hook, remove_post_accumulate_grad_hook and queue_callback: the
// two registrations that data-parallel training needs from the engine (rcuda/autograd.h).
#include "backward_hooks.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "rcuda/autograd.h"
#include "rcuda/core/error.h"

namespace rcuda::autograd {

// Note [Hooks beside the graph]
// A leaf's post-accumulate hooks live in a table here, keyed by the leaf's TensorImpl and
// holding it weakly, not in AutogradMeta or AccumulateGrad: those are declared in headers that
// most of the library includes, and a field there would rebuild all of it for a feature that a
// few parameters of a data-parallel model use. The engine asks the table only while some hook
// is registered (one atomic read per accumulator otherwise). An entry whose leaf has died is
// dropped when it is next looked up, and the whole table is swept of them whenever it has
// doubled since the last sweep, so a dead leaf's hooks do not outlive it for long; an address
// reused by a new tensor is told apart by the weak reference, which has expired.
namespace {

using HookPtr = std::shared_ptr<const PostAccumulateGradHook>;

struct LeafHooks {
  std::weak_ptr<TensorImpl> leaf;
  std::vector<std::pair<int64_t, HookPtr>> hooks;  // in registration order
};

struct HookTable {
  std::mutex mutex;
  std::unordered_map<const TensorImpl*, LeafHooks> leaves;
  size_t size_after_sweep = 0;
  int64_t next_id = 0;
  std::atomic<int64_t> hook_count{0};

  // With the mutex held.
  void erase(std::unordered_map<const TensorImpl*, LeafHooks>::iterator it) {
    hook_count -= static_cast<int64_t>(it->second.hooks.size());
    leaves.erase(it);
  }
  void sweep_if_grown() {
    if (leaves.size() < 2 * size_after_sweep + 16) return;
    for (auto it = leaves.begin(); it != leaves.end();) {
      auto next = std::next(it);
      if (it->second.leaf.expired()) erase(it);
      it = next;
    }
    size_after_sweep = leaves.size();
  }
  // The live entry of `impl`, or end().
  std::unordered_map<const TensorImpl*, LeafHooks>::iterator find(const TensorImpl* impl) {
    auto it = leaves.find(impl);
    if (it != leaves.end() && it->second.leaf.expired()) {
      erase(it);
      return leaves.end();
    }
    return it;
  }
};

HookTable& table() {
  static HookTable* t = new HookTable();  // never destroyed: hooks may run during exit
  return *t;
}

// The callback lists of the backward passes running on this thread, innermost last.
thread_local std::vector<std::vector<std::function<void()>>*> open_passes;

}  // namespace

int64_t register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook) {
  RCUDA_CHECK(leaf.defined() && leaf.is_leaf() && leaf.requires_grad(), ValueError,
              "register_post_accumulate_grad_hook: the tensor must be a leaf that requires grad "
              "(a parameter); got ",
              !leaf.defined()         ? "an undefined tensor"
              : !leaf.requires_grad() ? "a tensor that does not require grad"
                                      : "a tensor computed by an op (not a leaf)");
  RCUDA_CHECK(hook != nullptr, ValueError, "register_post_accumulate_grad_hook: the hook is empty");
  HookTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.sweep_if_grown();
  auto it = t.find(leaf.impl());
  if (it == t.leaves.end())
    it = t.leaves.emplace(leaf.impl(), LeafHooks{leaf.weak_impl(), {}}).first;
  const int64_t id = t.next_id++;
  it->second.hooks.emplace_back(id,
                                std::make_shared<const PostAccumulateGradHook>(std::move(hook)));
  ++t.hook_count;
  return id;
}

void remove_post_accumulate_grad_hook(const Tensor& leaf, int64_t id) {
  if (!leaf.defined()) return;
  HookTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.find(leaf.impl());
  if (it == t.leaves.end()) return;
  auto& hooks = it->second.hooks;
  for (auto h = hooks.begin(); h != hooks.end(); ++h) {
    if (h->first != id) continue;
    hooks.erase(h);
    --t.hook_count;
    break;
  }
  if (hooks.empty()) t.erase(it);
}

bool has_post_accumulate_grad_hooks() { return table().hook_count.load() > 0; }

void run_post_accumulate_grad_hooks(const Tensor& leaf) {
  if (!leaf.defined()) return;
  std::vector<HookPtr> hooks;
  {
    HookTable& t = table();
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.find(leaf.impl());
    if (it == t.leaves.end()) return;
    for (const auto& h : it->second.hooks) hooks.push_back(h.second);
  }
  // Outside the lock: a hook may register or remove hooks, or run a backward of its own.
  for (const HookPtr& hook : hooks) (*hook)(leaf);
}

BackwardCallbacks::BackwardCallbacks() { open_passes.push_back(&callbacks_); }

BackwardCallbacks::~BackwardCallbacks() { open_passes.pop_back(); }

void BackwardCallbacks::run() {
  // By index: a callback may queue another, which runs after it in this pass.
  for (size_t i = 0; i < callbacks_.size(); ++i) {
    std::function<void()> callback = std::move(callbacks_[i]);
    try {
      callback();
    } catch (...) {
      callbacks_.clear();
      throw;
    }
  }
  callbacks_.clear();
}

void queue_callback(std::function<void()> callback) {
  RCUDA_CHECK(!open_passes.empty(), ValueError, "queue_callback: no backward pass is running");
  RCUDA_CHECK(callback != nullptr, ValueError, "queue_callback: the callback is empty");
  open_passes.back()->push_back(std::move(callback));
}

}  // namespace rcuda::autograd
