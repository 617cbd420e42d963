// Atomic read-modify-write of 1- and 2-byte elements (bool, uint8, int8, int16, and the half
// types where their atomicAdd is missing), which the GPU has no instructions for: a
// compare-and-swap loop on the aligned 32-bit word that holds the element, leaving its other
// bytes as they are. Shared by scatter_add (index.cu) and index_add (nn_index_add.cu), so both
// wrap integer sums the same way as the CPU.
#pragma once

#include <cstdint>
#include <type_traits>

namespace rcuda::cuda {

// *address = update(*address), atomically; U is an unsigned type of 1 or 2 bytes.
template <typename U, typename Update>
__device__ void atomic_update_narrow(U* address, Update update) {
  static_assert(std::is_unsigned_v<U> && sizeof(U) <= 2, "atomic_update_narrow: 1 or 2 bytes");
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  unsigned int* word = reinterpret_cast<unsigned int*>(a & ~uintptr_t{3});
  const unsigned shift = static_cast<unsigned>(a & 3u) * 8u;
  const unsigned mask = ((1u << (8 * sizeof(U))) - 1u) << shift;
  unsigned old = *word, assumed;
  do {
    assumed = old;
    const U current = static_cast<U>((assumed & mask) >> shift);
    const unsigned updated = (assumed & ~mask) | (static_cast<unsigned>(update(current)) << shift);
    old = atomicCAS(word, assumed, updated);
  } while (old != assumed);
}

// *target += value for a narrow integer type T (uint8, int8, int16), wrapping on overflow as
// the CPU does: the sum is taken on the unsigned bits, where two's complement wraps alike.
template <typename T>
__device__ void atomic_add_narrow_integer(T* target, T value) {
  static_assert(std::is_integral_v<T> && sizeof(T) <= 2, "atomic_add_narrow_integer: 8/16 bits");
  using U = std::make_unsigned_t<T>;
  const U addend = static_cast<U>(value);
  atomic_update_narrow(reinterpret_cast<U*>(target),
                       [addend](U current) { return static_cast<U>(current + addend); });
}

}  // namespace rcuda::cuda
