// What the import functions of src/io/onnx/import share: how a node's ONNX attributes are read
// at load (NodeReader), the function a node runs (Kernel), the table entry that binds an ONNX
// op type to the function that makes its kernel (ImportOp), and the helpers kernels use.
//
// Note [Kernels run the public ops]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A loaded node's kernel is a closure made once at load from the node's attributes; at run it
// computes the node's outputs from its inputs with rcuda's public ops (rcuda::add, nn::conv2d,
// ...), never with backend calls. So a loaded model runs on the CPU and CUDA alike, autocasts,
// records for autograd (a loaded model fine-tunes: its initializers are leaf tensors that can
// require grad) and can be traced into a graph::Graph like any code. Attributes are checked at
// load, where an error can name the file and the node before anything runs.
//
// Note [Values read on the host]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// ONNX passes shapes, axes, pads and counts as int64 tensors (Reshape's shape, Slice's starts,
// TopK's k). A kernel reads them with host_ints() and declares them with NodeReader::host_input,
// so that the runner does not move them to the model's device. Small integer initializers and
// Constant outputs stay on the CPU, and Shape and Size make CPU tensors: a shape computed by a
// Shape -> Gather -> Concat chain never leaves the host, and a CUDA model with such chains can
// still be captured as a CUDA graph (no device-to-host read inside). Every other input is a data
// input: when a node has a data input on CUDA, the runner moves its CPU data inputs there first.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rcuda/core/device.h"
#include "rcuda/core/dtype.h"
#include "rcuda/core/error.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::io::onnx_import {

// What a kernel knows at run time beyond its inputs.
struct RunContext {
  Device device;  // the model's device: where tensors a node creates from nothing go
};

// A node's work: its inputs in the node's order (an undefined Tensor for an absent optional
// input) to its outputs in the node's order (as many as the node names; an undefined Tensor
// for an optional output the kernel does not make, which is an error only if something reads
// it).
using Kernel =
    std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const RunContext& ctx)>;

// One node at load: its attributes, the op version in effect and the inputs known at load.
class NodeReader {
 public:
  // `where`: "model.onnx: node 'conv1' (Conv)"; `version`: the op's since_version in effect
  // for the model's opset; `constants`: for each input, its value when known at load (a Constant
  // node's output or an initializer), else nullptr.
  NodeReader(const onnx::NodeProto& proto, int version, std::string where,
             std::vector<const Tensor*> constants);

  const onnx::NodeProto& proto() const { return proto_; }
  const std::string& op_type() const { return proto_.op_type(); }
  int version() const { return version_; }
  const std::string& where() const { return where_; }

  size_t num_inputs() const { return static_cast<size_t>(proto_.input_size()); }
  size_t num_outputs() const { return static_cast<size_t>(proto_.output_size()); }
  // Input i is given (within the list and not the empty name of a skipped optional input).
  bool has_input(size_t i) const;
  bool has_output(size_t i) const;
  // Input i's value when known at load (an initializer or a Constant node's output), else
  // nullptr. A kernel may precompute from it, but must still accept the input at run.
  const Tensor* constant_input(size_t i) const;

  // Attributes. The getters with a default return it when the attribute is absent; those
  // without refuse a missing attribute with an error naming it. A wrong attribute type is an
  // error naming the attribute and both types.
  bool has(const char* name) const;
  int64_t i(const char* name) const;
  int64_t i(const char* name, int64_t def) const;
  double f(const char* name) const;
  double f(const char* name, double def) const;
  std::string s(const char* name) const;
  std::string s(const char* name, const std::string& def) const;
  std::vector<int64_t> ints(const char* name) const;
  std::vector<int64_t> ints(const char* name, const std::vector<int64_t>& def) const;
  std::vector<double> floats(const char* name) const;
  std::vector<double> floats(const char* name, const std::vector<double>& def) const;
  std::vector<std::string> strings(const char* name) const;
  // A TENSOR attribute as a CPU tensor.
  Tensor tensor(const char* name) const;

  // Input i is read on the host (Note [Values read on the host]).
  void host_input(size_t i);
  const std::vector<bool>& host_inputs() const { return host_inputs_; }

  // ValueError "<where>: <why>".
  [[noreturn]] void fail(const std::string& why) const;
  // ValueError "<where>: <what> is not supported by rcuda's ONNX import".
  [[noreturn]] void unsupported(const std::string& what) const;

 private:
  const onnx::AttributeProto* find(const char* name, int type) const;

  const onnx::NodeProto& proto_;
  int version_;
  std::string where_;
  std::vector<const Tensor*> constants_;
  std::vector<bool> host_inputs_;
};

// Makes a node's kernel from its attributes, checking them (NodeReader::fail, unsupported).
using MakeKernel = Kernel (*)(NodeReader& node);

// One row of the import table: an ONNX op type of the default domain, the function that makes
// its kernels, and the oldest op version it handles (older versions are refused by name; newer
// ones reach `make`, which handles or refuses each version it knows changed).
struct ImportOp {
  const char* op_type;
  MakeKernel make;
  int min_version = 1;
};

// The tables of each family (src/io/onnx/import/ops_*.cpp); import_table.cpp joins them.
const std::vector<ImportOp>& elementwise_ops();  // ops_elementwise.cpp
const std::vector<ImportOp>& shape_ops();        // ops_shape.cpp
const std::vector<ImportOp>& reduce_ops();       // ops_reduce.cpp
const std::vector<ImportOp>& nn_ops();           // ops_nn.cpp
const std::vector<ImportOp>& quantize_ops();     // ops_quantize.cpp
const std::vector<ImportOp>& window_ops();       // ops_windows.cpp
const std::vector<ImportOp>& unique_ops();       // ops_unique.cpp

// ---- helpers for kernels (helpers.cpp) -----------------------------------------------------

// The input at i, or an undefined tensor when it is absent (the runner leaves an optional input
// the node skips undefined, and a trailing one the node does not name out of the list).
inline Tensor optional_input(const std::vector<Tensor>& inputs, size_t i) {
  return i < inputs.size() ? inputs[i] : Tensor();
}

// The values of an integer (or bool) tensor on the host, in row-major order; copies from the
// device when needed (a synchronisation: prefer inputs declared with host_input, which stay on
// the CPU).
std::vector<int64_t> host_ints(const Tensor& t);
// The values of any real tensor as doubles (scalars such as Clip's min, Pad's constant).
std::vector<double> host_doubles(const Tensor& t);
// A single value of a one-element tensor; ValueError naming `what` otherwise.
double host_scalar(const Tensor& t, const std::string& what);
// `axis` counted from the end when negative, checked against `rank`; IndexError naming `what`.
int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what);
// The rcuda dtype of an ONNX element type; DTypeError naming `what` and the type for one rcuda
// has no dtype for (uint16, uint32, uint64, string, complex, float8 of IR 9).
DType dtype_from_onnx(int32_t elem_type, const std::string& what);
// The ONNX element type's name ("FLOAT", "UINT32").
std::string onnx_type_name(int32_t elem_type);
// A TensorProto's value as a CPU tensor: raw_data or the typed fields, or external data read
// from `folder` (the model's folder). FileError naming the file and the tensor when the data is
// missing, short or outside the folder.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& folder,
                         const std::string& what);

}  // namespace rcuda::io::onnx_import
