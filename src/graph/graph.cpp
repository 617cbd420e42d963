// Running and printing a graph (docs/graph.md).
#include <sstream>

#include "rcuda/autograd/api.h"
#include "rcuda/core/error.h"
#include "rcuda/graph/graph.h"
#include "rcuda/tensor/autograd_meta.h"

namespace rcuda::graph {
namespace {

// "Float[128, 1, 28, 28]", as torch's graphs print a value's type.
std::string type_str(const Value& v) {
  std::string name = dtype_name(v.dtype);
  if (!name.empty()) name[0] = static_cast<char>(std::toupper(name[0]));
  return name + shape_str(v.shape);
}

// Ops that change their first input: a constant they reach must be a fresh copy in every run.
bool changes_its_input(OpId op) {
  switch (op) {
    case OpId::AddInplace:
    case OpId::MulInplace:
    case OpId::CopyInplace:
    case OpId::FillInplace:
    case OpId::UniformInplace:
    case OpId::NormalInplace:
    case OpId::IndexPut:
      return true;
    default:
      return false;
  }
}

std::string name_of(const Graph& g, int id) {
  return id < 0 ? std::string("None") : g.values[id].name;
}

}  // namespace

std::vector<Tensor> Graph::run(const std::vector<Tensor>& args) const {
  RCUDA_CHECK(args.size() == inputs.size(), ValueError, "graph: expected ", inputs.size(), " input",
              inputs.size() == 1 ? "" : "s", ", got ", args.size());
  std::vector<Tensor> slots(values.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = values[inputs[i]];
    const Tensor& t = args[i];
    RCUDA_CHECK(t.defined(), ValueError, "graph: input ", i + 1, " (\"", v.name,
                "\") is not a tensor");
    RCUDA_CHECK(t.dtype() == v.dtype, DTypeError, "graph: input ", i + 1, " (\"", v.name,
                "\") must be ", dtype_name(v.dtype), " as traced, got ", dtype_name(t.dtype()));
    RCUDA_CHECK(t.dim() == static_cast<int64_t>(v.shape.size()), ShapeError, "graph: input ", i + 1,
                " (\"", v.name, "\") must have ", v.shape.size(), " dims as traced (",
                shape_str(v.shape), "), got shape ", shape_str(t.shape()));
    slots[inputs[i]] = t;
  }
  // A graph whose ops change a tensor in place runs on copies of its constants (a buffer the
  // traced function made and then filled), so that every run starts from the traced values.
  bool copy_constants = false;
  for (const Node& node : nodes) copy_constants = copy_constants || changes_its_input(node.op);
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].kind == ValueKind::Parameter) slots[i] = values[i].tensor;
    if (values[i].kind == ValueKind::Constant) {
      NoGradGuard no_grad;
      slots[i] = copy_constants ? ops::clone(values[i].tensor) : values[i].tensor;
    }
  }
  std::vector<Tensor> ins;
  for (const Node& node : nodes) {
    ins.clear();
    for (int id : node.inputs) ins.push_back(id < 0 ? Tensor() : slots[id]);
    std::vector<Tensor> outs = invoke(node.op, ins, node.attrs);
    RCUDA_CHECK(outs.size() >= node.outputs.size(), InternalError, "graph: ", op_name(node.op),
                " gave ", outs.size(), " outputs where the trace recorded ", node.outputs.size());
    for (size_t k = 0; k < node.outputs.size(); ++k)
      if (node.outputs[k] >= 0) slots[node.outputs[k]] = std::move(outs[k]);
  }
  std::vector<Tensor> results;
  results.reserve(outputs.size());
  for (int id : outputs) results.push_back(slots[id]);
  return results;
}

std::string Graph::to_string() const {
  std::ostringstream os;
  os << "graph(";
  bool first = true;
  auto declare = [&](int id) {
    os << (first ? "" : ",\n      ") << "%" << values[id].name << " : " << type_str(values[id]);
    first = false;
  };
  for (int id : inputs) declare(id);
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].kind == ValueKind::Parameter) declare(static_cast<int>(i));
  os << "):\n";
  for (const Node& node : nodes) {
    os << "  ";
    for (size_t k = 0; k < node.outputs.size(); ++k)
      os << (k ? ", " : "") << (node.outputs[k] < 0 ? "_" : name_of(*this, node.outputs[k]));
    os << " = " << op_name(node.op) << "(";
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const int id = node.inputs[k];
      os << (k ? ", " : "");
      if (id < 0) {
        os << "None";
      } else if (values[id].kind == ValueKind::Constant) {
        os << "constant " << type_str(values[id]);
      } else {
        os << (values[id].kind == ValueKind::OpOutput ? "" : "%") << values[id].name;
      }
    }
    os << ")";
    if (!node.attrs.empty()) os << " {" << attributes_str(node.attrs) << "}";
    if (!node.scope.empty()) os << " # " << node.scope;
    if (!node.outputs.empty() && node.outputs[0] >= 0)
      os << " : " << type_str(values[node.outputs[0]]);
    os << "\n";
  }
  os << "  return (";
  for (size_t k = 0; k < outputs.size(); ++k) {
    const Value& v = values[outputs[k]];
    os << (k ? ", " : "") << (v.kind == ValueKind::OpOutput ? "" : "%") << v.name;
  }
  os << ")\n";
  return os.str();
}

std::vector<std::pair<OpId, int>> Graph::op_counts() const {
  std::vector<std::pair<OpId, int>> counts;
  for (const Node& node : nodes) {
    bool found = false;
    for (auto& [op, n] : counts)
      if (op == node.op) {
        ++n;
        found = true;
      }
    if (!found) counts.emplace_back(node.op, 1);
  }
  return counts;
}

}  // namespace rcuda::graph
