// The import table: each ONNX op type rcuda runs, joined from the families' tables, and the
// opset versions where each ONNX op changed (op_versions.inc, from ONNX's schemas).
#include "io/onnx/import/import_table.h"

#include <algorithm>
#include <map>
#include <string>

namespace rcuda::io::onnx_import {
namespace {

struct OpVersions {
  const char* op_type;
  std::vector<int> since;  // ascending
};

const std::vector<OpVersions>& op_versions() {
  static const std::vector<OpVersions> table = {
#include "io/onnx/import/op_versions.inc"
  };
  return table;
}

}  // namespace

const ImportOp* find_import_op(const std::string& op_type) {
  static const std::map<std::string, const ImportOp*> by_name = [] {
    std::map<std::string, const ImportOp*> m;
    for (const auto* family : {&elementwise_ops(), &shape_ops(), &reduce_ops(), &nn_ops(),
                               &quantize_ops(), &window_ops(), &unique_ops()})
      for (const ImportOp& op : *family) m.emplace(op.op_type, &op);
    return m;
  }();
  auto it = by_name.find(op_type);
  return it == by_name.end() ? nullptr : it->second;
}

int op_version(const std::string& op_type, int64_t opset) {
  const auto& table = op_versions();
  auto it = std::lower_bound(
      table.begin(), table.end(), op_type,
      [](const OpVersions& v, const std::string& name) { return std::string(v.op_type) < name; });
  if (it == table.end() || op_type != it->op_type) return -1;
  int version = 0;
  for (int since : it->since)
    if (since <= opset) version = since;
  return version;
}

std::vector<std::string> supported_op_types() {
  std::vector<std::string> names;
  for (const auto* family : {&elementwise_ops(), &shape_ops(), &reduce_ops(), &nn_ops(),
                             &quantize_ops(), &window_ops(), &unique_ops()})
    for (const ImportOp& op : *family) names.emplace_back(op.op_type);
  names.emplace_back("Constant");  // evaluated at load (model.cpp)
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace rcuda::io::onnx_import
