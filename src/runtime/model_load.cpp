// ServedModel::load: one io::OnnxModel per instance on its device, the config completed from the
// file and checked against it, CUDA graphs captured for the configured batch sizes; and the
// accessors.
#include <algorithm>
#include <string>
#include <utility>

#include "rcuda/backend/cuda.h"
#include "rcuda/core/error.h"
#include "rcuda/ops/creation.h"
#include "rcuda/tensor/autograd_meta.h"
#include "runtime/served_model.h"

namespace rcuda::runtime {
namespace {

std::string names_of(const std::vector<io::OnnxValueInfo>& infos) {
  std::string out;
  for (const io::OnnxValueInfo& v : infos) out += (out.empty() ? "" : ", ") + v.name;
  return out;
}

// The file's declaration as the config states it: without the batch dim when batched.
TensorConfig from_file(const io::OnnxValueInfo& info, const ModelConfig& config,
                       const std::string& where, const char* role) {
  RCUDA_CHECK(info.has_shape, ValueError, where, ": ", role, " '", info.name,
              "' of the file has no shape; give its dims in config.json");
  TensorConfig t{info.name, info.dtype, info.dims};
  if (config.max_batch_size > 0) {
    RCUDA_CHECK(!info.dims.empty() && info.dims[0] == -1, ValueError, where, ": max_batch_size is ",
                config.max_batch_size, ", but ", role, " '", info.name, "' of the file has shape ",
                info.shape_string(),
                ": a batched model needs a symbolic first dim (the batch), or max_batch_size 0");
    t.dims.erase(t.dims.begin());
  }
  return t;
}

// Config entries checked against the file's; those the config leaves out come from the file.
// The result follows the file's order, which is the order OnnxModel::run takes and returns.
std::vector<TensorConfig> complete(const std::vector<TensorConfig>& listed,
                                   const std::vector<io::OnnxValueInfo>& file,
                                   const ModelConfig& config, const std::string& where,
                                   const char* role) {
  for (const TensorConfig& c : listed)
    RCUDA_CHECK(std::any_of(file.begin(), file.end(),
                            [&](const io::OnnxValueInfo& v) { return v.name == c.name; }),
                ValueError, where, ": config.json ", role, " '", c.name, "' is not an ", role,
                " of the file (its ", role, "s: ", names_of(file), ")");
  std::vector<TensorConfig> out;
  for (const io::OnnxValueInfo& info : file) {
    auto given = std::find_if(listed.begin(), listed.end(),
                              [&](const TensorConfig& c) { return c.name == info.name; });
    if (given == listed.end()) {
      out.push_back(from_file(info, config, where, role));
      continue;
    }
    RCUDA_CHECK(given->dtype == info.dtype, ValueError, where, ": config.json ", role, " '",
                info.name, "' is ", triton_type_name(given->dtype), " but the file's is ",
                dtype_name(info.dtype));
    if (!info.has_shape) {
      out.push_back(*given);
      continue;
    }
    TensorConfig t = from_file(info, config, where, role);
    bool agree = t.dims.size() == given->dims.size();
    for (size_t d = 0; agree && d < t.dims.size(); ++d) {
      agree = t.dims[d] == given->dims[d] || t.dims[d] == -1 || given->dims[d] == -1;
      if (t.dims[d] == -1) t.dims[d] = given->dims[d];  // the config may fix a free size
    }
    RCUDA_CHECK(agree, ValueError, where, ": config.json ", role, " '", info.name, "' has dims ",
                shape_str(given->dims), " but the file's are ", shape_str(t.dims),
                config.max_batch_size > 0 ? " (without the batch dim)" : "");
    out.push_back(std::move(t));
  }
  return out;
}

// A FileError stays one (the file is missing or unreadable); any other error from the load means
// the model cannot be served as configured.
template <typename F>
auto naming(const std::string& where, F f) {
  try {
    return f();
  } catch (const FileError& e) {
    throw FileError(where + ": " + e.what());
  } catch (const Error& e) {
    throw ValueError(where + ": " + e.what());
  }
}

Device best_device() {
  return cuda::device_count() > 0 ? Device(DeviceType::CUDA, 0) : Device(DeviceType::CPU);
}

// Runs each configured batch size once with zeros, so that its CUDA graph is captured at load
// and the first request of that size replays it. An input with a free non-batch size has no
// shape to capture ahead: its graphs are captured at first use.
void capture_graphs(const Instance& instance, const ModelConfig& config) {
  for (const TensorConfig& input : config.inputs)
    if (std::find(input.dims.begin(), input.dims.end(), -1) != input.dims.end()) return;
  NoGradGuard no_grad;
  for (int64_t batch : config.cuda_graphs) {
    std::vector<Tensor> zeros;
    for (const TensorConfig& input : config.inputs) {
      Shape shape{batch};
      shape.insert(shape.end(), input.dims.begin(), input.dims.end());
      zeros.push_back(ops::zeros(shape, TensorOptions(input.dtype, instance.device)));
    }
    instance.model.run(zeros);
  }
}

}  // namespace

std::string ServedModel::Impl::where() const {
  return "model '" + config.name + "' version " + version_string;
}

std::shared_ptr<ServedModel> ServedModel::load(const ModelConfig& config,
                                               const std::string& onnx_path, int64_t version) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->version = version;
  impl->version_string = std::to_string(version);
  const std::string where = impl->where();
  ModelConfig& c = impl->config;

  // Where instances go: a group without devices (KIND_AUTO, or no instance_group) takes the
  // best device. The completed config says where they went.
  if (c.instance_groups.empty()) c.instance_groups.emplace_back();
  for (InstanceGroup& g : c.instance_groups)
    if (g.devices.empty()) g.devices = {best_device()};

  const bool graphs = !c.cuda_graphs.empty();
  for (const InstanceGroup& g : c.instance_groups)
    for (const Device& device : g.devices)
      for (int k = 0; k < g.count; ++k) {
        io::OnnxLoadOptions options;
        options.device = device;
        options.cuda_graphs = graphs && device.is_cuda();
        io::OnnxModel model =
            naming(where, [&] { return io::OnnxModel::load(onnx_path, options); });
        impl->instances.push_back(
            std::make_unique<Instance>(Instance{std::move(model), device, {}}));
      }

  const io::OnnxModel& first = impl->instances.front()->model;
  c.inputs = complete(config.inputs, first.inputs(), c, where, "input");
  c.outputs = complete(config.outputs, first.outputs(), c, where, "output");
  for (const auto& instance : impl->instances)
    if (graphs && instance->device.is_cuda())
      naming(where + " (capturing CUDA graphs on " + instance->device.str() + ")",
             [&] { capture_graphs(*instance, c); });

  std::shared_ptr<ServedModel> model(new ServedModel(std::move(impl)));
  model->impl_->start_workers();
  return model;
}

ServedModel::ServedModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ServedModel::~ServedModel() { impl_->stop(); }

void ServedModel::stop() { impl_->stop(); }

const ModelConfig& ServedModel::config() const { return impl_->config; }
const std::string& ServedModel::name() const { return impl_->config.name; }
int64_t ServedModel::version() const { return impl_->version; }

std::vector<Device> ServedModel::devices() const {
  std::vector<Device> out;
  for (const auto& instance : impl_->instances) out.push_back(instance->device);
  return out;
}

ModelStats ServedModel::stats() const {
  ModelStats s;
  {
    std::lock_guard<std::mutex> lock(impl_->stats_mutex);
    s = impl_->stats;
  }
  std::lock_guard<std::mutex> lock(impl_->mutex);
  s.pending_request_count = static_cast<int64_t>(impl_->queue.size());
  return s;
}

std::vector<std::string> ServedModel::captured() const {
  std::vector<std::string> out;
  for (const auto& instance : impl_->instances)
    for (const io::OnnxModel::Capture& capture : instance->model.captures())
      out.push_back(instance->device.str() + " " + capture.signature +
                    (capture.error.empty() ? "" : " runs eagerly: " + capture.error));
  return out;
}

void ServedModel::Impl::count_failure(uint64_t requests) {
  std::lock_guard<std::mutex> lock(stats_mutex);
  stats.request_failure += requests;
}

}  // namespace rcuda::runtime
