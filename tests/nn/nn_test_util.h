// Test support for rcuda::nn: double-precision references shared by the nn tests, and a check
// that skips (reported as skipped, with the reason) a gradient test whose functions rest on op
// gradients this build does not have yet.
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

// True when f's output records a node and backward through it runs.
inline bool has_gradient(const std::function<Tensor(const Tensor&)>& f) {
  const Tensor x = tensor_of({0.5, 0.25, 0.75, 0.125, 0.375, 0.625}, {2, 3}, DType::Float64);
  x.requires_grad_();
  try {
    const Tensor y = f(x);
    if (!y.requires_grad()) return false;
    autograd::grad({sum(y)}, {x});
    return true;
  } catch (const Error&) {
    return false;
  }
}

// The names among `needed` whose op gradients are missing in this build, comma separated.
// "unary" stands for the unary elementwise ops (exp, log, abs, ...), which share one formula.
inline std::string missing_gradients(const std::vector<std::string>& needed) {
  std::string missing;
  for (const std::string& name : needed) {
    bool ok = true;
    if (name == "unary") {
      ok = has_gradient([](const Tensor& x) { return exp(x); });
    } else if (name == "log_softmax") {
      ok = has_gradient([](const Tensor& x) { return log_softmax(x, 1); });
    } else if (name == "gather") {
      const Tensor index = tensor_of({0, 2}, {2, 1}, DType::Int64);
      ok = has_gradient([&](const Tensor& x) { return gather(x, 1, index); });
    } else if (name == "index_select") {
      const Tensor index = tensor_of({1, 0}, {2}, DType::Int64);
      ok = has_gradient([&](const Tensor& x) { return index_select(x, 0, index); });
    } else {
      ADD_FAILURE() << "missing_gradients: unknown name " << name;
    }
    if (!ok) missing += (missing.empty() ? "" : ", ") + name;
  }
  return missing;
}

// Skips the test when an op gradient it needs is not in this build yet.
#define RCUDA_NEEDS_GRADIENTS(...)                                                             \
  do {                                                                                         \
    const std::string rcuda_missing = ::rcuda::test::missing_gradients({__VA_ARGS__});         \
    if (!rcuda_missing.empty())                                                                \
      GTEST_SKIP() << "needs the gradients of " << rcuda_missing << ", not in this build yet"; \
  } while (0)

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
