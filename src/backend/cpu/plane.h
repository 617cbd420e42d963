// One [H, W] plane of a [N, C, H, W] tensor that is contiguous or channels-last, as the CPU pool
// and resample loops walk it.
#pragma once

#include <cstdint>

namespace rcuda::cpu {

// Where a plane starts and how its rows and columns step, in elements, for either layout.
struct Plane {
  int64_t channels, height, width;
  bool channels_last;
  int64_t base(int64_t plane) const {
    const int64_t n = plane / channels, c = plane % channels;
    return channels_last ? n * height * width * channels + c : plane * height * width;
  }
  int64_t row_step() const { return channels_last ? width * channels : width; }
  int64_t col_step() const { return channels_last ? channels : 1; }
};

}  // namespace rcuda::cpu
