// CUDA-graph replay of a loaded model: for each input signature (dtypes and shapes) the model's
// run is captured once, after one eager warm-up run (cuBLAS and cuDNN set themselves up outside
// the capture); later runs with that signature copy their inputs into the captured ones, replay
// with one launch and return copies of the captured outputs. A run whose parameters require
// grad under grad mode runs eagerly (a replay records nothing), as does a signature whose capture
// failed (a node that reads a device value on the host): captures() says why.
#include "io/onnx/import/model_impl.h"
#include "rcuda/autograd/api.h"
#include "rcuda/backend/cuda_graph.h"
#include "rcuda/tensor/autograd_meta.h"

namespace rcuda::io {

struct OnnxModel::Impl::Captured {
  explicit Captured(int device) : graph(device) {}
  cuda::Graph graph;
  std::vector<Tensor> static_inputs, static_outputs;
  std::string signature;
  std::string error;  // why the capture failed ("" when it is replayable)
};

namespace {

std::string signature_of(const std::vector<Tensor>& inputs) {
  std::string s;
  for (const Tensor& t : inputs)
    s += std::string(dtype_name(t.dtype())) + shape_str(t.shape()) + ";";
  return s;
}

}  // namespace

std::vector<Tensor> OnnxModel::Impl::run_captured(const std::vector<Tensor>& inputs,
                                                  bool* replayed) const {
  *replayed = false;
  if (GradMode::is_enabled())
    for (const Value& v : values)
      if (v.kind == Kind::Initializer && v.tensor.requires_grad()) return {};
  NoGradGuard no_grad;
  const std::string signature = signature_of(inputs);
  std::lock_guard<std::mutex> lock(captured_mutex);
  std::shared_ptr<Captured>& c = captured[signature];
  if (!c) {
    c = std::make_shared<Captured>(device.index);
    c->signature = signature;
    for (const Tensor& t : inputs) c->static_inputs.push_back(clone(t));
    run_nodes(c->static_inputs);  // warm-up, outside the capture
    try {
      cuda::capture(c->graph, [&] { c->static_outputs = run_nodes(c->static_inputs); });
    } catch (const Error& e) {
      c->error = e.what();
      c->static_outputs.clear();
    }
  }
  if (!c->error.empty()) return {};
  for (size_t i = 0; i < inputs.size(); ++i) copy_(c->static_inputs[i], inputs[i]);
  c->graph.replay();
  std::vector<Tensor> out;
  for (const Tensor& t : c->static_outputs) out.push_back(clone(t));
  *replayed = true;
  return out;
}

void OnnxModel::set_cuda_graphs(bool enabled) {
  std::lock_guard<std::mutex> lock(impl_->captured_mutex);
  impl_->cuda_graphs = enabled;
  if (!enabled) impl_->captured.clear();
}

std::vector<OnnxModel::Capture> OnnxModel::captures() const {
  std::lock_guard<std::mutex> lock(impl_->captured_mutex);
  std::vector<Capture> out;
  for (const auto& [signature, c] : impl_->captured) out.push_back({signature, c->error});
  return out;
}

}  // namespace rcuda::io
