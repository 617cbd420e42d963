// Running a loaded ONNX model: check the inputs against the file's declarations, then run each
// node's kernel in order, moving data inputs to the device of the node's other data inputs
// (Note [Values read on the host] in kernel.h), and drop each value after its last reader.
#include <map>

#include "io/onnx/import/model_impl.h"
#include "rcuda/autograd/api.h"

namespace rcuda::io {
namespace {

using Impl = OnnxModel::Impl;

// The same error type as `e`, its message after `prefix`: a kernel's error names the op's
// arguments, the prefix names the file and the node.
[[noreturn]] void rethrow_with(const Error& e, const std::string& prefix) {
  const std::string what = prefix + ": " + e.what();
  if (dynamic_cast<const ShapeError*>(&e)) throw ShapeError(what);
  if (dynamic_cast<const DTypeError*>(&e)) throw DTypeError(what);
  if (dynamic_cast<const DeviceError*>(&e)) throw DeviceError(what);
  if (dynamic_cast<const IndexError*>(&e)) throw IndexError(what);
  if (dynamic_cast<const CudaError*>(&e)) throw CudaError(what);
  if (dynamic_cast<const FileError*>(&e)) throw FileError(what);
  if (dynamic_cast<const InternalError*>(&e)) throw InternalError(what);
  if (auto* oom = dynamic_cast<const OutOfMemoryError*>(&e))
    throw OutOfMemoryError(what, oom->requested_bytes, oom->free_bytes, oom->total_bytes);
  throw ValueError(what);
}

void check_input(const OnnxValueInfo& info, const Tensor& t, const std::string& model,
                 std::map<std::string, int64_t>& symbols) {
  const std::string where = model + ": input '" + info.name + "'";
  RCUDA_CHECK(t.defined(), ValueError, where, " is missing (expected ", info.shape_string(), ")");
  RCUDA_CHECK(t.dtype() == info.dtype, DTypeError, where, " has dtype ", dtype_name(t.dtype()),
              ", the model expects ", dtype_name(info.dtype), " of shape ", info.shape_string());
  if (!info.has_shape) return;
  RCUDA_CHECK(t.dim() == static_cast<int64_t>(info.dims.size()), ValueError, where, " has shape ",
              shape_str(t.shape()), ", the model expects ", info.shape_string());
  for (size_t d = 0; d < info.dims.size(); ++d) {
    const int64_t got = t.size(static_cast<int64_t>(d));
    RCUDA_CHECK(info.dims[d] < 0 || info.dims[d] == got, ValueError, where, " has shape ",
                shape_str(t.shape()), ", the model expects ", info.shape_string());
    if (info.dim_names[d].empty()) continue;
    auto [it, first] = symbols.emplace(info.dim_names[d], got);
    RCUDA_CHECK(first || it->second == got, ValueError, where, " has shape ", shape_str(t.shape()),
                ": its dim ", d, " ('", info.dim_names[d], "') is ", got,
                ", another input gave it ", it->second);
  }
}

// The device a node's data inputs meet on: the first CUDA one's, else the CPU.
Device meeting_device(const Impl::Node& node, const std::vector<Tensor>& in) {
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].defined() && !node.host_inputs[i] && in[i].device().is_cuda()) return in[i].device();
  return Device();
}

}  // namespace

std::vector<Tensor> OnnxModel::run(const std::vector<Tensor>& inputs) const {
  const Impl& m = *impl_;
  RCUDA_CHECK(inputs.size() == m.inputs.size(), ValueError, m.name, ": the model takes ",
              m.inputs.size(), " input(s), got ", inputs.size());
  std::map<std::string, int64_t> symbols;
  std::vector<Tensor> placed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_input(m.inputs[i], inputs[i], m.name, symbols);
    const Tensor& t = inputs[i];
    placed.push_back(t.device() == m.device ? t : rcuda::to(t, m.device));
  }
  if (m.cuda_graphs && m.device.is_cuda()) {
    bool replayed = false;
    std::vector<Tensor> out = m.run_captured(placed, &replayed);
    if (replayed) return out;
  }
  return m.run_nodes(placed);
}

std::vector<Tensor> OnnxModel::Impl::run_nodes(const std::vector<Tensor>& inputs) const {
  const Impl& m = *this;
  std::vector<Tensor> values(m.values.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    values[static_cast<size_t>(m.input_ids[i])] = inputs[i];
  for (size_t v = 0; v < m.values.size(); ++v)
    if (m.values[v].kind == Impl::Kind::Initializer || m.values[v].kind == Impl::Kind::Constant)
      values[v] = m.values[v].tensor;

  const onnx_import::RunContext ctx{m.device};
  for (size_t n = 0; n < m.nodes.size(); ++n) {
    const Impl::Node& node = m.nodes[n];
    std::vector<Tensor> in(node.inputs.size());
    for (size_t i = 0; i < in.size(); ++i) {
      const int id = node.inputs[i];
      if (id < 0) continue;
      in[i] = values[static_cast<size_t>(id)];
      RCUDA_CHECK(in[i].defined(), ValueError, node.where, ": its input '",
                  m.values[static_cast<size_t>(id)].name,
                  "' is an optional output its maker did not produce");
    }
    const Device dev = meeting_device(node, in);
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].defined() && !node.host_inputs[i] && in[i].device() != dev)
        in[i] = rcuda::to(in[i], dev);
    std::vector<Tensor> out;
    try {
      out = node.kernel(in, ctx);
    } catch (const Error& e) {
      if (std::string(e.what()).rfind(node.where, 0) == 0) throw;  // the kernel named the node
      rethrow_with(e, node.where);
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const int id = node.outputs[o];
      if (id < 0) continue;
      if (o < out.size()) values[static_cast<size_t>(id)] = std::move(out[o]);
    }
    // Drop what no later node reads (outputs and initializers stay).
    for (int id : node.inputs) {
      if (id < 0) continue;
      const Impl::Value& v = m.values[static_cast<size_t>(id)];
      if (v.last_use == static_cast<int>(n) && !v.is_output && v.kind != Impl::Kind::Initializer &&
          v.kind != Impl::Kind::Constant)
        values[static_cast<size_t>(id)] = Tensor();
    }
  }
  std::vector<Tensor> outputs;
  for (size_t o = 0; o < m.output_ids.size(); ++o) {
    const Tensor& t = values[static_cast<size_t>(m.output_ids[o])];
    RCUDA_CHECK(t.defined(), ValueError, m.name, ": output '", m.outputs[o].name,
                "' was not produced (an optional output of its node)");
    // Shapes computed on the host come back on the model's device too, as every output does.
    outputs.push_back(t.device() == m.device ? t : rcuda::to(t, m.device));
  }
  return outputs;
}

}  // namespace rcuda::io
