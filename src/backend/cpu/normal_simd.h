// Vectorised Philox normals (normal_simd.cpp, compiled with -ffast-math on its own).
#pragma once

#include <cstdint>

namespace rcuda::cpu {

constexpr int kNormalChunkBlocks = 256;  // 1024 floats: fits L1 with its scratch arrays

// out[0 .. 4 * blocks) = philox::normal_float(seed, offset, 4 * first_block + i), to within
// libmvec's 4 ulp. blocks <= kNormalChunkBlocks.
void normal_float_blocks(uint64_t seed, uint64_t offset, uint64_t first_block, int blocks,
                         float* out);

}  // namespace rcuda::cpu
