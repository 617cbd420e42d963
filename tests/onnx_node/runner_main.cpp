// onnx_node_runner [--device cuda] [--report FILE] [--failures-only] [--list-ops] [case-prefix
// ...]: runs ONNX's backend node tests on rcuda and prints one line per case; with --report, writes
// the per-operator table (docs/onnx.md quotes it).
#include <cstring>
#include <fstream>
#include <iostream>

#include "onnx_node/node_case.h"
#include "rcuda/io/onnx/import.h"

int main(int argc, char** argv) {
  using namespace rcuda::onnx_node;
  rcuda::Device device;
  std::string report_path;
  bool failures_only = false;
  std::vector<std::string> prefixes;
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--device") && a + 1 < argc)
      device = rcuda::Device::parse(argv[++a]);
    else if (!std::strcmp(argv[a], "--report") && a + 1 < argc)
      report_path = argv[++a];
    else if (!std::strcmp(argv[a], "--list-ops")) {
      for (const std::string& op : rcuda::io::onnx_supported_ops()) std::cout << op << " ";
      std::cout << "\n";
      return 0;
    } else if (!std::strcmp(argv[a], "--failures-only"))
      failures_only = true;
    else
      prefixes.emplace_back(argv[a]);
  }
  const std::string dir = node_data_dir();
  std::vector<CaseResult> results;
  int counts[3] = {0, 0, 0};
  for (const std::string& name : list_cases(dir)) {
    bool wanted = prefixes.empty();
    for (const std::string& p : prefixes) wanted = wanted || name.rfind(p, 0) == 0;
    if (!wanted) continue;
    CaseResult r = run_case(dir, name, device);
    ++counts[static_cast<int>(r.outcome)];
    if (!failures_only || r.outcome == Outcome::Failed)
      std::cout << outcome_name(r.outcome) << " " << r.name
                << (r.message.empty() ? "" : ": " + r.message) << "\n";
    results.push_back(std::move(r));
  }
  std::cout << counts[0] << " passed, " << counts[1] << " failed, " << counts[2]
            << " unsupported\n";
  if (!report_path.empty()) {
    std::ofstream out(report_path);
    out << report(results);
  }
  return counts[1] > 0 ? 1 : 0;
}
