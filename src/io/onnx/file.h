// Replacing a file atomically, as src/io/safetensors_write.cpp does.
#pragma once

#include <string>

namespace rcuda::io::onnx_export {

// Writes `bytes` to a temporary file beside `path`, flushes it to disk and renames it over
// `path`: afterwards `path` holds either its old contents or all of `bytes`, and a failure leaves
// no temporary file. FileError "onnx_export: <path>: <why>" when it cannot.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace rcuda::io::onnx_export
