// ONNX import (docs/onnx.md): an ONNX model file runs on rcuda's engine, on the CPU or CUDA.
// Each ONNX node is bound at load to a kernel over rcuda's public ops, so a loaded model
// autocasts, records for autograd (its initializers are tensors that can require grad: a loaded
// model fine-tunes) and can be traced into a graph::Graph like any code.
//
//   io::OnnxModel model = io::OnnxModel::load("resnet18.onnx", Device(DeviceType::CUDA));
//   std::vector<Tensor> y = model.run({x});
//   std::cout << model.summary();   // inputs, outputs, opset, op counts
//
// Errors name the file, and for a node its name and op: FileError for a file that cannot be
// read or parsed (truncated, corrupt, external data missing), ValueError for a model rcuda cannot
// run (an op or op version not supported, a missing initializer, a cycle) and, from run(), for
// inputs that do not fit (naming the input and its expected shape), DTypeError for a dtype rcuda
// has no counterpart of.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rcuda/core/device.h"
#include "rcuda/core/dtype.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::io {

// A model input or output as the file declares it.
struct OnnxValueInfo {
  std::string name;
  DType dtype = DType::Float32;
  bool has_shape = false;  // false: the file gives no shape (any rank)
  // Per dim: its size, or -1 when symbolic or unknown.
  std::vector<int64_t> dims;
  // Per dim: the symbolic name (dim_param, "batch"), or "" for a fixed or unnamed dim.
  std::vector<std::string> dim_names;
  // "[batch, 3, 224, 224]" ("?" for an unnamed unknown dim), or "(any shape)".
  std::string shape_string() const;
};

struct OnnxLoadOptions {
  Device device;  // where initializers and the run go
  // On CUDA, replay each input signature's run as one CUDA graph (set_cuda_graphs).
  bool cuda_graphs = false;
};

class OnnxModel {
 public:
  // Reads, checks and binds the model at `path`; external data files are read from its folder.
  static OnnxModel load(const std::string& path, const OnnxLoadOptions& options = {});
  // The same from the bytes of a file; `name` is what errors call it, `folder` where external
  // data files are looked for ("" refuses external data).
  static OnnxModel load_bytes(const std::string& bytes, const std::string& name,
                              const std::string& folder, const OnnxLoadOptions& options = {});

  // Runs the model: one tensor per input, in the model's order (any device: moved to the
  // model's); the outputs in the model's order. Several threads may run one model at once: a
  // run keeps its values to itself and the kernels hold only what load read (CUDA-graph
  // replays of one model take turns). ValueError naming an input whose rank, dtype or
  // fixed sizes differ from the file's (and the expected shape), or a symbolic dim given two
  // different sizes.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

  const std::vector<OnnxValueInfo>& inputs() const;
  const std::vector<OnnxValueInfo>& outputs() const;
  // The model's opset of the default domain.
  int64_t opset() const;
  const std::string& name() const;  // the path or name it was loaded from
  std::string producer() const;     // "pytorch 2.11", or ""
  // The model's metadata_props (key, value), as the file gives them. rcuda's export writes
  // "rcuda.one_based_inputs": the inputs R gave 1-based (docs/onnx.md, "Indices").
  const std::vector<std::pair<std::string, std::string>>& metadata() const;
  // How many nodes of each op type, in first-use order.
  std::vector<std::pair<std::string, int>> op_counts() const;
  // The floating-point initializers by name, as the leaf tensors the model reads: set
  // requires_grad on them to fine-tune, or copy new values into them.
  std::vector<std::pair<std::string, Tensor>> parameters() const;
  // Every initializer by name (integer ones included).
  std::vector<std::pair<std::string, Tensor>> initializers() const;

  Device device() const;
  // Moves the initializers to `device` in place, as nn_module$to does: handles to them held
  // elsewhere (R's parameters, an optimizer's) see the moved tensors.
  void to(Device device);

  // CUDA-graph replay (on a CUDA model; ignored on the CPU): each new input signature (dtypes
  // and shapes) is run once eagerly, then captured; later runs with it copy their inputs in,
  // replay the graph with one launch and return copies of its outputs. Runs that must record
  // gradients (grad mode on and a parameter that requires grad) stay eager. Turning it off drops
  // the captured graphs.
  void set_cuda_graphs(bool enabled);
  struct Capture {
    std::string signature;  // "float32[1, 3, 224, 224];"
    std::string error;      // why it runs eagerly ("" when it replays)
  };
  std::vector<Capture> captures() const;

  // The text R's print shows: name, producer, opset, inputs and outputs with their shapes, op
  // counts, parameter count.
  std::string summary() const;

  struct Impl;

 private:
  explicit OnnxModel(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

// A tensor saved as a serialized ONNX TensorProto (the input_0.pb files of ONNX's test data),
// as a CPU tensor. FileError naming the path when it cannot be read or parsed.
Tensor load_onnx_tensor(const std::string& path);

// The ONNX op types that OnnxModel runs, sorted (docs/onnx.md says which versions and
// attributes of each).
std::vector<std::string> onnx_supported_ops();

}  // namespace rcuda::io
