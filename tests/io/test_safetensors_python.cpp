// Files written by the reference implementation (huggingface/safetensors in Python) read by
// rcuda, and rcuda's files read by it. Skipped, saying why, where it is not installed.
#include <nlohmann/json.hpp>

#include "io/io_test_util.h"
#include "rcuda/io/safetensors.h"
#include "rcuda/ops/complex.h"

namespace rcuda::test {
namespace {

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(read_bytes(path));
}

int run(const std::string& command) { return std::system((command + " >&2").c_str()); }

// What each code becomes in rcuda (Note [Safetensors dtypes]).
DType rcuda_dtype_of(const std::string& code) {
  if (code == "F64") return DType::Float64;
  if (code == "F32") return DType::Float32;
  if (code == "F16") return DType::Float16;
  if (code == "BF16") return DType::BFloat16;
  if (code == "I64" || code == "U32") return DType::Int64;
  if (code == "I32" || code == "U16") return DType::Int32;
  if (code == "I16") return DType::Int16;
  if (code == "I8") return DType::Int8;
  if (code == "U8") return DType::UInt8;
  if (code == "BOOL") return DType::Bool;
  if (code == "F8_E4M3") return DType::Float8E4M3FN;
  if (code == "F8_E5M2") return DType::Float8E5M2;
  if (code == "C64") return DType::Complex64;
  ADD_FAILURE() << "unexpected code " << code;
  return DType::Float32;
}

// Compares values exactly: int64 as integers (doubles would round past 2^53), the rest as the
// doubles Python decoded; complex values as their real pairs.
void expect_values(const Tensor& t, const nlohmann::json& values, const std::string& name) {
  if (is_complex(t.dtype())) return expect_values(ops::view_as_real(t), values, name);
  SCOPED_TRACE(name);
  ASSERT_EQ(static_cast<int64_t>(values.size()), t.numel());
  if (t.dtype() == DType::Int64) {
    const Tensor c = contiguous(t);
    for (int64_t i = 0; i < t.numel(); ++i)
      EXPECT_EQ(c.data<int64_t>()[i], values[i].get<int64_t>()) << "element " << i;
    return;
  }
  const std::vector<double> actual = to_doubles(t);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double expected =
        values[i].is_boolean() ? (values[i].get<bool>() ? 1.0 : 0.0) : values[i].get<double>();
    EXPECT_EQ(actual[i], expected) << "element " << i;
  }
}

TEST_F(SafetensorsTest, FileWrittenByPythonSafetensorsLoads) {
  const std::string python = python_with_safetensors();
  if (python.empty()) GTEST_SKIP() << kNoPython;
  const std::string path = file("python.safetensors"), json_path = file("python.json");
  ASSERT_EQ(run(python + " " + python_helper() + " write " + std::to_string(test_seed() >> 1) +
                " " + path + " " + json_path),
            0);
  const nlohmann::json expected = read_json(json_path);
  const io::SafetensorsContents back = io::load_safetensors(path);
  ASSERT_EQ(back.tensors.size(), expected["tensors"].size());
  for (const auto& [name, t] : back.tensors) {
    ASSERT_TRUE(expected["tensors"].contains(name)) << name;
    const nlohmann::json e = expected["tensors"][name];
    EXPECT_EQ(t.dtype(), rcuda_dtype_of(e["dtype"])) << name;
    EXPECT_EQ(t.shape(), e["shape"].get<Shape>()) << name;
    expect_values(t, e["values"], name);
  }
  EXPECT_EQ(back.metadata, expected["metadata"].get<io::Metadata>());
}

TEST_F(SafetensorsTest, PythonSafetensorsReadsOurFiles) {
  const std::string python = python_with_safetensors();
  if (python.empty()) GTEST_SKIP() << kNoPython;
  io::NamedTensors tensors;
  for (DType dtype : {DType::Bool, DType::UInt8, DType::Int8, DType::Int16, DType::Int32,
                      DType::Int64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64,
                      DType::Float8E4M3FN, DType::Float8E5M2})
    tensors.emplace_back(dtype_name(dtype), random_tensor({2, 3}, dtype));
  tensors.emplace_back("complex64", ops::view_as_complex(random_tensor({2, 3, 2}, DType::Float32)));
  tensors.emplace_back("view", transposed_copy(random_tensor({4, 3}, DType::Float32)));
  tensors.emplace_back("empty", random_tensor({0, 5}, DType::Float64));
  tensors.emplace_back("scalar", random_tensor({}, DType::Int64));
  const io::Metadata metadata = {{"format", "pt"}, {"rcuda", "{\"version\":1}"}};
  const std::string path = file("ours.safetensors"), json_path = file("ours.json");
  io::save_safetensors(path, tensors, metadata);
  ASSERT_EQ(run(python + " " + python_helper() + " read " + path + " " + json_path), 0);

  const nlohmann::json seen = read_json(json_path);
  ASSERT_EQ(seen["tensors"].size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    ASSERT_TRUE(seen["tensors"].contains(name)) << name;
    const nlohmann::json s = seen["tensors"][name];
    EXPECT_EQ(s["dtype"], io::safetensors_dtype_code(t.dtype())) << name;
    EXPECT_EQ(s["shape"].get<Shape>(), t.shape()) << name;
    expect_values(t, s["values"], name);
  }
  EXPECT_EQ(seen["metadata"].get<io::Metadata>(), metadata);
}

}  // namespace
}  // namespace rcuda::test
