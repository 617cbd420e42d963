// The [N, C, S] views that the CPU normalisation loops walk (Note [Normalisation primitives] in
// rcuda/backend/backend.h): contiguous (C*S, S, 1) or channels-last (S*C, 1, C).
#pragma once

#include <cstdint>
#include <type_traits>

#include "rcuda/tensor/tensor.h"

namespace rcuda::cpu {

// float64 statistics for float64 input, float32 for the others (as torch).
template <typename T>
using NormStatsType = std::conditional_t<std::is_same_v<T, double>, double, float>;

struct NormLayout {
  int64_t n, c, s;
  bool channels_last;
  // A tensor that is both contiguous and channels-last (C == 1 or S == 1) has the same offsets
  // either way, so the flag read from the input holds for every tensor of the call.
  explicit NormLayout(const Tensor& t)
      : n(t.shape()[0]), c(t.shape()[1]), s(t.shape()[2]), channels_last(!t.is_contiguous()) {}
  int64_t offset(int64_t sample, int64_t channel, int64_t spatial) const {
    return channels_last ? (sample * s + spatial) * c + channel
                         : (sample * c + channel) * s + spatial;
  }
};

template <typename T>
const T* optional_data(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace rcuda::cpu
