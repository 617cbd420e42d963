// Private to the shape family (ops_shape*.cpp): the tables that shape_ops() joins, and the
// helpers several of its files share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "io/onnx/import/kernel.h"

namespace rcuda::io::onnx_import {

// Gather, Scatter, NonZero, ... (ops_shape_indexing.cpp).
const std::vector<ImportOp>& indexing_ops();
// Pad, ConstantOfShape, Range, EyeLike, Trilu (ops_shape_fill.cpp).
const std::vector<ImportOp>& fill_ops();

// Integers an op took as an attribute up to some version and takes as a host input from then on
// (Squeeze's axes, Split's split, Slice's starts, Pad's pads).
class IntsArgument {
 public:
  // Reads attribute `name` when the node's version is below `input_since`, else declares input
  // `input` a host input when the node gives it.
  IntsArgument(NodeReader& node, const char* name, size_t input, int input_since);
  // The values, or nullopt when neither the attribute nor the input is given.
  std::optional<std::vector<int64_t>> get(const std::vector<Tensor>& inputs) const;

 private:
  std::optional<std::vector<int64_t>> attribute_;
  std::optional<size_t> input_;
};

// Integer indices as int64 with negative ones counted back from `size` (ONNX's indices may be
// int32 and negative; rcuda's index ops take int64 in [0, size)).
Tensor wrap_indices(const Tensor& indices, int64_t size);

}  // namespace rcuda::io::onnx_import
