// Test support for the ONNX export tests (tests/io/test_onnx_export*.cpp): the python3 that has
// onnx, onnxruntime and numpy, inputs written as .npy files, and a fixture that runs a model in
// ONNX Runtime (tests/io/onnx_reference.py) and compares its outputs with rcuda's.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/io_test_util.h"
#include "rcuda/ops/copy.h"

namespace rcuda::test {

inline std::string python_with_onnx() { return python_that_imports("onnx, onnxruntime, numpy"); }

inline constexpr const char* kNoOnnxPython =
    "no python3 with onnx, onnxruntime and numpy (scripts/install-deps.sh installs them)";

inline std::string reference_script() {
  return std::string(RCUDA_TESTS_DIR) + "/io/onnx_reference.py";
}

inline int run_command(const std::string& command) {
  return std::system((command + " >&2").c_str());
}

inline const char* npy_descr(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "<f4";
    case DType::Float64:
      return "<f8";
    case DType::Int64:
      return "<i8";
    case DType::Int32:
      return "<i4";
    case DType::Bool:
      return "|b1";
    default:
      ADD_FAILURE() << "no .npy code for " << dtype_name(dtype);
      return "<f4";
  }
}

// A .npy file (format version 1.0) of a host tensor.
inline void write_npy(const std::string& path, const Tensor& t) {
  const Tensor c = ops::contiguous(t);
  std::string shape = "(";
  for (int64_t d : c.shape()) shape += std::to_string(d) + ",";
  shape += ")";
  std::string header = std::string("{'descr': '") + npy_descr(c.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xFF);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
  write_bytes(path, bytes);
}

// The outputs onnx_reference.py wrote, as doubles, with their shapes.
struct RuntimeOutput {
  Shape shape;
  std::string dtype;
  std::vector<double> values;
};

inline std::vector<RuntimeOutput> read_outputs(const std::string& dir) {
  const nlohmann::json described = nlohmann::json::parse(read_bytes(dir + "/outputs.json"));
  std::vector<RuntimeOutput> outputs;
  for (size_t i = 0; i < described.size(); ++i) {
    RuntimeOutput out;
    out.shape = described[i]["shape"].get<Shape>();
    out.dtype = described[i]["dtype"].get<std::string>();
    const std::string bytes = read_bytes(dir + "/output_" + std::to_string(i) + ".bin");
    const DType dtype = out.dtype == "float32"   ? DType::Float32
                        : out.dtype == "float64" ? DType::Float64
                        : out.dtype == "int64"   ? DType::Int64
                        : out.dtype == "int32"   ? DType::Int32
                                                 : DType::Bool;
    const size_t size = element_size(dtype);
    for (size_t at = 0; at + size <= bytes.size(); at += size)
      out.values.push_back(read_element(bytes.data() + at, dtype));
    outputs.push_back(out);
  }
  return outputs;
}

class OnnxExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rcuda-onnx-" + std::to_string(::getpid()) + "-" + std::to_string(test_seed()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  // Runs `model` in ONNX Runtime on `inputs` and expects `expected`: float32 within 1e-5
  // relative (1e-6 absolute near zero), integers and bools exactly.
  void expect_runtime_matches(const std::string& model, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& expected, const std::string& tag) {
    SCOPED_TRACE(tag);
    const std::string out_dir = file("out-" + tag);
    std::filesystem::create_directories(out_dir);
    std::string command = python_ + " " + reference_script() + " run " + model + " " + out_dir;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string path = file(tag + "-input-" + std::to_string(i) + ".npy");
      write_npy(path, inputs[i]);
      command += " " + path;
    }
    ASSERT_EQ(run_command(command), 0) << command;
    const std::vector<RuntimeOutput> outputs = read_outputs(out_dir);
    ASSERT_EQ(outputs.size(), expected.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      SCOPED_TRACE("output " + std::to_string(i));
      EXPECT_EQ(outputs[i].shape, expected[i].shape());
      const std::vector<double> want = to_doubles(expected[i]);
      ASSERT_EQ(outputs[i].values.size(), want.size());
      const bool exact = !is_floating(expected[i].dtype());
      for (size_t k = 0; k < want.size(); ++k) {
        const double tol = exact ? 0.0 : 1e-5 * std::abs(want[k]) + 1e-6;
        EXPECT_NEAR(outputs[i].values[k], want[k], tol) << "element " << k;
      }
    }
  }

  void check_with_python(const std::string& model) {
    ASSERT_EQ(run_command(python_ + " " + reference_script() + " check " + model), 0);
  }

  std::filesystem::path dir_;
  std::string python_ = python_with_onnx();
};

}  // namespace rcuda::test
