// ONNX's backend node tests (Debian's libonnx-testdata) on rcuda's CPU backend, and on CUDA
// where there is a GPU: every case either passes at ONNX's tolerances or is refused at load with
// an error that says what is not supported; none may fail. The per-operator table goes to
// onnx-node-report.md in the working folder (docs/onnx.md quotes it).
#include <gtest/gtest.h>

#include <fstream>

#include "onnx_node/node_case.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

void run_all(Device device, const std::string& report_path) {
  const std::string dir = onnx_node::node_data_dir();
  const std::vector<std::string> cases = onnx_node::list_cases(dir);
  // scripts/install-deps.sh installs libonnx-testdata; without it this must fail, not skip.
  ASSERT_GT(cases.size(), 900u) << "ONNX's node tests are not at " << dir
                                << " (Debian package libonnx-testdata)";
  std::vector<onnx_node::CaseResult> results;
  int passed = 0;
  for (const std::string& name : cases) {
    onnx_node::CaseResult r = onnx_node::run_case(dir, name, device);
    EXPECT_NE(r.outcome, onnx_node::Outcome::Failed) << name << ": " << r.message;
    passed += r.outcome == onnx_node::Outcome::Passed;
    results.push_back(std::move(r));
  }
  std::ofstream(report_path) << onnx_node::report(results);
  // The supported operators' cases pass: a drop here is an op that stopped working.
  EXPECT_GE(passed, 813) << "see " << report_path;
}

TEST(OnnxNodeTests, EveryCasePassesOrIsRefusedOnTheCpu) {
  run_all(Device(), "onnx-node-report.md");
}

TEST(OnnxNodeTests, EveryCasePassesOrIsRefusedOnCuda) {
  RCUDA_REQUIRE_CUDA();
  run_all(kCuda, "onnx-node-report-cuda.md");
}

}  // namespace
}  // namespace rcuda::test
