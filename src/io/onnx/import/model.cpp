// What a loaded ONNX model says about itself, and moving it between devices.
#include <sstream>

#include "io/onnx/import/import_table.h"
#include "io/onnx/import/model_impl.h"
#include "rcuda/autograd/api.h"
#include "rcuda/tensor/autograd_meta.h"

namespace rcuda::io {

std::string OnnxValueInfo::shape_string() const {
  if (!has_shape) return "(any shape)";
  std::string s = "[";
  for (size_t d = 0; d < dims.size(); ++d) {
    if (d > 0) s += ", ";
    if (!dim_names[d].empty())
      s += dim_names[d];
    else
      s += dims[d] >= 0 ? std::to_string(dims[d]) : "?";
  }
  return s + "]";
}

const std::vector<OnnxValueInfo>& OnnxModel::inputs() const { return impl_->inputs; }
const std::vector<OnnxValueInfo>& OnnxModel::outputs() const { return impl_->outputs; }
int64_t OnnxModel::opset() const { return impl_->opset; }
const std::string& OnnxModel::name() const { return impl_->name; }
std::string OnnxModel::producer() const { return impl_->producer; }
Device OnnxModel::device() const { return impl_->device; }
const std::vector<std::pair<std::string, std::string>>& OnnxModel::metadata() const {
  return impl_->metadata;
}

std::vector<std::pair<std::string, int>> OnnxModel::op_counts() const { return impl_->op_counts; }

std::vector<std::pair<std::string, Tensor>> OnnxModel::initializers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const Impl::Value& v : impl_->values)
    if (v.kind == Impl::Kind::Initializer) out.emplace_back(v.name, v.tensor);
  return out;
}

std::vector<std::pair<std::string, Tensor>> OnnxModel::parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& [name, t] : initializers())
    if (is_floating(t.dtype())) out.emplace_back(name, t);
  return out;
}

void OnnxModel::to(Device device) {
  check_device(device, impl_->name);
  rcuda::NoGradGuard no_grad;
  for (Impl::Value& v : impl_->values) {
    if (v.kind != Impl::Kind::Initializer && v.kind != Impl::Kind::Constant) continue;
    const Device target = !device.is_cpu() && Impl::stays_on_host(v.tensor) ? Device() : device;
    if (v.tensor.device() == target) continue;
    // In place, as nn_module$to moves parameters: handles held elsewhere (R's parameters, an
    // optimizer's) see the moved tensor, and a tensor that requires grad still does.
    const Tensor grad = v.tensor.grad();
    v.tensor.set_data(rcuda::to(v.tensor, target));
    if (grad.defined()) v.tensor.set_grad(rcuda::to(grad, target));
  }
  impl_->device = device;
  impl_->lay_out_for_device();
}

std::string OnnxModel::summary() const {
  const Impl& m = *impl_;
  std::ostringstream s;
  s << "ONNX model " << m.name;
  if (!m.producer.empty()) s << " (from " << m.producer << ")";
  s << ", opset " << m.opset << ", on " << m.device.str() << "\n";
  s << "inputs:\n";
  for (const OnnxValueInfo& v : m.inputs)
    s << "  " << v.name << ": " << dtype_name(v.dtype) << " " << v.shape_string() << "\n";
  s << "outputs:\n";
  for (const OnnxValueInfo& v : m.outputs)
    s << "  " << v.name << ": " << dtype_name(v.dtype) << " " << v.shape_string() << "\n";
  int64_t count = 0;
  auto params = parameters();
  for (auto& p : params) count += p.second.numel();
  s << "parameters: " << count << " in " << params.size() << " tensors\n";
  s << "ops:";
  for (const auto& [op, n] : m.op_counts) s << " " << op << " " << n << ",";
  std::string text = s.str();
  if (text.back() == ',') text.pop_back();
  return text + "\n";
}

Tensor load_onnx_tensor(const std::string& path) {
  onnx::TensorProto proto;
  RCUDA_CHECK(proto.ParseFromString(read_file(path)), FileError, path,
              ": not a serialized ONNX TensorProto");
  return onnx_import::tensor_from_proto(proto, folder_of(path), path);
}

std::vector<std::string> onnx_supported_ops() { return onnx_import::supported_op_types(); }

}  // namespace rcuda::io
