// What the export functions of src/io/onnx share: the Builder that names values, adds ONNX
// nodes and constants to the GraphProto being made, and the signature of a table entry.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "rcuda/core/error.h"
#include "rcuda/core/scalar.h"
#include "rcuda/graph/graph.h"

namespace rcuda::io::onnx_export {

// "onnx_export": the prefix of every message.
inline constexpr const char* kOp = "onnx_export";

// The ONNX element type of a dtype; DTypeError naming `what` for one ONNX cannot hold here.
int onnx_dtype(DType dtype, const std::string& what);

// `t` (any device, any strides) as a TensorProto named `name`, its bytes little-endian raw_data.
void fill_tensor_proto(const Tensor& t, const std::string& name, onnx::TensorProto* proto);

class Builder {
 public:
  Builder(const graph::Graph& g, int opset, onnx::GraphProto* graph);

  const graph::Graph& graph() const { return g_; }
  int opset() const { return opset_; }

  // Names of graph values in the ONNX graph (set by the exporter before any node is added).
  void set_name(int value, const std::string& name);
  // Names a value "hint", or "hint_2", ... when that is taken.
  void set_fresh_name(int value, const std::string& hint);
  const std::string& name(int value) const;
  bool name_set(int value) const { return !names_.at(static_cast<size_t>(value)).empty(); }
  const graph::Value& value(int id) const { return g_.values.at(static_cast<size_t>(id)); }
  // Whether a node or the graph's outputs read the value.
  bool used(int value) const;
  // Reserves a name not yet used in the ONNX graph ("hint", "hint_2", ...).
  std::string fresh(const std::string& hint);

  // The node being exported: ONNX node names and error messages name it.
  void begin(const graph::Node& node, int index);
  const graph::Node& node() const { return *node_; }
  // The name of the node's i-th input ("" for an absent optional one) and output.
  std::string in(size_t i) const;
  bool has_in(size_t i) const;
  const graph::Value& in_value(size_t i) const;
  const std::string& out(size_t i = 0) const;
  const graph::Value& out_value(size_t i = 0) const;
  int64_t in_rank(size_t i) const { return static_cast<int64_t>(in_value(i).shape.size()); }
  // A dim of the node's input i in [0, rank) (negative dims count from the end).
  int64_t dim(int64_t d, int64_t rank) const;

  // Adds an ONNX node; `outputs` empty: one fresh output, whose name is returned.
  onnx::NodeProto* add(const std::string& op_type, const std::vector<std::string>& inputs,
                       const std::vector<std::string>& outputs);
  std::string add1(const std::string& op_type, const std::vector<std::string>& inputs);

  // Initializers: an int64 list (1-D) or scalar (0-D), a number of `dtype` (0-D), any tensor.
  std::string ints(const std::vector<int64_t>& values);
  std::string int_scalar(int64_t value);
  std::string number(const Scalar& value, DType dtype);
  std::string tensor(const Tensor& t, const std::string& hint);

  // `name` cast to `to` (itself when `from` is already `to`).
  std::string cast(const std::string& name, DType from, DType to);
  // Input i cast to `to`.
  std::string in_as(size_t i, DType to) { return cast(in(i), in_value(i).dtype, to); }

  // A reduction over `axes` (empty: all dims) as the opset writes it: axes an attribute until
  // the op takes them as an input (ReduceSum from opset 13, the other reductions from 18).
  void reduce(const std::string& op_type, const std::string& input,
              const std::vector<int64_t>& axes, bool keepdims, const std::string& output);

  // The current node's attributes, or ValueError naming the op and the attribute.
  template <typename T>
  const T& attr(std::string_view name) const {
    return node_->attrs.get<T>(name, node_->op);
  }
  template <typename T>
  T attr_or(std::string_view name, T fallback) const {
    return node_->attrs.get_or<T>(name, fallback, node_->op);
  }
  bool has_attr(std::string_view name) const { return node_->attrs.has(name); }
  // A number attribute (bool, integer or double, as the call's number was).
  Scalar scalar_attr(std::string_view name) const;

  // ValueError "onnx_export: <op>: <what>" naming the current node's op.
  template <typename... Args>
  [[noreturn]] void fail(const Args&... what) const {
    throw ValueError(detail::concat(kOp, ": op ", op_name(node_->op), " (node ", index_,
                                    node_->scope.empty() ? "" : ", in module ", node_->scope,
                                    "): ", what...));
  }

 private:
  const graph::Graph& g_;
  int opset_;
  onnx::GraphProto* graph_;
  std::vector<std::string> names_;
  std::vector<int> readers_;
  std::set<std::string> taken_;
  const graph::Node* node_ = nullptr;
  int index_ = -1;
};

// Attributes of an ONNX node.
void set_attr(onnx::NodeProto* node, const std::string& name, int64_t value);
inline void set_attr(onnx::NodeProto* node, const std::string& name, int value) {
  set_attr(node, name, static_cast<int64_t>(value));
}
void set_attr(onnx::NodeProto* node, const std::string& name, double value);
void set_attr(onnx::NodeProto* node, const std::string& name, const std::string& value);
void set_attr(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values);
void set_attr(onnx::NodeProto* node, const std::string& name, const std::vector<double>& values);

// A table entry: adds the ONNX nodes of b.node(), whose outputs are named b.out(i).
using ExportFn = void (*)(Builder& b);

// The entry of an op (nullptr: no ONNX form).
ExportFn export_function(OpId op);

}  // namespace rcuda::io::onnx_export
