// The Builder: names, ONNX nodes and initializers of the graph being exported.
#include "io/onnx/builder.h"

#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"

namespace rcuda::io::onnx_export {

Builder::Builder(const graph::Graph& g, int opset, onnx::GraphProto* graph)
    : g_(g), opset_(opset), graph_(graph), names_(g.values.size()), readers_(g.values.size()) {
  for (const graph::Node& node : g.nodes)
    for (int v : node.inputs)
      if (v >= 0) ++readers_.at(static_cast<size_t>(v));
  for (int v : g.outputs) ++readers_.at(static_cast<size_t>(v));
}

void Builder::set_name(int value, const std::string& name) {
  RCUDA_CHECK(taken_.insert(name).second, ValueError, kOp, ": two values would be named \"", name,
              "\" (an input or output name that is also a parameter's?)");
  names_.at(static_cast<size_t>(value)) = name;
}

void Builder::set_fresh_name(int value, const std::string& hint) {
  names_.at(static_cast<size_t>(value)) = fresh(hint);
}

const std::string& Builder::name(int value) const {
  const std::string& n = names_.at(static_cast<size_t>(value));
  RCUDA_CHECK(!n.empty(), InternalError, kOp, ": value ", value,
              " is read before the node that makes it");
  return n;
}

bool Builder::used(int value) const { return readers_.at(static_cast<size_t>(value)) > 0; }

std::string Builder::fresh(const std::string& hint) {
  std::string name = hint;
  for (int i = 2; !taken_.insert(name).second; ++i) name = hint + "_" + std::to_string(i);
  return name;
}

void Builder::begin(const graph::Node& node, int index) {
  node_ = &node;
  index_ = index;
}

bool Builder::has_in(size_t i) const { return i < node_->inputs.size() && node_->inputs[i] >= 0; }

std::string Builder::in(size_t i) const { return has_in(i) ? name(node_->inputs[i]) : ""; }

const graph::Value& Builder::in_value(size_t i) const {
  if (!has_in(i)) fail("input ", i, " is absent");
  return value(node_->inputs[i]);
}

const std::string& Builder::out(size_t i) const {
  if (i >= node_->outputs.size()) fail("has no output ", i);
  return name(node_->outputs[i]);
}

const graph::Value& Builder::out_value(size_t i) const {
  if (i >= node_->outputs.size()) fail("has no output ", i);
  return value(node_->outputs[i]);
}

int64_t Builder::dim(int64_t d, int64_t rank) const {
  const int64_t r = d < 0 ? d + rank : d;
  if (r < 0 || r >= std::max<int64_t>(rank, 1)) fail("dim ", d, " is out of range for rank ", rank);
  return r;
}

onnx::NodeProto* Builder::add(const std::string& op_type, const std::vector<std::string>& inputs,
                              const std::vector<std::string>& outputs) {
  onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(op_type);
  // "linear_3/Gemm": the checker's messages name the rcuda node an ONNX node came from.
  n->set_name(
      fresh(std::string(op_name(node_->op)) + "_" + std::to_string(index_) + "/" + op_type));
  // An absent optional input is ""; trailing ones are left out.
  size_t count = inputs.size();
  while (count > 0 && inputs[count - 1].empty()) --count;
  for (size_t i = 0; i < count; ++i) n->add_input(inputs[i]);
  if (outputs.empty())
    n->add_output(fresh(std::string(op_name(node_->op)) + "_" + std::to_string(index_) + "/" +
                        op_type + "_out"));
  for (const std::string& o : outputs) n->add_output(o);
  return n;
}

std::string Builder::add1(const std::string& op_type, const std::vector<std::string>& inputs) {
  return add(op_type, inputs, {})->output(0);
}

std::string Builder::tensor(const Tensor& t, const std::string& hint) {
  onnx::TensorProto* proto = graph_->add_initializer();
  const std::string name = fresh(hint);
  fill_tensor_proto(t, name, proto);
  return name;
}

std::string Builder::ints(const std::vector<int64_t>& values) {
  Tensor t = ops::from_data(values.data(), {static_cast<int64_t>(values.size())}, DType::Int64);
  return tensor(t, "ints");
}

std::string Builder::int_scalar(int64_t value) {
  return tensor(ops::scalar_tensor(Scalar(value), DType::Int64), "int");
}

std::string Builder::number(const Scalar& value, DType dtype) {
  // Made by rcuda's own conversion, so a float16 or bfloat16 constant rounds as the op's did.
  return tensor(ops::scalar_tensor(value, dtype), "number");
}

Scalar Builder::scalar_attr(std::string_view name) const {
  const AttributeValue* v = node_->attrs.find(name);
  if (v == nullptr) fail("has no attribute \"", name, "\"");
  if (const auto* b = std::get_if<bool>(v)) return Scalar(*b);
  if (const auto* i = std::get_if<int64_t>(v)) return Scalar(*i);
  if (const auto* d = std::get_if<double>(v)) return Scalar(*d);
  fail("attribute \"", name, "\" is not a number");
}

std::string Builder::cast(const std::string& name, DType from, DType to) {
  if (from == to) return name;
  onnx::NodeProto* n = add("Cast", {name}, {});
  set_attr(n, "to", static_cast<int64_t>(onnx_dtype(to, "a cast's result")));
  return n->output(0);
}

void Builder::reduce(const std::string& op_type, const std::string& input,
                     const std::vector<int64_t>& axes, bool keepdims, const std::string& output) {
  const bool axes_input = op_type == "ReduceSum" ? opset_ >= 13 : opset_ >= 18;
  std::vector<std::string> inputs = {input};
  if (axes_input && !axes.empty()) inputs.push_back(ints(axes));
  onnx::NodeProto* n = add(op_type, inputs, {output});
  if (!axes_input && !axes.empty()) set_attr(n, "axes", axes);
  set_attr(n, "keepdims", static_cast<int64_t>(keepdims));
}

void set_attr(onnx::NodeProto* node, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void set_attr(onnx::NodeProto* node, const std::string& name, double value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(value));
}

void set_attr(onnx::NodeProto* node, const std::string& name, const std::string& value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

void set_attr(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void set_attr(onnx::NodeProto* node, const std::string& name, const std::vector<double>& values) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOATS);
  for (double v : values) a->add_floats(static_cast<float>(v));
}

}  // namespace rcuda::io::onnx_export
