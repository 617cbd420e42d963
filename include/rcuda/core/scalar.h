// A number passed by value (the `2` in `x + 2`): bool, integer or floating, which matters for
// type promotion (an integer tensor plus 2.5 is float32, plus 2 stays integral).
#pragma once

#include <cstdint>

#include "rcuda/core/dtype.h"

namespace rcuda {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  Scalar(double v) : kind_(Kind::Float), d_(v), i_(static_cast<int64_t>(v)) {}  // NOLINT
  Scalar(float v) : Scalar(static_cast<double>(v)) {}                           // NOLINT
  Scalar(int64_t v) : kind_(Kind::Int), d_(static_cast<double>(v)), i_(v) {}    // NOLINT
  Scalar(int v) : Scalar(static_cast<int64_t>(v)) {}                            // NOLINT
  Scalar(bool v) : kind_(Kind::Bool), d_(v ? 1.0 : 0.0), i_(v ? 1 : 0) {}       // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  double to_double() const { return d_; }
  int64_t to_int() const { return i_; }
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0.0 : i_ != 0; }
  // The dtype this scalar has on its own: bool, int64 or the default float dtype.
  DType natural_dtype() const {
    return kind_ == Kind::Bool  ? DType::Bool
           : kind_ == Kind::Int ? DType::Int64
                                : default_float_dtype();
  }

 private:
  Kind kind_;
  double d_;
  int64_t i_;
};

}  // namespace rcuda
