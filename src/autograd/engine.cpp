// The backward pass: discovers the graph below the outputs, counts each node's consumers, and
// runs nodes once all their gradients have arrived, later nodes first (Note [Engine] in
// docs/autograd.md). Everything runs on the calling thread, with grad mode off unless the pass
// creates a graph (Note [Gradients of gradients]); on CUDA every formula is a device op on the
// current stream, so nothing here waits for the GPU.
#include "engine.h"

#include <atomic>
#include <optional>
#include <queue>
#include <string>
#include <unordered_set>

#include "backward_hooks.h"
#include "formula.h"
#include "rcuda/autograd/autocast.h"
#include "rcuda/autograd/record.h"
#include "rcuda/core/error.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/reduction.h"

namespace rcuda::autograd {

std::atomic<int> formula::detail::passes_creating_graph{0};

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 1 && grad.shape()[lead + i] != 1) dims.push_back(lead + i);
  Tensor summed = dims.empty() ? grad : formula::sum(grad, dims, /*keepdim=*/true);
  return formula::reshape(summed, shape);
}

namespace {

bool expandable(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

// A formula's gradient for forward input i, summed back to the input's shape and cast to its
// dtype (Note [Broadcast gradients] in docs/autograd.md).
Tensor fit_to_input(const Tensor& grad, const InputMeta& meta, const Node& node, size_t i) {
  Tensor g = grad;
  if (!meta.has_shape(g.shape())) {
    const Shape shape = meta.shape();
    RCUDA_CHECK(expandable(shape, g.shape()), InternalError,
                "internal error in autograd: ", node.name(), " returned a gradient of shape ",
                shape_str(g.shape()), " for input ", i, " of shape ", shape_str(shape));
    g = sum_to(g, shape);
  }
  if (g.dtype() != meta.dtype) g = formula::to(g, meta.dtype);
  RCUDA_CHECK(g.device() == meta.device, InternalError, "internal error in autograd: ", node.name(),
              " returned a gradient on ", g.device().str(), " for input ", i, " on ",
              meta.device.str());
  return g;
}

void add_to(TensorList& buffer, uint32_t slot, Tensor g) {
  Tensor& have = buffer[slot];
  have = have.defined() ? formula::add(have, g) : std::move(g);
}

struct ByLatest {
  bool operator()(const Node* a, const Node* b) const {
    return a->sequence_nr() < b->sequence_nr();
  }
};

uint64_t next_pass() {
  static std::atomic<uint64_t> passes{0};
  return ++passes;
}

class GraphTask {
 public:
  GraphTask(bool retain_graph, bool create_graph, const std::vector<Edge>* captures)
      : retain_graph_(retain_graph),
        create_graph_(create_graph),
        captures_(captures),
        pass_(next_pass()) {}
  GraphTask(const GraphTask&) = delete;
  GraphTask& operator=(const GraphTask&) = delete;
  // A pass that threw (a hook, a formula, a bad grad_output) leaves gradients in the buffers of
  // the nodes it had not run. A graph's nodes free theirs with the graph, but a leaf's
  // accumulator lives with the leaf (Note [The leaf keeps its accumulator]): so every node
  // this pass touched gives its buffer up here.
  ~GraphTask() {
    for (Node* node : touched_) node->pass_state().buffer.clear();
  }

  void add_root(const Edge& edge, Tensor grad) {
    roots_.push_back(edge.node.get());
    add_to(buffer_of(edge.node.get()), edge.input_nr, std::move(grad));
  }

  // Returns the gradient captured for each entry of `captures` (grad()), else nothing.
  TensorList run() {
    discover();
    std::priority_queue<Node*, std::vector<Node*>, ByLatest> ready;
    for (Node* root : roots_) {
      Node::PassState& s = state(root);
      if (s.dependencies == 0 && !s.queued) {
        s.queued = true;
        ready.push(root);
      }
    }
    TensorList captured(captures_ ? captures_->size() : 0);
    while (!ready.empty()) {
      Node* node = ready.top();
      ready.pop();
      TensorList grads = take_buffer(node);
      run_hooks(*node, grads);
      capture(node, grads, captured);
      TensorList outputs;
      if (executes(node) && any_defined(grads)) {
        if (create_graph_) check_supports_create_graph(*node);
        outputs = node->apply(std::move(grads));
        // The leaf's grad now holds this pass's gradient (register_post_accumulate_grad_hook).
        if (has_post_accumulate_grad_hooks())
          if (auto* acc = dynamic_cast<AccumulateGrad*>(node))
            run_post_accumulate_grad_hooks(acc->leaf());
      }
      if (!retain_graph_) node->release_saved();
      const auto& edges = node->next_edges();
      for (size_t i = 0; i < edges.size(); ++i) {
        Node* next = edges[i].node.get();
        if (next == nullptr || !needed(next)) continue;
        if (i < outputs.size() && outputs[i].defined())
          add_to(buffer_of(next), edges[i].input_nr,
                 fit_to_input(outputs[i], node->input_meta()[i], *node, i));
        if (--state(next).dependencies == 0) ready.push(next);
      }
    }
    return captured;
  }

 private:
  // The node's state for this pass, reset the first time the pass reaches it.
  Node::PassState& state(Node* node) const {
    Node::PassState& s = node->pass_state();
    if (s.pass != pass_) {
      s.pass = pass_;
      s.dependencies = 0;
      s.visited = false;
      s.queued = false;
      s.buffer.clear();
      touched_.push_back(node);
    }
    return s;
  }
  TensorList& buffer_of(Node* node) {
    TensorList& b = state(node).buffer;
    if (b.empty()) b.resize(node->num_outputs());
    return b;
  }
  TensorList take_buffer(Node* node) {
    TensorList& b = state(node).buffer;
    TensorList out = b.empty() ? TensorList(node->num_outputs()) : std::move(b);
    b.clear();
    return out;
  }
  static bool any_defined(const TensorList& grads) {
    for (const Tensor& g : grads)
      if (g.defined()) return true;
    return false;
  }

  // Counts, for every node below the roots, how many of its consumers will send it a gradient.
  // With captures (grad()), only nodes that lead to a captured edge take part.
  void discover() {
    std::vector<Node*> order;  // every reachable node, each once
    std::vector<Node*> stack = roots_;
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      Node::PassState& s = state(n);
      if (s.visited) continue;
      s.visited = true;
      order.push_back(n);
      for (const Edge& e : n->next_edges())
        if (e.valid()) stack.push_back(e.node.get());
    }
    if (captures_) mark_needed(order);
    for (Node* n : order) {
      if (!needed(n) || !executes(n)) continue;
      for (const Edge& e : n->next_edges())
        if (e.valid() && needed(e.node.get())) ++state(e.node.get()).dependencies;
    }
  }

  // A node is needed when it holds a captured edge or leads to one; it executes when it
  // leads to one (a captured node's own formula is not needed for the capture itself).
  void mark_needed(const std::vector<Node*>& order) {
    for (const Edge& e : *captures_) capture_nodes_.insert(e.node.get());
    // Children were pushed after parents: walking `order` backwards sees children first
    // unless a node is reachable along paths of different lengths, so iterate to a fixpoint.
    bool changed = true;
    while (changed) {
      changed = false;
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        Node* n = *it;
        if (leads_.count(n)) continue;
        for (const Edge& e : n->next_edges()) {
          Node* c = e.node.get();
          if (c != nullptr && (capture_nodes_.count(c) || leads_.count(c))) {
            leads_.insert(n);
            changed = true;
            break;
          }
        }
      }
    }
  }
  bool needed(Node* n) const {
    return captures_ == nullptr || capture_nodes_.count(n) || leads_.count(n);
  }
  bool executes(Node* n) const {
    if (captures_ == nullptr) return true;
    return leads_.count(n) > 0 && dynamic_cast<AccumulateGrad*>(n) == nullptr;
  }

  static void run_hook(const GradHook& hook, Tensor& g) {
    if (!g.defined()) return;
    Tensor replaced = hook(g);
    if (!replaced.defined()) return;
    RCUDA_CHECK(replaced.shape() == g.shape(), ShapeError,
                "register_hook: the hook returned a gradient of shape ",
                shape_str(replaced.shape()), " for a gradient of shape ", shape_str(g.shape()));
    g = replaced;
  }

  static void run_hooks(Node& node, TensorList& grads) {
    for (const Node::OutputHook& h : node.hooks()) run_hook(h.hook, grads[h.output_nr]);
    if (auto* acc = dynamic_cast<AccumulateGrad*>(&node)) {
      const Tensor leaf = acc->leaf();
      if (const AutogradMeta* meta = leaf.defined() ? leaf.autograd_meta() : nullptr)
        for (const GradHook& hook : meta->hooks) run_hook(hook, grads[0]);
    }
    for (const Node::RetainedGrad& r : node.retained()) {
      std::shared_ptr<AutogradMeta> meta = r.meta.lock();
      const Tensor& g = grads[r.output_nr];
      if (!meta || !g.defined()) continue;
      meta->grad = meta->grad.defined() ? formula::add(meta->grad, g) : formula::clone(g);
    }
  }

  void capture(Node* node, const TensorList& grads, TensorList& captured) const {
    if (captures_ == nullptr || !capture_nodes_.count(node)) return;
    for (size_t i = 0; i < captures_->size(); ++i) {
      const Edge& e = (*captures_)[i];
      if (e.node.get() == node) captured[i] = grads[e.input_nr];
    }
  }

  // Note [Gradients of gradients]: a node whose formula cannot record is refused, naming the op
  // the user called, before it would hand back gradients without their history.
  static void check_supports_create_graph(const Node& node) {
    if (node.supports_create_graph()) return;
    const char* op = node.op() == OpId::Count ? node.name() : op_name(node.op());
    throw ValueError(std::string(op) +
                     ": gradients of gradients (create_graph = TRUE) are not supported for this "
                     "op yet: its backward (" +
                     node.name() + ") does not record a graph of its own");
  }

  bool retain_graph_;
  bool create_graph_;
  const std::vector<Edge>* captures_;
  std::vector<Node*> roots_;
  mutable std::vector<Node*> touched_;  // every node whose pass state this pass set
  std::unordered_set<Node*> capture_nodes_, leads_;
  uint64_t pass_;
};

// Grad mode for the pass: off, or on with autocast off on both device types (create_graph).
class PassMode {
 public:
  explicit PassMode(bool create_graph)
      : grad_mode_(GradMode::is_enabled()), creates_graph_(create_graph) {
    GradMode::set_enabled(create_graph);
    if (!create_graph) return;
    formula::detail::passes_creating_graph.fetch_add(1, std::memory_order_relaxed);
    cpu_.emplace(DeviceType::CPU, autocast_dtype(DeviceType::CPU), /*enabled=*/false);
    cuda_.emplace(DeviceType::CUDA, autocast_dtype(DeviceType::CUDA), /*enabled=*/false);
  }
  ~PassMode() {
    GradMode::set_enabled(grad_mode_);
    if (creates_graph_)
      formula::detail::passes_creating_graph.fetch_sub(1, std::memory_order_relaxed);
  }
  PassMode(const PassMode&) = delete;
  PassMode& operator=(const PassMode&) = delete;

 private:
  bool grad_mode_, creates_graph_;
  std::optional<AutocastGuard> cpu_, cuda_;
};

}  // namespace

TensorList run_backward(const TensorList& outputs, const TensorList& grad_outputs,
                        bool retain_graph, bool create_graph, const std::vector<Edge>* captures,
                        const char* op) {
  RCUDA_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), ValueError, op,
              ": got ", grad_outputs.size(), " grad_outputs for ", outputs.size(), " outputs");
  // Note [Gradients of gradients]: with create_graph the formulas record (grad mode on), in the
  // gradients' own dtypes (autocast off, as a plain backward's ops:: calls), and the graph is
  // kept, since the recorded gradients read this graph's saved tensors again.
  PassMode mode(create_graph);
  BackwardCallbacks callbacks;  // queue_callback's list for this pass
  GraphTask task(retain_graph || create_graph, create_graph, captures);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    RCUDA_CHECK(out.defined() && out.requires_grad(), ValueError, op, ": output ", i,
                " does not require grad and has no grad_fn (no input of the ops that made it "
                "requires grad, or they ran with grad mode off)");
    Tensor g = i < grad_outputs.size() ? grad_outputs[i] : Tensor();
    if (!g.defined()) {
      RCUDA_CHECK(out.numel() == 1, ValueError, op,
                  ": a gradient can be created implicitly only for one-element outputs; output ", i,
                  " has shape ", shape_str(out.shape()), " (pass grad_outputs)");
      g = ops::ones_like(out);
    }
    RCUDA_CHECK(g.shape() == out.shape(), ShapeError, op, ": grad_output ", i, " has shape ",
                shape_str(g.shape()), " but the output has shape ", shape_str(out.shape()));
    RCUDA_CHECK(g.device() == out.device(), DeviceError, op, ": grad_output ", i, " is on ",
                g.device().str(), " but the output is on ", out.device().str());
    if (g.dtype() != out.dtype()) g = formula::to(g, out.dtype());
    task.add_root(gradient_edge(out), std::move(g));
  }
  TensorList captured = task.run();
  callbacks.run();
  return captured;
}

}  // namespace rcuda::autograd
