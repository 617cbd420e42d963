// A loaded ONNX model: its values and its nodes bound to kernels (load.cpp makes it, run.cpp
// runs it, model.cpp answers questions about it).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/onnx/import/kernel.h"
#include "rcuda/io/onnx/import.h"

namespace rcuda::io {

// A file's bytes; FileError naming the path when it cannot be read (load.cpp).
std::string read_file(const std::string& path);
// The folder a file's relative paths (external data) are resolved in: "." for a bare name.
std::string folder_of(const std::string& path);

// DeviceError naming the model when `device` is a CUDA device this process cannot use.
void check_device(Device device, const std::string& name);

struct OnnxModel::Impl {
  enum class Kind : uint8_t { Input, Initializer, Constant, NodeOutput };

  struct Value {
    std::string name;
    Kind kind = Kind::NodeOutput;
    Tensor tensor;      // Initializer and Constant: the value, on the device it lives on
    int last_use = -1;  // the last node that reads it (its tensor is dropped after that)
    bool is_output = false;
  };

  struct Node {
    std::string op_type, name;
    int version = 0;
    std::string where;         // "model.onnx: node 'conv1' (Conv)"
    std::vector<int> inputs;   // value ids; -1 for an absent optional input
    std::vector<int> outputs;  // value ids; -1 for an output the model does not name
    std::vector<bool> host_inputs;
    onnx_import::Kernel kernel;
  };

  std::string name;  // the path, or the name given to load_bytes
  std::string producer;
  std::vector<std::pair<std::string, std::string>> metadata;  // the model's metadata_props
  int64_t opset = 0;
  Device device;
  std::vector<Value> values;
  std::vector<Node> nodes;                 // in an order where each runs after its inputs' makers
  std::vector<int> input_ids, output_ids;  // value ids
  std::vector<OnnxValueInfo> inputs, outputs;
  std::vector<std::pair<std::string, int>> op_counts;

  // CUDA-graph replay (capture.cpp): one captured run per input signature (shapes and dtypes).
  struct Captured;
  bool cuda_graphs = false;
  mutable std::mutex captured_mutex;
  mutable std::map<std::string, std::shared_ptr<Captured>> captured;

  // Lays parameters out for the device (Note [Channels-last convolutions], load.cpp).
  void lay_out_for_device();

  // Runs the nodes on inputs already checked and on the model's device.
  std::vector<Tensor> run_nodes(const std::vector<Tensor>& inputs) const;
  // The captured replay for these inputs (capturing it on first use), or nullptr when the run
  // must be eager: CPU, grad mode with parameters that require grad, or a capture that failed.
  std::vector<Tensor> run_captured(const std::vector<Tensor>& inputs, bool* replayed) const;

  // Whether a tensor of this dtype and size stays on the CPU whatever the model's device (Note
  // [Values read on the host] in kernel.h): small integer tensors, the shapes and axes.
  static bool stays_on_host(const Tensor& t) { return !is_floating(t.dtype()) && t.numel() <= 64; }
};

}  // namespace rcuda::io
