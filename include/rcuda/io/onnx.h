// ONNX export of a traced graph (docs/onnx.md): every node of a graph::Graph becomes one or a
// few ONNX nodes, its parameters and constants become initializers, and the file is the
// serialized ModelProto that ONNX Runtime, TensorRT and netron read.
//
//   graph::Graph g = graph::trace(forward, {x}, model_parameters);
//   io::OnnxExportOptions options;
//   options.input_names = {"x"};
//   options.output_names = {"logits"};
//   options.dynamic_axes = {{"x", {{0, "batch"}}}, {"logits", {{0, "batch"}}}};
//   io::export_onnx(g, "model.onnx", options);
//
// Each OpId has an entry in the export table (src/io/onnx/export_table.cpp): the ONNX nodes it
// becomes, or none, in which case export names the op and the opset it could not write.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rcuda/graph/graph.h"

namespace rcuda::io {

struct OnnxExportOptions {
  // The graph's inputs and outputs in ONNX, in order (default: the traced inputs' names;
  // "output", "output_2", ... for the outputs). Parameters keep their own names ("fc1.weight").
  std::vector<std::string> input_names, output_names;
  // An input or output name -> 0-based dim -> symbolic name ("batch"): those dims are written as
  // dim_param, so the model runs at other sizes there; every other dim is the traced size.
  std::map<std::string, std::map<int64_t, std::string>> dynamic_axes;
  // 17 to 21. 17 is the newest that the C++ checker of the ONNX library rcuda links knows, and the
  // first with LayerNormalization.
  int opset_version = 17;
  std::string producer = "rcuda";
};

// Writes `g` as an ONNX model to `path`, atomically (a temporary file in the same folder, then a
// rename: a failed export leaves no file). ValueError for an op with no ONNX form, an option
// that does not fit the graph, or a model that ONNX's checker or shape inference refuses (naming
// the node); DTypeError for a tensor whose dtype ONNX cannot hold; FileError naming the path
// when it cannot be written.
void export_onnx(const graph::Graph& g, const std::string& path,
                 const OnnxExportOptions& options = {});

// The serialized ModelProto that export_onnx writes.
std::string export_onnx_bytes(const graph::Graph& g, const OnnxExportOptions& options = {});

}  // namespace rcuda::io
