#include "rcuda/core/device.h"

#include <cstdlib>

#include "rcuda/core/error.h"

namespace rcuda {

Device Device::parse(const std::string& spec) {
  if (spec == "cpu") return Device(DeviceType::CPU);
  if (spec == "cuda") return Device(DeviceType::CUDA, 0);
  if (spec.rfind("cuda:", 0) == 0 && spec.size() > 5) {
    const std::string digits = spec.substr(5);
    bool all_digits = digits.size() <= 6;
    for (char c : digits) all_digits = all_digits && c >= '0' && c <= '9';
    if (all_digits) return Device(DeviceType::CUDA, std::atoi(digits.c_str()));
  }
  throw ValueError("device: cannot parse '" + spec +
                   "' (expected \"cpu\", \"cuda\" or \"cuda:N\")");
}

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

}  // namespace rcuda
