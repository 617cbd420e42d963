// One case of ONNX's backend node tests (Debian's libonnx-testdata: <case>/model.onnx and
// test_data_set_N/{input,output}_K.pb), run on rcuda and compared with ONNX's expected outputs
// at ONNX's tolerances (rtol 1e-3, atol 1e-7, as onnx/backend/test/runner does).
#pragma once

#include <string>
#include <vector>

#include "rcuda/core/device.h"

namespace rcuda::onnx_node {

enum class Outcome { Passed, Failed, Unsupported };

struct CaseResult {
  std::string name;                   // "test_abs"
  std::vector<std::string> op_types;  // the model's op types, sorted, once each
  Outcome outcome = Outcome::Failed;
  std::string message;    // why it failed or is unsupported ("" when passed)
  bool tensor_io = true;  // every input and output a tensor of a numeric or bool type
};

// Where Debian puts the cases (RCUDA_ONNX_NODE_DATA overrides it).
std::string node_data_dir();

// Every case folder name under `dir`, sorted.
std::vector<std::string> list_cases(const std::string& dir);

// Loads <dir>/<name>/model.onnx on `device`, runs each test_data_set_* and compares. Unsupported:
// the loader refused the model with an error that says "not supported" or names a dtype rcuda
// lacks; Failed: any other error, a crash-free mismatch (the message says where) or a wrong
// dtype or shape.
CaseResult run_case(const std::string& dir, const std::string& name, Device device);

const char* outcome_name(Outcome o);

// A Markdown table per operator (cases passed, failed, unsupported) over `results`, and the
// coverage line: the share of tensor-io cases whose operators are all supported.
std::string report(const std::vector<CaseResult>& results);

}  // namespace rcuda::onnx_node
