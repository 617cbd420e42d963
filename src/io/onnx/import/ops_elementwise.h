// What the files of the elementwise family share (ops_elementwise*.cpp): their parts of the
// import table, which elementwise_ops() in ops_elementwise.cpp joins, and a few helpers. Private
// to those files; the helpers live in a namespace of their own so that they cannot meet another
// family's.
#pragma once

#include <string>
#include <vector>

#include "io/onnx/import/kernel.h"

namespace rcuda::io::onnx_import {

std::vector<ImportOp> elementwise_activation_ops();  // ops_elementwise_activation.cpp
std::vector<ImportOp> elementwise_binary_ops();      // ops_elementwise_binary.cpp
std::vector<ImportOp> elementwise_cast_ops();        // ops_elementwise_cast.cpp: Cast, Dropout

namespace elementwise_detail {

// x itself, or float32 for the float8 dtypes, which rcuda keeps for storage and scaled_mm only:
// ops that ONNX defines on float8 (IsNaN, IsInf) compute on the widened values.
Tensor computable(const Tensor& x);

}  // namespace elementwise_detail
}  // namespace rcuda::io::onnx_import
