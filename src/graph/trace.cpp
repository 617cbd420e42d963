// The tracer: an observer of the funnel that turns each outermost op call into a node (docs/
// graph.md, Note [The funnel] in rcuda/autograd/funnel.h).
#include <unordered_map>
#include <unordered_set>

#include "rcuda/autograd/api.h"
#include "rcuda/autograd/funnel.h"
#include "rcuda/core/error.h"
#include "rcuda/graph/graph.h"
#include "rcuda/tensor/storage.h"

namespace rcuda::graph {
std::string in_module(const std::string& scope) {
  return scope.empty() ? std::string() : " (in module " + scope + ")";
}

struct Tracer::State final : autograd::OpObserver {
  Graph graph;
  // Value ids by tensor. Every tensor seen is kept alive until the trace ends, so that no
  // address is reused by a later tensor while the map still names it.
  std::unordered_map<const TensorImpl*, int> ids;
  std::unordered_map<const TensorImpl*, std::string> parameter_names;
  std::unordered_set<const void*> traced_storage;  // storage of inputs and op outputs
  std::vector<Tensor> keep_alive;
  std::unique_ptr<autograd::ObserverGuard> guard;
  ScopeProvider scope;

  int add_value(ValueKind kind, const Tensor& t, std::string name) {
    Value v;
    v.kind = kind;
    v.shape = t.shape();
    v.dtype = t.dtype();
    v.device = t.device();
    const int id = static_cast<int>(graph.values.size());
    v.name = name.empty() ? "%" + std::to_string(id) : std::move(name);
    if (kind == ValueKind::Parameter) v.tensor = t;
    graph.values.push_back(std::move(v));
    ids[t.impl()] = id;
    keep_alive.push_back(t);
    if (kind == ValueKind::Input || kind == ValueKind::OpOutput)
      traced_storage.insert(t.storage().get());
    return id;
  }

  // The value a node reads: known, a parameter, or a constant copied as it is now.
  int value_of(const Tensor& t, OpId op) {
    if (!t.defined()) return -1;
    auto it = ids.find(t.impl());
    if (it != ids.end()) return it->second;
    auto p = parameter_names.find(t.impl());
    if (p != parameter_names.end()) return add_value(ValueKind::Parameter, t, p->second);
    RCUDA_CHECK(traced_storage.count(t.storage().get()) == 0, ValueError,
                "jit_trace: ", op_name(op),
                " reads a tensor that shares memory with a traced value but was made by an op "
                "the tracer does not see (of shape ",
                shape_str(t.shape()), "); use the public ops (rcuda::, torch_*, $methods)");
    const int id = add_value(ValueKind::Constant, t, "");
    NoGradGuard no_grad;
    graph.values[id].tensor = ops::clone(t);
    return id;
  }

  void on_op(OpId op, const std::vector<Tensor>& inputs, const Attributes& attrs,
             const std::vector<Tensor>& outputs) override {
    Node node;
    node.op = op;
    node.attrs = attrs;
    if (scope) node.scope = scope();
    RCUDA_CHECK(can_invoke(op), ValueError, "jit_trace: op ", op_name(op), in_module(node.scope),
                " cannot be recorded in a traced graph yet (docs/graph.md lists the ops that can)");
    for (const Tensor& t : inputs) node.inputs.push_back(value_of(t, op));
    keep_shape_from_input(node, inputs, outputs);
    const int n = static_cast<int>(graph.nodes.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].defined()) {
        node.outputs.push_back(-1);
        continue;
      }
      const int id = add_value(ValueKind::OpOutput, outputs[i], "");
      graph.values[id].node = n;
      graph.values[id].output_nr = static_cast<int>(i);
      node.outputs.push_back(id);
    }
    graph.nodes.push_back(std::move(node));
  }

  // view and reshape keep a leading size that equals the input's as 0 ("the input's size",
  // ONNX's Reshape convention), so that the graph runs at another batch size (docs/graph.md).
  static void keep_shape_from_input(Node& node, const std::vector<Tensor>& inputs,
                                    const std::vector<Tensor>& outputs) {
    if (node.op == OpId::Expand) {
      keep_expanded_sizes(node, inputs);
      return;
    }
    if (node.op != OpId::View && node.op != OpId::Reshape) return;
    if (inputs.empty() || outputs.empty() || inputs[0].dim() == 0 || outputs[0].dim() == 0) return;
    auto shape = node.attrs.get<std::vector<int64_t>>("shape", node.op);
    if (shape.empty() || shape[0] != inputs[0].size(0) || shape[0] <= 0) return;
    shape[0] = 0;
    node.attrs.set("shape", std::move(shape));
  }

  // expand keeps, as -1 (torch's "the tensor's own size"), every size it does not expand, so
  // that a batch dim it passes through follows the input at another batch size.
  static void keep_expanded_sizes(Node& node, const std::vector<Tensor>& inputs) {
    if (inputs.empty() || !inputs[0].defined()) return;
    auto shape = node.attrs.get<std::vector<int64_t>>("shape", node.op);
    const int64_t lead = static_cast<int64_t>(shape.size()) - inputs[0].dim();
    for (int64_t j = 0; j < inputs[0].dim(); ++j)
      if (lead + j >= 0 && shape[lead + j] == inputs[0].size(j)) shape[lead + j] = -1;
    node.attrs.set("shape", std::move(shape));
  }

  // The tensor as it is before the op writes: a constant is copied now, not after.
  void on_change(OpId op, const Tensor& t) override { value_of(t, op); }

  void on_host_read(const char* what, const Tensor& t) override {
    const std::string warning =
        std::string(what) + " reads a tensor's values on the host during the trace (shape " +
        shape_str(t.shape()) +
        "): the graph records one path through the code, and code that depends on those values "
        "will not follow them when the graph runs on other inputs";
    for (const std::string& w : graph.warnings)
      if (w == warning) return;
    graph.warnings.push_back(warning);
  }
};

Tracer::Tracer(const std::vector<Tensor>& example_inputs, const NamedTensors& parameters,
               const std::vector<std::string>& input_names, ScopeProvider scope)
    : state_(std::make_unique<State>()) {
  state_->scope = std::move(scope);
  RCUDA_CHECK(input_names.empty() || input_names.size() == example_inputs.size(), ValueError,
              "jit_trace: ", input_names.size(), " input names for ", example_inputs.size(),
              " inputs");
  for (const auto& [name, t] : parameters) {
    RCUDA_CHECK(t.defined(), ValueError, "jit_trace: parameter \"", name, "\" is undefined");
    state_->parameter_names.emplace(t.impl(), name);
  }
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    const Tensor& t = example_inputs[i];
    RCUDA_CHECK(t.defined(), ValueError, "jit_trace: input ", i + 1, " is not a tensor");
    RCUDA_CHECK(state_->ids.count(t.impl()) == 0, ValueError, "jit_trace: input ", i + 1,
                " is the same tensor as an earlier input");
    const std::string name = !input_names.empty() ? input_names[i]
                             : i == 0             ? std::string("input")
                                                  : "input_" + std::to_string(i + 1);
    state_->graph.inputs.push_back(state_->add_value(ValueKind::Input, t, name));
  }
  state_->guard = std::make_unique<autograd::ObserverGuard>(state_.get());
}

Tracer::~Tracer() = default;

Graph Tracer::finish(const std::vector<Tensor>& outputs) {
  RCUDA_CHECK(state_->guard != nullptr, ValueError, "jit_trace: the trace has already finished");
  state_->guard.reset();
  RCUDA_CHECK(!outputs.empty(), ValueError,
              "jit_trace: the traced function returned no tensor (it must return a tensor or a "
              "list of tensors)");
  Graph& g = state_->graph;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    RCUDA_CHECK(t.defined(), ValueError, "jit_trace: output ", i + 1, " is not a tensor");
    auto it = state_->ids.find(t.impl());
    if (it == state_->ids.end()) {
      auto p = state_->parameter_names.find(t.impl());
      RCUDA_CHECK(p != state_->parameter_names.end(), ValueError, "jit_trace: output ", i + 1,
                  " (shape ", shape_str(t.shape()),
                  ") was not made by a traced op from the inputs: it would be a constant");
      g.outputs.push_back(state_->add_value(ValueKind::Parameter, t, p->second));
      continue;
    }
    g.outputs.push_back(it->second);
  }
  Graph out = std::move(g);
  state_ = std::make_unique<State>();
  return out;
}

Graph trace(const TracedFunction& fn, const std::vector<Tensor>& example_inputs,
            const NamedTensors& parameters, const std::vector<std::string>& input_names) {
  Tracer tracer(example_inputs, parameters, input_names);
  std::vector<Tensor> outputs = fn(example_inputs);
  return tracer.finish(outputs);
}

}  // namespace rcuda::graph
