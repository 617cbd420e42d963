// Running one ONNX node-test case on rcuda, and the per-operator report.
#include "onnx_node/node_case.h"

#include <dirent.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "rcuda/autograd/api.h"
#include "rcuda/core/error.h"
#include "rcuda/io/onnx/import.h"

namespace rcuda::onnx_node {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<double> host_doubles(const Tensor& t) {
  Tensor h = contiguous(rcuda::to(t, Device(), DType::Float64));
  return {h.data<double>(), h.data<double>() + h.numel()};
}

bool numeric_tensor(const onnx::TypeProto& type) {
  if (!type.has_tensor_type()) return false;
  switch (type.tensor_type().elem_type()) {
    case onnx::TensorProto::STRING:
    case onnx::TensorProto::COMPLEX64:
    case onnx::TensorProto::COMPLEX128:
    case onnx::TensorProto::UNDEFINED:
      return false;
    default:
      return type.tensor_type().elem_type() <= onnx::TensorProto::BFLOAT16;
  }
}

// Compares at ONNX's tolerances: |a - e| <= atol + rtol * |e|, NaN where NaN is expected.
std::string compare(const Tensor& got, const Tensor& expected, const std::string& what) {
  if (got.dtype() != expected.dtype())
    return what + ": dtype " + dtype_name(got.dtype()) + ", expected " +
           dtype_name(expected.dtype());
  if (got.shape() != expected.shape())
    return what + ": shape " + shape_str(got.shape()) + ", expected " + shape_str(expected.shape());
  const std::vector<double> a = host_doubles(got);
  const std::vector<double> e = host_doubles(expected);
  const bool exact = !is_floating(expected.dtype());
  for (size_t k = 0; k < e.size(); ++k) {
    const bool ok = std::isnan(e[k])   ? std::isnan(a[k])
                    : exact            ? a[k] == e[k]
                    : std::isinf(e[k]) ? a[k] == e[k]
                                       : std::fabs(a[k] - e[k]) <= 1e-7 + 1e-3 * std::fabs(e[k]);
    if (!ok) {
      std::ostringstream s;
      s << what << ": element " << k << " is " << a[k] << ", expected " << e[k];
      return s.str();
    }
  }
  return "";
}

bool is_unsupported_error(const std::string& message) {
  return message.find("not supported") != std::string::npos ||
         message.find("has no dtype for") != std::string::npos;
}

}  // namespace

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Passed:
      return "passed";
    case Outcome::Failed:
      return "failed";
    case Outcome::Unsupported:
      return "unsupported";
  }
  return "?";
}

std::string node_data_dir() {
  const char* env = std::getenv("RCUDA_ONNX_NODE_DATA");
  return env != nullptr ? env : "/usr/share/libonnx-testdata/data/node";
}

std::vector<std::string> list_cases(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("test_", 0) == 0 && exists(dir + "/" + name + "/model.onnx"))
      names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

CaseResult run_case(const std::string& dir, const std::string& name, Device device) {
  CaseResult r;
  r.name = name;
  const std::string folder = dir + "/" + name;
  onnx::ModelProto proto;
  if (!proto.ParseFromString(read_file(folder + "/model.onnx"))) {
    r.message = "model.onnx does not parse";
    return r;
  }
  std::set<std::string> ops;
  for (const onnx::NodeProto& n : proto.graph().node()) ops.insert(n.op_type());
  r.op_types.assign(ops.begin(), ops.end());
  for (const auto& v : proto.graph().input()) r.tensor_io = r.tensor_io && numeric_tensor(v.type());
  for (const auto& v : proto.graph().output())
    r.tensor_io = r.tensor_io && numeric_tensor(v.type());

  std::unique_ptr<io::OnnxModel> model;
  try {
    io::OnnxLoadOptions options;
    options.device = device;
    model = std::make_unique<io::OnnxModel>(io::OnnxModel::load(folder + "/model.onnx", options));
  } catch (const Error& e) {
    r.outcome = is_unsupported_error(e.what()) ? Outcome::Unsupported : Outcome::Failed;
    r.message = std::string("load: ") + e.kind() + ": " + e.what();
    return r;
  }
  for (int set = 0; exists(folder + "/test_data_set_" + std::to_string(set)); ++set) {
    const std::string data = folder + "/test_data_set_" + std::to_string(set);
    std::vector<Tensor> inputs, expected;
    try {
      for (size_t k = 0; exists(data + "/input_" + std::to_string(k) + ".pb"); ++k)
        inputs.push_back(io::load_onnx_tensor(data + "/input_" + std::to_string(k) + ".pb"));
      for (size_t k = 0; exists(data + "/output_" + std::to_string(k) + ".pb"); ++k)
        expected.push_back(io::load_onnx_tensor(data + "/output_" + std::to_string(k) + ".pb"));
    } catch (const Error& e) {
      r.outcome = is_unsupported_error(e.what()) ? Outcome::Unsupported : Outcome::Failed;
      r.message = std::string("test data: ") + e.what();
      return r;
    }
    std::vector<Tensor> got;
    try {
      got = model->run(inputs);
    } catch (const Error& e) {
      r.outcome = is_unsupported_error(e.what()) ? Outcome::Unsupported : Outcome::Failed;
      r.message = std::string("run: ") + e.kind() + ": " + e.what();
      return r;
    }
    if (got.size() != expected.size()) {
      r.message = "gave " + std::to_string(got.size()) + " outputs, expected " +
                  std::to_string(expected.size());
      return r;
    }
    for (size_t k = 0; k < got.size(); ++k) {
      std::string diff = compare(got[k], expected[k], "output " + model->outputs()[k].name);
      if (!diff.empty()) {
        r.message = "test_data_set_" + std::to_string(set) + ": " + diff;
        return r;
      }
    }
  }
  r.outcome = Outcome::Passed;
  return r;
}

std::string report(const std::vector<CaseResult>& results) {
  struct Counts {
    int passed = 0, failed = 0, unsupported = 0;
  };
  std::map<std::string, Counts> by_op;
  int tensor_cases = 0, covered = 0, passed = 0;
  const std::vector<std::string> supported = io::onnx_supported_ops();
  const std::set<std::string> supported_set(supported.begin(), supported.end());
  for (const CaseResult& r : results) {
    // A case counts for each operator it uses other than Constant, the helper of many.
    for (const std::string& op : r.op_types) {
      if (op == "Constant" && r.op_types.size() > 1) continue;
      Counts& c = by_op[op];
      (r.outcome == Outcome::Passed   ? c.passed
       : r.outcome == Outcome::Failed ? c.failed
                                      : c.unsupported)++;
    }
    if (!r.tensor_io) continue;
    ++tensor_cases;
    bool all = true;
    for (const std::string& op : r.op_types) all = all && supported_set.count(op) > 0;
    covered += all;
    passed += r.outcome == Outcome::Passed;
  }
  std::ostringstream s;
  s << "| operator | supported | passed | failed | unsupported |\n|---|---|---|---|---|\n";
  for (const auto& [op, c] : by_op)
    s << "| " << op << " | " << (supported_set.count(op) ? "yes" : "no") << " | " << c.passed
      << " | " << c.failed << " | " << c.unsupported << " |\n";
  s << "\n"
    << results.size() << " cases; " << tensor_cases
    << " with numeric or bool tensor inputs and outputs, of which " << covered
    << " use only supported operators (" << (tensor_cases ? 100.0 * covered / tensor_cases : 0)
    << "%) and " << passed << " pass (" << (tensor_cases ? 100.0 * passed / tensor_cases : 0)
    << "%).\n";
  return s.str();
}

}  // namespace rcuda::onnx_node
