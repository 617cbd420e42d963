// Test support for tests/io: a fresh folder per test, files written byte by byte, and the
// python3 that has the reference safetensors implementation (when one is installed).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>

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

// The python3 that imports `modules` (comma-separated): the one on PATH, else Debian's; "" when
// neither does. Probed once per run and modules: each probe is a second of imports, and every
// test of a fixture asks.
inline std::string python_that_imports(const std::string& modules) {
  static std::map<std::string, std::string> found;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = found.find(modules);
  if (it != found.end()) return it->second;
  std::string python_found;
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    const std::string probe = std::string(python) + " -c 'import " + modules + "' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) {
      python_found = python;
      break;
    }
  }
  return found[modules] = python_found;
}

inline std::string python_with_safetensors() { return python_that_imports("safetensors, numpy"); }

// Why a test that needs python_with_safetensors() skipped.
inline constexpr const char* kNoPython =
    "no python3 with safetensors and numpy (scripts/install-deps.sh installs them)";

inline std::string python_helper() {
  return std::string(RCUDA_TESTS_DIR) + "/io/safetensors_python.py";
}

}  // namespace rcuda::test
