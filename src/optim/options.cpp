#include "optim/options.h"

#include <cmath>
#include <sstream>

#include "rcuda/core/error.h"

namespace rcuda::optim {
namespace {

const char* kind_of(const OptionValue& value) {
  if (std::holds_alternative<double>(value)) return "a number";
  if (std::holds_alternative<bool>(value)) return "a flag";
  return "a list of numbers";
}

const OptionValue& find_option(const ParamGroup& group, const std::string& name,
                               const std::string& who) {
  const auto it = group.options.find(name);
  RCUDA_CHECK(it != group.options.end(), ValueError, who, ": no option '", name, "'");
  return it->second;
}

template <typename T>
const T& get_as(const OptionValue& value, const std::string& name, const std::string& who,
                const char* expected) {
  const T* v = std::get_if<T>(&value);
  RCUDA_CHECK(v != nullptr, ValueError, who, ": option '", name, "' is ", kind_of(value),
              ", expected ", expected);
  return *v;
}

}  // namespace

double ParamGroup::number(const std::string& name) const {
  return get_as<double>(find_option(*this, name, "param group"), name, "param group", "a number");
}
bool ParamGroup::flag(const std::string& name) const {
  return get_as<bool>(find_option(*this, name, "param group"), name, "param group", "a flag");
}
const std::vector<double>& ParamGroup::numbers(const std::string& name) const {
  return get_as<std::vector<double>>(find_option(*this, name, "param group"), name, "param group",
                                     "a list of numbers");
}

namespace detail {

const OptionValue& OptionReader::find(const char* name) const {
  return find_option(group_, name, optimizer_ + ": param group " + std::to_string(group_index_));
}

double OptionReader::number(const char* name) const {
  return get_as<double>(find(name), name,
                        optimizer_ + ": param group " + std::to_string(group_index_), "a number");
}

bool OptionReader::flag(const char* name) const {
  return get_as<bool>(find(name), name,
                      optimizer_ + ": param group " + std::to_string(group_index_), "a flag");
}

std::array<double, 2> OptionReader::pair(const char* name) const {
  const std::string who = optimizer_ + ": param group " + std::to_string(group_index_);
  const std::vector<double> v =
      get_as<std::vector<double>>(find(name), name, who, "a list of two numbers");
  RCUDA_CHECK(v.size() == 2, ValueError, who, ": option '", name, "' has ", v.size(),
              " numbers, expected 2");
  return {v[0], v[1]};
}

double OptionReader::nonnegative(const char* name, const char* what) const {
  const double value = number(name);
  // !(value >= 0) also refuses NaN.
  if (!(value >= 0)) invalid(what, name, value, (std::string(name) + " >= 0").c_str());
  return value;
}

void OptionReader::invalid(const char* what, const std::string& name, double value,
                           const char* expected) const {
  std::ostringstream message;
  message << optimizer_ << ": invalid " << what << ": " << name << " = " << value
          << " in param group " << group_index_ << " (expected " << expected << ")";
  throw ValueError(message.str());
}

}  // namespace detail
}  // namespace rcuda::optim
