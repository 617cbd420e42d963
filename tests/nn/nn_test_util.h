// Test support for rcuda::nn: double-precision references shared by the nn tests.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"

namespace rcuda::test {

// Row-major values of a CPU or GPU tensor.
inline std::vector<double> host_values(const Tensor& t) {
  return to_doubles(t.device().is_cpu() ? t : to(t, Device()));
}

// Results of a few composed ops and a sum, relative to max(1, |value|): float32 a little above
// one op's rounding, float16/bfloat16 a few roundings of their own.
inline double loss_tolerance(DType dtype) {
  return dtype == DType::Float64 ? 1e-12 : dtype == DType::Float32 ? 2e-5 : 4 * tolerance(dtype);
}

// The reduction of per-element reference losses, as a one-element vector (or the losses).
inline std::vector<double> reduce_reference(const std::vector<double>& losses,
                                            const std::string& reduction) {
  if (reduction == "none") return losses;
  double total = 0;
  for (double v : losses) total += v;
  if (reduction == "sum") return {total};
  return {losses.empty() ? std::nan("") : total / static_cast<double>(losses.size())};
}

// Element i of a tensor of `shape` read with broadcasting from values of `from` (row-major).
inline double broadcast_at(const std::vector<double>& values, const Shape& from, const Shape& shape,
                           int64_t flat) {
  int64_t offset = 0, stride = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    const int64_t index = flat % shape[d];
    flat /= shape[d];
    const int64_t fd = d - static_cast<int64_t>(shape.size() - from.size());
    if (fd < 0) continue;
    if (from[fd] != 1) offset += index * stride;
    stride *= from[fd];
  }
  return values[static_cast<size_t>(offset)];
}

// Substring check for error messages.
inline ::testing::AssertionResult mentions(const std::string& message,
                                           const std::vector<std::string>& parts) {
  for (const std::string& part : parts)
    if (message.find(part) == std::string::npos)
      return ::testing::AssertionFailure()
             << "\"" << message << "\" does not mention \"" << part << "\"";
  return ::testing::AssertionSuccess();
}

}  // namespace rcuda::test
