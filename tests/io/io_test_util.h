// Test support for tests/io: a fresh folder per test, files written byte by byte, and the
// python3 that has the reference safetensors implementation (when one is installed).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "support/python.h"
#include "support/reference.h"

namespace rcuda::test {

// A folder of its own for each test, removed after it.
class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rcuda-io-" + std::to_string(::getpid()) + "-" + std::to_string(test_seed()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// An 8-byte little-endian size, as the format's prefix.
inline std::string size_prefix(uint64_t n) {
  std::string s(8, '\0');
  for (int b = 0; b < 8; ++b) s[b] = static_cast<char>((n >> (8 * b)) & 0xFF);
  return s;
}

// A safetensors file made by hand: the prefix, `header` as given, then `data`.
inline std::string raw_file(const std::string& header, const std::string& data) {
  return size_prefix(header.size()) + header + data;
}

inline std::string python_with_safetensors() { return python_that_imports("safetensors, numpy"); }

// Why a test that needs python_with_safetensors() skipped.
inline constexpr const char* kNoPython =
    "no python3 with safetensors and numpy (scripts/install-deps.sh installs them)";

inline std::string python_helper() {
  return std::string(RCUDA_TESTS_DIR) + "/io/safetensors_python.py";
}

}  // namespace rcuda::test
