// What the files of the reduce family share (ops_reduce*.cpp, ops_norm.cpp): their parts of
// the import table, which reduce_ops() joins, and a few tensor helpers. Private to those files;
// the helpers live in a namespace of their own so that they cannot meet another family's.
#pragma once

#include <string>
#include <vector>

#include "io/onnx/import/kernel.h"
#include "rcuda/core/shape.h"

namespace rcuda::io::onnx_import {

std::vector<ImportOp> reduce_axis_ops();    // ops_reduce_axis.cpp: softmax family, CumSum, TopK
std::vector<ImportOp> reduce_loss_ops();    // ops_reduce_loss.cpp: the two losses
std::vector<ImportOp> reduce_linalg_ops();  // ops_reduce_linalg.cpp: Einsum, Det
std::vector<ImportOp> norm_ops();           // ops_norm.cpp: the normalisations

namespace reduce_detail {

// x reversed along dim (no flip op: an index_select with the positions in reverse).
Tensor flip(const Tensor& x, int64_t dim);
// x's shape with the dims in `dims` set to 1.
Shape keepdim_shape(const Shape& shape, const std::vector<int64_t>& dims);
// `axes` (an attribute's or an input's) normalised against rank and sorted; IndexError or
// ValueError (an axis given twice) naming `where`, the node.
std::vector<int64_t> sorted_axes(const std::string& where, std::vector<int64_t> axes, int64_t rank);
// Every dim of a rank-`rank` tensor: 0, 1, ..., rank - 1.
std::vector<int64_t> all_dims(int64_t rank);

}  // namespace reduce_detail
}  // namespace rcuda::io::onnx_import
