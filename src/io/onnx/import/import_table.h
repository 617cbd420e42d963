// The import table (import_table.cpp): what the loader asks of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/onnx/import/kernel.h"

namespace rcuda::io::onnx_import {

// The row for an ONNX op type of the default domain, or nullptr when rcuda does not run it.
const ImportOp* find_import_op(const std::string& op_type);

// The op's version in effect at `opset` (the newest since_version at or below it); 0 when the op
// did not exist yet at that opset, -1 when ONNX (up to opset 21) has no such op.
int op_version(const std::string& op_type, int64_t opset);

// Every op type the import runs, sorted (docs/onnx.md lists them).
std::vector<std::string> supported_op_types();

}  // namespace rcuda::io::onnx_import
