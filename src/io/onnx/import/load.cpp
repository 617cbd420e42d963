// Loading an ONNX model: parse the ModelProto (ONNX's generated classes), read initializers
// once, order the nodes (refusing cycles and dangling names), evaluate Constant nodes and bind
// every other node to its kernel through the import table. Every error names the file, and for a
// node its name and op.
#include <onnx/defs/schema.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "io/onnx/import/import_table.h"
#include "io/onnx/import/model_impl.h"
#include "io/onnx/import/ops_nn.h"
#include "rcuda/autograd/api.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/tensor/autograd_meta.h"
#include "rcuda/tensor/memory_format.h"

namespace rcuda::io {
namespace {

using Impl = OnnxModel::Impl;
using onnx_import::NodeReader;

// The newest opset whose operator versions rcuda's table knows (op_versions.inc).
constexpr int64_t kNewestOpset = 21;

std::string node_label(const onnx::NodeProto& node, int index) {
  const std::string name = node.name().empty() ? "#" + std::to_string(index) : node.name();
  return "node '" + name + "' (" + node.op_type() + ")";
}

OnnxValueInfo value_info(const onnx::ValueInfoProto& v, const std::string& where) {
  OnnxValueInfo info;
  info.name = v.name();
  RCUDA_CHECK(v.type().has_tensor_type(), ValueError, where, ": '", v.name(),
              "' is not a tensor (sequences, maps and optionals are not supported by rcuda's "
              "ONNX import)");
  const onnx::TypeProto::Tensor& t = v.type().tensor_type();
  info.dtype = onnx_import::dtype_from_onnx(t.elem_type(), where + ": '" + v.name() + "'");
  info.has_shape = t.has_shape();
  for (const onnx::TensorShapeProto::Dimension& d : t.shape().dim()) {
    info.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    info.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
  }
  return info;
}

// The value of a Constant node, read at load.
Tensor constant_value(const NodeReader& node) {
  if (node.has("value")) return node.tensor("value");
  if (node.has("value_float"))
    return ops::scalar_tensor(node.f("value_float"), DType::Float32, Device());
  if (node.has("value_int")) return ops::scalar_tensor(node.i("value_int"), DType::Int64, Device());
  if (node.has("value_floats")) {
    std::vector<float> v;
    for (double x : node.floats("value_floats")) v.push_back(static_cast<float>(x));
    return ops::from_data(v.data(), {static_cast<int64_t>(v.size())}, DType::Float32);
  }
  if (node.has("value_ints")) {
    std::vector<int64_t> v = node.ints("value_ints");
    return ops::from_data(v.data(), {static_cast<int64_t>(v.size())}, DType::Int64);
  }
  if (node.has("sparse_value")) node.unsupported("a sparse Constant");
  if (node.has("value_string") || node.has("value_strings")) node.unsupported("a string Constant");
  node.fail("has none of the attributes value, value_float(s), value_int(s)");
}

// The model's value ids by name; each name is defined once.
class Names {
 public:
  explicit Names(Impl& m) : m_(m) {}
  int define(const std::string& name, Impl::Kind kind, const std::string& where) {
    RCUDA_CHECK(!name.empty(), ValueError, where, ": a value has an empty name");
    RCUDA_CHECK(ids_.count(name) == 0, ValueError, where, ": '", name,
                "' is defined twice (ONNX graphs are in single static assignment form)");
    ids_[name] = static_cast<int>(m_.values.size());
    Impl::Value v;
    v.name = name;
    v.kind = kind;
    m_.values.push_back(std::move(v));
    return ids_[name];
  }
  int find(const std::string& name) const {
    auto it = ids_.find(name);
    return it == ids_.end() ? -1 : it->second;
  }

 private:
  Impl& m_;
  std::map<std::string, int> ids_;
};

// Orders the nodes so that each follows the makers of its inputs (ONNX asks files to be sorted;
// some writers are not). A name no one makes is a missing initializer; nodes left over when no
// more can run lie on a cycle.
std::vector<int> node_order(const onnx::GraphProto& g, const Names& known,
                            const std::string& file) {
  std::map<std::string, int> maker;
  for (int n = 0; n < g.node_size(); ++n)
    for (const std::string& out : g.node(n).output()) {
      if (out.empty()) continue;
      RCUDA_CHECK(known.find(out) < 0 && maker.emplace(out, n).second, ValueError, file, ": ",
                  node_label(g.node(n), n), " writes '", out,
                  "', which another node, an input or an initializer already defines");
    }
  std::vector<std::vector<int>> users(static_cast<size_t>(g.node_size()));
  std::vector<int> waiting(static_cast<size_t>(g.node_size()), 0);
  for (int n = 0; n < g.node_size(); ++n) {
    const onnx::NodeProto& node = g.node(n);
    RCUDA_CHECK(node.domain().empty() || node.domain() == "ai.onnx", ValueError, file, ": ",
                node_label(node, n), ": domain '", node.domain(),
                "' is not supported by rcuda's ONNX import (only ONNX's default domain)");
    for (const std::string& in : node.input()) {
      if (in.empty() || known.find(in) >= 0) continue;
      auto it = maker.find(in);
      RCUDA_CHECK(it != maker.end(), ValueError, file, ": ", node_label(node, n), " reads '", in,
                  "', which is not a model input, an initializer or any node's output (a "
                  "missing initializer?)");
      users[static_cast<size_t>(it->second)].push_back(n);
      ++waiting[static_cast<size_t>(n)];
    }
  }
  std::vector<int> order, ready;
  for (int n = g.node_size() - 1; n >= 0; --n)
    if (waiting[static_cast<size_t>(n)] == 0) ready.push_back(n);
  while (!ready.empty()) {
    const int n = ready.back();
    ready.pop_back();
    order.push_back(n);
    // Users become ready in file order, so a sorted file keeps its order.
    for (auto it = users[static_cast<size_t>(n)].rbegin();
         it != users[static_cast<size_t>(n)].rend(); ++it)
      if (--waiting[static_cast<size_t>(*it)] == 0) ready.push_back(*it);
  }
  if (static_cast<int>(order.size()) < g.node_size()) {
    std::string cycle;
    for (int n = 0; n < g.node_size(); ++n)
      if (waiting[static_cast<size_t>(n)] > 0)
        cycle += (cycle.empty() ? "" : ", ") + node_label(g.node(n), n);
    throw ValueError(file + ": the graph has a cycle through " + cycle);
  }
  return order;
}

// Checks the node's input and output counts against ONNX's schema of its op (Debian's libonnx
// knows opsets up to 17): too few inputs, a required input left empty, or more inputs or outputs
// than the op has. A newer op version than the library knows may have more optional inputs
// (reductions' axes in 18), so only its minimum counts are checked. Kernels then read the inputs
// the schema requires without checking for them.
void check_arity(const onnx::NodeProto& proto, int version, const std::string& where) {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(proto.op_type(), version);
  if (schema == nullptr) return;
  const bool exact = schema->since_version() == version;
  const int inputs = proto.input_size(), outputs = proto.output_size();
  RCUDA_CHECK(inputs >= schema->min_input() && (!exact || inputs <= schema->max_input()),
              ValueError, where, ": has ", inputs, " inputs, the op takes ", schema->min_input(),
              exact && schema->max_input() != schema->min_input()
                  ? " to " + std::to_string(schema->max_input())
                  : std::string(exact ? "" : " or more"));
  RCUDA_CHECK(outputs >= 1 && (!exact || outputs <= schema->max_output()), ValueError, where,
              ": has ", outputs, " outputs, the op makes ", schema->min_output(),
              schema->max_output() != schema->min_output()
                  ? " to " + std::to_string(schema->max_output())
                  : std::string());
  const auto& formal = schema->inputs();
  for (int i = 0; i < inputs && i < static_cast<int>(formal.size()); ++i)
    RCUDA_CHECK(!proto.input(i).empty() ||
                    formal[static_cast<size_t>(i)].GetOption() != onnx::OpSchema::Single,
                ValueError, where, ": its input ", i, " ('",
                formal[static_cast<size_t>(i)].GetName(), "') is required but left empty");
}

Tensor place(const Tensor& t, Device device) {
  if (device.is_cpu() || Impl::stays_on_host(t)) return t;
  return ops::to(t, device);
}

// Note [Fused Conv and Relu]
// A Conv whose output only a Relu reads (and the graph does not output) runs as one kernel,
// relu(conv + bias): on CUDA one cuDNN graph with the bias and relu in the convolution's epilogue
// (Note [Fused convolution epilogue] in conv_cudnn.cpp), and on the CPU one oneDNN primitive with
// a bias and a relu post-op: two passes over the activation fewer per convolution, which is most
// of ResNet's. The Relu node stays, passing its input on, so the
// model's nodes and op counts are the file's. The fused kernel runs below the funnel, so it is
// taken only for inference (nothing to record, no autocast, no tracer); otherwise the kernel
// calls conv2d and relu as usual. On the CPU, oneDNN adds the bias and applies the relu in the
// convolution's epilogue too, before the one rounding of the sum, so the results can differ in
// the last bit from three passes: models that rcuda exported (producer "rcuda") are not fused on
// the CPU, so that they reproduce rcuda's own outputs to the bit, as Note [Channels-last
// convolutions] keeps them NCHW. RCUDA_ONNX_FUSE=0 turns fusion off everywhere, =1 fuses those
// models too.
// Returns the proto indices of the Conv nodes to fuse and of the Relu nodes they absorb.
std::pair<std::set<int>, std::set<int>> conv_relu_pairs(const onnx::GraphProto& g, const Impl& m) {
  const char* env = std::getenv("RCUDA_ONNX_FUSE");
  const std::string choice = env != nullptr ? env : "";
  if (choice == "0") return {};
  if (m.device.is_cpu() && m.producer.rfind("rcuda", 0) == 0 && choice != "1") return {};
  std::map<std::string, std::vector<int>> readers;
  for (int n = 0; n < g.node_size(); ++n)
    for (const std::string& in : g.node(n).input())
      if (!in.empty()) readers[in].push_back(n);
  std::set<std::string> graph_outputs;
  for (const onnx::ValueInfoProto& out : g.output()) graph_outputs.insert(out.name());
  std::set<int> convs, relus;
  for (int n = 0; n < g.node_size(); ++n) {
    const onnx::NodeProto& conv = g.node(n);
    if (conv.op_type() != "Conv" || conv.output_size() != 1 || conv.output(0).empty() ||
        graph_outputs.count(conv.output(0)) != 0)
      continue;
    const auto r = readers.find(conv.output(0));
    if (r == readers.end() || r->second.size() != 1) continue;
    const onnx::NodeProto& relu = g.node(r->second[0]);
    if (relu.op_type() != "Relu" || relu.input_size() != 1) continue;
    convs.insert(n);
    relus.insert(r->second[0]);
  }
  return {convs, relus};
}

void bind_nodes(const onnx::GraphProto& g, const std::vector<int>& order, Names& names, Impl& m) {
  std::map<std::string, int> counts;
  const auto [fused_convs, absorbed_relus] = conv_relu_pairs(g, m);
  for (int n : order) {
    const onnx::NodeProto& proto = g.node(n);
    for (const onnx::AttributeProto& a : proto.attribute())
      RCUDA_CHECK(
          a.type() != onnx::AttributeProto::GRAPH && a.type() != onnx::AttributeProto::GRAPHS,
          ValueError, m.name, ": ", node_label(proto, n),
          ": subgraphs (If, Loop, Scan) are not supported by rcuda's ONNX import");
    Impl::Node node;
    node.op_type = proto.op_type();
    node.name = proto.name();
    node.where = m.name + ": " + node_label(proto, n);
    node.version = onnx_import::op_version(proto.op_type(), m.opset);
    RCUDA_CHECK(node.version != -1, ValueError, node.where, ": '", proto.op_type(),
                "' is not an operator of ONNX's default domain (up to opset ", kNewestOpset, ")");
    RCUDA_CHECK(node.version != 0, ValueError, node.where, ": '", proto.op_type(),
                "' does not exist yet at the model's opset ", m.opset);
    std::vector<const Tensor*> constants;
    for (const std::string& in : proto.input()) {
      const int id = in.empty() ? -1 : names.find(in);
      node.inputs.push_back(id);
      const bool known =
          id >= 0 && (m.values[static_cast<size_t>(id)].kind == Impl::Kind::Initializer ||
                      m.values[static_cast<size_t>(id)].kind == Impl::Kind::Constant);
      constants.push_back(known ? &m.values[static_cast<size_t>(id)].tensor : nullptr);
    }
    NodeReader reader(proto, node.version, node.where, constants);
    ++counts[proto.op_type()];
    if (counts[proto.op_type()] == 1) m.op_counts.emplace_back(proto.op_type(), 0);
    if (proto.op_type() == "Constant") {
      RCUDA_CHECK(proto.output_size() == 1, ValueError, node.where, ": has ", proto.output_size(),
                  " outputs, expected 1");
      const int id = names.define(proto.output(0), Impl::Kind::Constant, node.where);
      m.values[static_cast<size_t>(id)].tensor = place(constant_value(reader), m.device);
      continue;
    }
    const onnx_import::ImportOp* op = onnx_import::find_import_op(proto.op_type());
    if (op == nullptr) reader.unsupported("the operator " + proto.op_type());
    if (node.version < op->min_version)
      reader.unsupported("version " + std::to_string(node.version) + " of " + proto.op_type() +
                         " (the model's opset " + std::to_string(m.opset) +
                         "; rcuda runs version " + std::to_string(op->min_version) + " and later)");
    check_arity(proto, node.version, node.where);
    if (fused_convs.count(n) != 0)
      node.kernel = onnx_import::nn::make_conv_relu(reader);
    else if (absorbed_relus.count(n) != 0)
      node.kernel = [](const std::vector<Tensor>& in, const onnx_import::RunContext&) {
        return std::vector<Tensor>{in[0]};
      };
    else
      node.kernel = op->make(reader);
    node.host_inputs = reader.host_inputs();
    for (const std::string& out : proto.output())
      node.outputs.push_back(out.empty() ? -1
                                         : names.define(out, Impl::Kind::NodeOutput, node.where));
    m.nodes.push_back(std::move(node));
  }
  for (auto& [op, count] : m.op_counts) count = counts[op];
}

}  // namespace

// Note [Channels-last convolutions]
// The 4-D weights of Conv nodes are laid out channels-last (NHWC) at load, in place, and each
// convolution takes its input channels-last (once, at the first convolution: the layout then
// flows through Relu, Add and the next convolutions, as in PyTorch's channels_last models).
// On CUDA this runs cuDNN's NHWC kernels, the tensor cores' layout: on an H100, ResNet-18 at
// batch 64 went from 0.90 to 1.22 of PyTorch's speed in float32 and from 0.70 to 0.95 in
// float16. On the CPU, oneDNN computes in its blocked layout either way (the same results, to
// the bit) and reorders NHWC activations into it faster than NCHW ones: batch 64 went from 48
// to 56 img/s on two cores. But the CPU's batch norm, pools and elementwise loops on NHWC
// tensors sum and round in another order than on NCHW ones, so a model that rcuda exported
// (producer "rcuda") keeps NCHW on the CPU: it was traced in that layout, and loaded back it
// gives rcuda's own outputs to the bit. RCUDA_ONNX_CHANNELS_LAST=0 keeps the file's layout
// everywhere, =1 lays out rcuda's own exports too.
void OnnxModel::Impl::lay_out_for_device() {
  const char* env = std::getenv("RCUDA_ONNX_CHANNELS_LAST");
  const std::string choice = env != nullptr ? env : "";
  if (choice == "0") return;
  if (device.is_cpu() && producer.rfind("rcuda", 0) == 0 && choice != "1") return;
  NoGradGuard no_grad;
  for (const Node& node : nodes) {
    if (node.op_type != "Conv" || node.inputs.size() < 2 || node.inputs[1] < 0) continue;
    Value& w = values[static_cast<size_t>(node.inputs[1])];
    if (w.kind != Kind::Initializer || w.tensor.dim() != 4 || !is_floating(w.tensor.dtype()) ||
        suggest_memory_format(w.tensor) == MemoryFormat::ChannelsLast)
      continue;
    // In place: the parameter keeps its identity.
    w.tensor.set_data(rcuda::contiguous(w.tensor, MemoryFormat::ChannelsLast));
  }
}

void check_device(Device device, const std::string& name) {
  if (device.is_cpu()) return;
  const int count = cuda::device_count();
  RCUDA_CHECK(count > 0, DeviceError, name, ": cannot load onto ", device.str(),
              ": no CUDA device (", cuda::unavailable_reason(), ")");
  RCUDA_CHECK(device.index < count, DeviceError, name, ": cannot load onto ", device.str(),
              ": there are ", count, " CUDA devices");
}

OnnxModel OnnxModel::load_bytes(const std::string& bytes, const std::string& name,
                                const std::string& folder, const OnnxLoadOptions& options) {
  check_device(options.device, name);
  onnx::ModelProto model;
  RCUDA_CHECK(model.ParseFromString(bytes), FileError, name,
              ": not an ONNX model (the protobuf does not parse: a truncated or corrupt file?)");
  auto m = std::make_shared<Impl>();
  m->name = name;
  m->device = options.device;
  m->cuda_graphs = options.cuda_graphs;
  m->producer = model.producer_name() +
                (model.producer_version().empty() ? "" : " " + model.producer_version());
  for (const onnx::OperatorSetIdProto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") m->opset = o.version();
  for (const onnx::StringStringEntryProto& e : model.metadata_props())
    m->metadata.emplace_back(e.key(), e.value());
  RCUDA_CHECK(model.has_graph(), FileError, name, ": has no graph");
  if (m->opset == 0) {
    std::string domains;
    for (const onnx::OperatorSetIdProto& o : model.opset_import())
      domains += (domains.empty() ? "" : ", ") + o.domain();
    RCUDA_CHECK(domains.empty(), ValueError, name, ": imports only the domains ", domains,
                ", which are not supported by rcuda's ONNX import (only ONNX's default domain)");
    throw ValueError(name + ": imports no opset of ONNX's default domain");
  }
  RCUDA_CHECK(m->opset <= kNewestOpset, ValueError, name, ": opset ", m->opset,
              " is newer than rcuda's ONNX import knows (up to ", kNewestOpset, ")");
  const onnx::GraphProto& g = model.graph();

  Names names(*m);
  for (const onnx::TensorProto& init : g.initializer()) {
    const std::string where = name + ": initializer '" + init.name() + "'";
    const int id = names.define(init.name(), Impl::Kind::Initializer, where);
    m->values[static_cast<size_t>(id)].tensor =
        place(onnx_import::tensor_from_proto(init, folder, where), m->device);
  }
  RCUDA_CHECK(g.sparse_initializer_size() == 0, ValueError, name,
              ": sparse initializers are not supported by rcuda's ONNX import");
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (names.find(in.name()) >= 0) continue;  // before IR 4, initializers are listed as inputs
    m->inputs.push_back(value_info(in, name + ": input"));
    m->input_ids.push_back(names.define(in.name(), Impl::Kind::Input, name + ": input"));
  }
  bind_nodes(g, node_order(g, names, name), names, *m);
  for (const onnx::ValueInfoProto& out : g.output()) {
    const int id = names.find(out.name());
    RCUDA_CHECK(id >= 0, ValueError, name, ": output '", out.name(), "' is made by no node");
    m->outputs.push_back(value_info(out, name + ": output"));
    m->output_ids.push_back(id);
    m->values[static_cast<size_t>(id)].is_output = true;
  }
  for (int n = 0; n < static_cast<int>(m->nodes.size()); ++n)
    for (int id : m->nodes[static_cast<size_t>(n)].inputs)
      if (id >= 0) m->values[static_cast<size_t>(id)].last_use = n;
  m->lay_out_for_device();
  return OnnxModel(std::move(m));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  RCUDA_CHECK(in.good(), FileError, path, ": cannot open the file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  RCUDA_CHECK(!in.bad(), FileError, path, ": cannot read the file");
  return bytes.str();
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

OnnxModel OnnxModel::load(const std::string& path, const OnnxLoadOptions& options) {
  return load_bytes(read_file(path), path, folder_of(path), options);
}

}  // namespace rcuda::io
