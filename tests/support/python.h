// Test support: the python3 that a test's reference script needs.
#pragma once

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace rcuda::test {

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

}  // namespace rcuda::test
