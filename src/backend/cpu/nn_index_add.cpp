// index_add on the CPU: out[.., index[i], ..] += src[.., i, ..]. out and src are seen as
// [outer, size, inner] around dim. Each (outer, inner) position adds its sources in index
// order, and positions are split between threads, so no two threads write one element and the
// sums do not depend on the thread count.
#include <algorithm>

#include "backend/dispatch.h"
#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {
namespace {

template <typename T>
void index_add_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t* idx = index.data<int64_t>();
  const int64_t count = index.numel(), size = out.shape()[dim];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out.shape()[d];
  for (int64_t d = dim + 1; d < out.dim(); ++d) inner *= out.shape()[d];
  T* o = out.data<T>();
  const T* s = src.data<T>();
  // Units of work: an outer position and a range of at most 256 inner positions.
  const int64_t pieces_per_outer = inner >= 256 ? (inner + 255) / 256 : 1;
  const int64_t piece = (inner + pieces_per_outer - 1) / pieces_per_outer;
  parallel_units(outer * pieces_per_outer, count * piece, [&](int64_t first, int64_t last) {
    for (int64_t unit = first; unit < last; ++unit) {
      const int64_t o_index = unit / pieces_per_outer;
      const int64_t k0 = (unit % pieces_per_outer) * piece, k1 = std::min(inner, k0 + piece);
      for (int64_t i = 0; i < count; ++i) {
        T* dst = o + (o_index * size + idx[i]) * inner;
        const T* from = s + (o_index * count + i) * inner;
        // The half types add in float32 and round once per addition, as torch's CPU kernel.
        for (int64_t k = k0; k < k1; ++k) dst[k] = backend::wrapping_add(dst[k], from[k]);
      }
    }
  });
}

}  // namespace

void CpuBackend::index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t size = out.shape()[dim];
  const int64_t* idx = index.data<int64_t>();
  for (int64_t i = 0; i < index.numel(); ++i)
    RCUDA_CHECK(idx[i] >= 0 && idx[i] < size, IndexError, "index_add_: index ", idx[i],
                " is out of bounds for dim ", dim, " with size ", size);
  dispatch_all(out.dtype(),
               [&](auto tag) { index_add_typed<decltype(tag)>(out, dim, index, src); });
}

}  // namespace rcuda::cpu
