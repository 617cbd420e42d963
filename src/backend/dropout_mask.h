// The dropout keep-mask, shared by the CPU and CUDA backends.
//
// Note [Dropout mask]
// Element i of a dropout call with generator state (seed, offset) reads lane i % 4 of Philox
// block i / 4, exactly the bits uniform_float draws for element i (Note [Philox stream] in
// rcuda/core/philox.h), and is kept when bits >> 8 >= ceil(p * 2^24), i.e. when that uniform
// in [0, 1) is >= p rounded up to the next multiple of 2^-24. The test is on integers, so a seed
// gives the same mask on every backend, bit for bit; an element is dropped with probability
// ceil(p * 2^24) / 2^24, within 6e-8 of p.
#pragma once

#include <cmath>
#include <cstdint>

#include "rcuda/core/macros.h"

namespace rcuda::backend {

// For 0 < p < 1: in [1, 2^24].
inline uint32_t dropout_threshold(double p) {
  return static_cast<uint32_t>(std::ceil(p * 16777216.0));
}

RCUDA_HOST_DEVICE inline bool dropout_keeps(uint32_t lane_bits, uint32_t threshold) {
  return (lane_bits >> 8) >= threshold;
}

}  // namespace rcuda::backend
