// Reading and checking a group's hyper-parameters (Note [Hyper-parameters by name] in
// rcuda/optim/optimizer.h): every error names the optimizer, the group, the option and its
// value, with torch's wording ("invalid learning rate").
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "rcuda/optim/optimizer.h"

namespace rcuda::optim::detail {

class OptionReader {
 public:
  OptionReader(const std::string& optimizer, const ParamGroup& group, size_t group_index)
      : optimizer_(optimizer), group_(group), group_index_(group_index) {}

  double number(const char* name) const;
  bool flag(const char* name) const;
  std::array<double, 2> pair(const char* name) const;  // a list of exactly two numbers

  // number(name), checked >= 0; `what` is torch's phrase ("learning rate").
  double nonnegative(const char* name, const char* what) const;
  // Throws ValueError "<optimizer>: invalid <what>: <name> = <value> in param group <i>
  // (expected <expected>)".
  [[noreturn]] void invalid(const char* what, const std::string& name, double value,
                            const char* expected) const;

 private:
  const OptionValue& find(const char* name) const;
  const std::string& optimizer_;
  const ParamGroup& group_;
  size_t group_index_;
};

}  // namespace rcuda::optim::detail
