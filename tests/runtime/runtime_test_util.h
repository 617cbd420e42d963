// Test support for tests/runtime: the mlp fixture (tests/onnx_models, input x [batch, 16] float32,
// output [batch, 4]), its direct io::OnnxModel::run as the reference every response is held to,
// and a fresh folder per test for model repositories.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "rcuda/io/onnx/import.h"
#include "rcuda/runtime/model.h"
#include "support/reference.h"

namespace rcuda::test {

inline const std::string kRuntimeModels = std::string(RCUDA_TESTS_DIR) + "/onnx_models/";
inline std::string mlp_path(const std::string& exporter = "torchscript") {
  return kRuntimeModels + "mlp_" + exporter + ".onnx";
}

// max |a - e| over max |e|, the two read back through the host by hand.
inline double relative_error(const Tensor& actual, const Tensor& expected) {
  const std::vector<double> a = to_doubles(actual), e = to_doubles(expected);
  EXPECT_EQ(a.size(), e.size());
  double diff = 0, scale = 0;
  for (size_t k = 0; k < std::min(a.size(), e.size()); ++k) {
    diff = std::max(diff, std::fabs(a[k] - e[k]));
    scale = std::max(scale, std::fabs(e[k]));
  }
  return diff / std::max(scale, 1e-30);
}

// The model's own answer for one input, run alone on the CPU.
inline Tensor reference_output(const io::OnnxModel& model, const Tensor& x) {
  return model.run({x})[0];
}

// The InferError a call throws (its status and message); fails the test when none is thrown.
struct Refusal {
  runtime::InferError::Status status = runtime::InferError::Status::Internal;
  std::string message = "(no error)";
};
template <typename F>
Refusal refusal(F f) {
  try {
    f();
  } catch (const runtime::InferError& e) {
    return {e.status, e.what()};
  }
  ADD_FAILURE() << "no InferError was thrown";
  return {};
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A folder of its own for each test, removed after it.
class RuntimeFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rcuda-runtime-" + std::to_string(::getpid()) + "-" + std::to_string(test_seed()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& relative) const { return (dir_ / relative).string(); }
  void write(const std::string& relative, const std::string& text) const {
    std::filesystem::create_directories((dir_ / relative).parent_path());
    std::ofstream out(path(relative), std::ios::binary | std::ios::trunc);
    out << text;
  }
  // DIR/<model>/<version>/model.onnx, a copy of the mlp fixture.
  void add_version(const std::string& model, int version,
                   const std::string& exporter = "torchscript") const {
    const std::filesystem::path folder = dir_ / model / std::to_string(version);
    std::filesystem::create_directories(folder);
    std::filesystem::copy_file(mlp_path(exporter), folder / "model.onnx",
                               std::filesystem::copy_options::overwrite_existing);
  }

  std::filesystem::path dir_;
};

}  // namespace rcuda::test
