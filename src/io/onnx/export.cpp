// export_onnx: the ModelProto of a traced graph (docs/onnx.md). Names every value, writes the
// inputs, initializers and outputs, adds each node through the export table, then has ONNX's
// checker and shape inference read the model before it is serialized.
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "io/onnx/builder.h"
#include "io/onnx/file.h"
#include "rcuda/io/onnx.h"

namespace rcuda::io {
namespace onnx_export {
namespace {

constexpr int kMinOpset = 17, kMaxOpset = 21;

// The IR version each opset was released with (onnx/helper.py's VERSION_TABLE): a reader may
// refuse a model whose IR version is older than its opset's.
int64_t ir_version(int opset) { return opset <= 18 ? 8 : opset <= 20 ? 9 : 10; }

void fill_value_info(const graph::Value& v, const std::string& name,
                     const std::map<int64_t, std::string>* dynamic, onnx::ValueInfoProto* info) {
  info->set_name(name);
  onnx::TypeProto_Tensor* type = info->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx_dtype(v.dtype, "\"" + name + "\""));
  onnx::TensorShapeProto* shape = type->mutable_shape();
  for (size_t d = 0; d < v.shape.size(); ++d) {
    onnx::TensorShapeProto_Dimension* dim = shape->add_dim();
    if (dynamic != nullptr) {
      auto it = dynamic->find(static_cast<int64_t>(d));
      if (it != dynamic->end()) {
        dim->set_dim_param(it->second);
        continue;
      }
    }
    dim->set_dim_value(v.shape[d]);
  }
}

void check_options(const graph::Graph& g, const OnnxExportOptions& o,
                   const std::vector<std::string>& inputs,
                   const std::vector<std::string>& outputs) {
  RCUDA_CHECK(o.opset_version >= kMinOpset && o.opset_version <= kMaxOpset, ValueError, kOp,
              ": opset_version must be between ", kMinOpset, " and ", kMaxOpset, ", got ",
              o.opset_version);
  RCUDA_CHECK(o.input_names.empty() || o.input_names.size() == g.inputs.size(), ValueError, kOp,
              ": input_names has ", o.input_names.size(), " names for a graph of ", g.inputs.size(),
              " inputs");
  RCUDA_CHECK(o.output_names.empty() || o.output_names.size() == g.outputs.size(), ValueError, kOp,
              ": output_names has ", o.output_names.size(), " names for a graph of ",
              g.outputs.size(), " outputs");
  RCUDA_CHECK(!g.outputs.empty(), ValueError, kOp, ": the graph has no outputs");
  for (const auto& [name, dims] : o.dynamic_axes) {
    int value = -1;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] == name) value = g.inputs[i];
    for (size_t i = 0; i < outputs.size() && value < 0; ++i)
      if (outputs[i] == name) value = g.outputs[i];
    RCUDA_CHECK(value >= 0, ValueError, kOp, ": dynamic_axes names \"", name,
                "\", which is neither an input nor an output");
    const int64_t rank = static_cast<int64_t>(g.values.at(static_cast<size_t>(value)).shape.size());
    for (const auto& [dim, symbol] : dims) {
      RCUDA_CHECK(dim >= 0 && dim < rank, ValueError, kOp, ": dynamic_axes[\"", name,
                  "\"] has dim ", dim, ", out of range for its ", rank, " dims");
      RCUDA_CHECK(!symbol.empty(), ValueError, kOp, ": dynamic_axes[\"", name, "\"][", dim,
                  "] is an empty name");
    }
  }
}

// Graph inputs, then initializers for the parameters and constants that nodes read.
void add_inputs_and_initializers(const graph::Graph& g, const OnnxExportOptions& o,
                                 const std::vector<std::string>& inputs, Builder& b,
                                 onnx::GraphProto* graph) {
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const int v = g.inputs[i];
    b.set_name(v, inputs[i]);
    auto dyn = o.dynamic_axes.find(inputs[i]);
    fill_value_info(b.value(v), inputs[i], dyn == o.dynamic_axes.end() ? nullptr : &dyn->second,
                    graph->add_input());
  }
  for (size_t v = 0; v < g.values.size(); ++v) {
    const graph::Value& value = g.values[v];
    if (value.kind == graph::ValueKind::Parameter) b.set_name(static_cast<int>(v), value.name);
  }
  for (size_t v = 0; v < g.values.size(); ++v) {
    const graph::Value& value = g.values[v];
    const int id = static_cast<int>(v);
    if (value.kind == graph::ValueKind::Constant)
      b.set_fresh_name(id, "constant_" + std::to_string(v));
    if (value.kind != graph::ValueKind::Parameter && value.kind != graph::ValueKind::Constant)
      continue;
    if (!b.used(id)) continue;
    RCUDA_CHECK(value.tensor.defined(), ValueError, kOp, ": ", value.name,
                " has no tensor to write");
    fill_tensor_proto(value.tensor, b.name(id), graph->add_initializer());
  }
}

std::string default_output_name(size_t i) {
  return i == 0 ? "output" : "output_" + std::to_string(i + 1);
}

void add_nodes(const graph::Graph& g, Builder& b) {
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const graph::Node& node = g.nodes[n];
    RCUDA_CHECK(op_index(node.op) < kOpCount, InternalError, kOp, ": node ", n, " has no op");
    const ExportFn fn = export_function(node.op);
    RCUDA_CHECK(fn != nullptr, ValueError, kOp, ": op ", op_name(node.op),
                graph::in_module(node.scope), " has no ONNX form (opset ", b.opset(), ")");
    b.begin(node, static_cast<int>(n));
    fn(b);
  }
}

// The checker and strict shape inference: a model they refuse would fail in every reader, so
// export fails instead, with their message (which names the ONNX node, "linear_3/Gemm").
void check(onnx::ModelProto& model, int opset) {
  // The ONNX library rcuda links (Debian 12's, 1.12) knows opsets up to 17: newer opsets change
  // some ops' signatures (reductions take axes as an input from 18), which its checker would
  // refuse. Models of opset 18 to 21 are checked by the tests with Python's onnx.checker.
  if (opset > 17) return;
  try {
    onnx::checker::check_model(model);
    onnx::ShapeInferenceOptions options(/*check_type=*/true, /*strict_mode=*/1);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    throw ValueError(std::string(kOp) + ": the exported model fails ONNX's checks: " + e.what());
  }
}

// Inputs that R gave 1-based (indices shifted by index_from_one_based, which export takes off:
// the file's inputs are 0-based) are named in the metadata entry "rcuda.one_based_inputs", so
// that R's onnx_load takes them 1-based again, as the module that was exported did.
void mark_one_based_inputs(const graph::Graph& g, const std::vector<std::string>& input_names,
                           onnx::ModelProto* model) {
  std::string names;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    for (const graph::Node& node : g.nodes) {
      const AttributeValue* shift = node.attrs.find("one_based_index");
      if (shift == nullptr || !std::holds_alternative<bool>(*shift) || !std::get<bool>(*shift) ||
          node.inputs.empty() || node.inputs[0] != g.inputs[i])
        continue;
      names += (names.empty() ? "" : ",") + input_names[i];
      break;
    }
  if (names.empty()) return;
  onnx::StringStringEntryProto* entry = model->add_metadata_props();
  entry->set_key("rcuda.one_based_inputs");
  entry->set_value(names);
}

onnx::ModelProto build_model(const graph::Graph& g, const OnnxExportOptions& o) {
  std::vector<std::string> inputs = o.input_names, outputs = o.output_names;
  if (inputs.empty())
    for (int v : g.inputs) inputs.push_back(g.values.at(static_cast<size_t>(v)).name);
  if (outputs.empty())
    for (size_t i = 0; i < g.outputs.size(); ++i) outputs.push_back(default_output_name(i));
  check_options(g, o, inputs, outputs);

  onnx::ModelProto model;
  model.set_ir_version(ir_version(o.opset_version));
  model.set_producer_name(o.producer);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(o.opset_version);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("main");

  Builder b(g, o.opset_version, graph);
  add_inputs_and_initializers(g, o, inputs, b, graph);
  mark_one_based_inputs(g, inputs, &model);
  // An output that a node makes takes the output's name; one that is an input, a parameter or
  // another output already is passed through an Identity.
  std::vector<bool> through_identity(g.outputs.size(), false);
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const int v = g.outputs[i];
    const graph::Value& value = b.value(v);
    bool named = value.kind != graph::ValueKind::OpOutput;
    for (size_t j = 0; j < i && !named; ++j) named = g.outputs[j] == v;
    if (named) {
      through_identity[i] = true;
      RCUDA_CHECK(b.fresh(outputs[i]) == outputs[i], ValueError, kOp,
                  ": two values would be named \"", outputs[i], "\"");
    } else {
      b.set_name(v, outputs[i]);
    }
  }
  for (const graph::Node& node : g.nodes)
    for (int v : node.outputs)
      if (!b.name_set(v))
        b.set_fresh_name(v, std::string(op_name(node.op)) + "_" + std::to_string(v));

  add_nodes(g, b);
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const int v = g.outputs[i];
    if (through_identity[i]) {
      onnx::NodeProto* n = graph->add_node();
      n->set_op_type("Identity");
      n->set_name(outputs[i] + "/Identity");
      n->add_input(b.name(v));
      n->add_output(outputs[i]);
    }
    auto dyn = o.dynamic_axes.find(outputs[i]);
    fill_value_info(b.value(v), outputs[i], dyn == o.dynamic_axes.end() ? nullptr : &dyn->second,
                    graph->add_output());
  }
  check(model, o.opset_version);
  return model;
}

}  // namespace

}  // namespace onnx_export

std::string export_onnx_bytes(const graph::Graph& g, const OnnxExportOptions& options) {
  const onnx::ModelProto model = onnx_export::build_model(g, options);
  std::string bytes;
  RCUDA_CHECK(model.SerializeToString(&bytes), ValueError, onnx_export::kOp,
              ": the model cannot be serialized (over protobuf's 2 GB limit?)");
  return bytes;
}

void export_onnx(const graph::Graph& g, const std::string& path, const OnnxExportOptions& options) {
  onnx_export::write_file_atomically(path, export_onnx_bytes(g, options));
}

}  // namespace rcuda::io
