// Indexing primitives: index_select, gather, scatter (overwrite or accumulate), nonzero, cat.
//
// index_select and gather are one elementwise loop (Note [Indexing through a zero stride] in
// backend/indexing.h) on the strided engine (coalescing, OpenMP) of loops.h. scatter writes
// instead of reads, so threads own whole rows along dim (see scatter_typed) and never write the
// same element.
#include <omp.h>

#include <cstring>
#include <exception>
#include <vector>

#include "backend/cat_layout.h"
#include "backend/indexing.h"
#include "cpu_backend.h"
#include "dispatch.h"
#include "loops.h"

namespace rcuda::cpu {
namespace {

using backend::dispatch_width;

[[noreturn]] void throw_index_out_of_range(const char* op, int64_t index, int64_t dim,
                                           int64_t size) {
  throw backend::index_out_of_bounds(op, index, dim, size);
}

inline int64_t checked_index(const char* op, int64_t index, int64_t dim, int64_t size) {
  if (!backend::index_in_bounds(index, size)) throw_index_out_of_range(op, index, dim, size);
  return index;
}

inline int64_t load_index(const char* p) { return *reinterpret_cast<const int64_t*>(p); }

// out[pos] = in[pos with pos[dim] = index[pos]]; index has out's shape (any strides, zeros
// included); in.size(d) >= out.size(d) for d != dim. Note [Indexing through a zero stride].
template <typename U>
void gather_elements(const char* op, const Tensor& out, const Tensor& in, int64_t dim,
                     const Tensor& index) {
  const Tensor in_through = backend::through_dim(in, out.shape(), dim);
  const int64_t size = in.size(dim);
  const int64_t dim_step = in.stride(dim) * static_cast<int64_t>(sizeof(U));
  constexpr int64_t kWidth = sizeof(U);
  for_each_row<3>({out, in_through, index}, [&](const std::array<char*, 3>& p,
                                                const std::array<int64_t, 3>& s, int64_t n) {
    if (s[2] == 0) {
      // One index for the whole row (index_select along an outer dim): a plain strided copy.
      const char* from = p[1] + checked_index(op, load_index(p[2]), dim, size) * dim_step;
      if (s[0] == kWidth && s[1] == kWidth) {
        std::memcpy(p[0], from, static_cast<size_t>(n) * sizeof(U));
      } else {
        for (int64_t k = 0; k < n; ++k)
          *reinterpret_cast<U*>(p[0] + k * s[0]) = *reinterpret_cast<const U*>(from + k * s[1]);
      }
      return;
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = checked_index(op, load_index(p[2] + k * s[2]), dim, size);
      *reinterpret_cast<U*>(p[0] + k * s[0]) =
          *reinterpret_cast<const U*>(p[1] + k * s[1] + i * dim_step);
    }
  });
}

// out[.., index[pos], ..] = src[pos] (or +=) for every position pos of index. Each loop position
// below is one row of index along dim; distinct rows write distinct elements of out, so threads
// never race, and within a row later positions win, as torch on the CPU.
template <typename T>
void scatter_typed(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                   bool accumulate) {
  using C = ComputeType<T>;
  const int64_t length = index.size(dim);
  const Tensor index_rows = index.select(dim, 0);
  const Tensor src_rows = src.select(dim, 0);
  Strides out_strides = out.strides();
  out_strides.erase(out_strides.begin() + dim);
  const Tensor out_rows = out.as_strided(index_rows.shape(), out_strides, out.offset());

  constexpr int64_t kWidth = sizeof(T);
  const int64_t index_step = index.stride(dim) * static_cast<int64_t>(sizeof(int64_t));
  const int64_t src_step = src.stride(dim) * kWidth;
  const int64_t out_step = out.stride(dim) * kWidth;
  const int64_t size = out.size(dim);
  const char* op = accumulate ? "scatter_add" : "scatter";
  for_each_row<3>(
      {index_rows, src_rows, out_rows},
      [&](const std::array<char*, 3>& p, const std::array<int64_t, 3>& s, int64_t n) {
        for (int64_t k = 0; k < n; ++k) {
          const char* index_row = p[0] + k * s[0];
          const char* src_row = p[1] + k * s[1];
          char* out_row = p[2] + k * s[2];
          for (int64_t j = 0; j < length; ++j) {
            const int64_t i = checked_index(op, load_index(index_row + j * index_step), dim, size);
            T& target = *reinterpret_cast<T*>(out_row + i * out_step);
            const T value = *reinterpret_cast<const T*>(src_row + j * src_step);
            target = accumulate ? convert<T>(static_cast<C>(convert<C>(target) + convert<C>(value)))
                                : value;
          }
        }
      });
}

// Calls f(coords, element) for the elements [begin, end) of t in row-major (logical) order,
// whatever its strides: nonzero's output order is logical, not memory order.
template <typename F>
void walk_row_major(const Tensor& t, int64_t begin, int64_t end, F&& f) {
  if (begin >= end) return;
  const int64_t ndim = t.dim();
  const char* base = static_cast<const char*>(t.data_ptr());
  const int64_t width = static_cast<int64_t>(t.element_size());
  if (ndim == 0) {
    f(static_cast<const int64_t*>(nullptr), base);
    return;
  }
  std::vector<int64_t> coords(static_cast<size_t>(ndim));
  int64_t rest = begin;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    coords[d] = rest % t.shape()[d];
    rest /= t.shape()[d];
  }
  const int64_t inner = t.shape()[ndim - 1];
  const int64_t inner_step = t.strides()[ndim - 1] * width;
  for (int64_t i = begin; i < end;) {
    const char* p = base;
    for (int64_t d = 0; d < ndim; ++d) p += coords[d] * t.strides()[d] * width;
    const int64_t count = std::min(inner - coords[ndim - 1], end - i);
    for (int64_t k = 0; k < count; ++k, p += inner_step) {
      f(coords.data(), p);
      ++coords[ndim - 1];
    }
    i += count;
    for (int64_t d = ndim - 1; d > 0 && coords[d] == t.shape()[d]; --d) {
      coords[d] = 0;
      ++coords[d - 1];
    }
  }
}

// Runs f(chunk) for chunk in [0, chunks) on OpenMP threads; the first exception is rethrown after
// the region (one must not escape it), as parallel_range does.
template <typename F>
void for_each_chunk(int chunks, F&& f) {
  std::exception_ptr error;
#pragma omp parallel for num_threads(chunks) if (chunks > 1) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    try {
      f(c);
    } catch (...) {
#pragma omp critical(rcuda_index_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

template <typename T>
inline bool is_nonzero(T v) {
  if constexpr (kIsReducedFloat<T>) {
    return static_cast<float>(v) != 0.0f;
  } else {
    return v != T(0);  // NaN counts as nonzero, as torch
  }
}

// Two passes over row-major chunks: count the nonzeros of each, then write each chunk's coordinates
// at its offset, so the output keeps row-major order on any thread count.
template <typename T>
Tensor nonzero_typed(const Tensor& in) {
  const int64_t n = in.numel(), ndim = in.dim();
  const int chunks = n >= kParallelGrain && !omp_in_parallel() ? omp_get_max_threads() : 1;
  auto chunk_begin = [&](int c) { return n * c / chunks; };
  std::vector<int64_t> offsets(static_cast<size_t>(chunks) + 1, 0);
  for_each_chunk(chunks, [&](int c) {
    int64_t count = 0;
    walk_row_major(in, chunk_begin(c), chunk_begin(c + 1), [&](const int64_t*, const char* p) {
      count += is_nonzero(*reinterpret_cast<const T*>(p)) ? 1 : 0;
    });
    offsets[c + 1] = count;
  });
  for (int c = 0; c < chunks; ++c) offsets[c + 1] += offsets[c];

  Tensor out = Tensor::empty({offsets[chunks], ndim}, DType::Int64, in.device());
  int64_t* coords_out = out.data<int64_t>();
  for_each_chunk(chunks, [&](int c) {
    int64_t* row = coords_out + offsets[c] * ndim;
    walk_row_major(in, chunk_begin(c), chunk_begin(c + 1),
                   [&](const int64_t* coords, const char* p) {
                     if (!is_nonzero(*reinterpret_cast<const T*>(p))) return;
                     for (int64_t d = 0; d < ndim; ++d) row[d] = coords[d];
                     row += ndim;
                   });
  });
  return out;
}

}  // namespace

void CpuBackend::index_select(const Tensor& out, const Tensor& in, int64_t dim,
                              const Tensor& index) {
  const Tensor index_spread = backend::index_select_as_gather(index, out.shape(), dim);
  dispatch_width(in.element_size(), [&](auto tag) {
    gather_elements<decltype(tag)>("index_select", out, in, dim, index_spread);
  });
}

void CpuBackend::gather(const Tensor& out, const Tensor& in, int64_t dim, const Tensor& index) {
  dispatch_width(in.element_size(),
                 [&](auto tag) { gather_elements<decltype(tag)>("gather", out, in, dim, index); });
}

void CpuBackend::scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src,
                         bool accumulate) {
  if (index.numel() == 0) return;
  dispatch_all(out.dtype(),
               [&](auto tag) { scatter_typed<decltype(tag)>(out, dim, index, src, accumulate); });
}

Tensor CpuBackend::nonzero(const Tensor& in) {
  return dispatch_all(in.dtype(), [&](auto tag) { return nonzero_typed<decltype(tag)>(in); });
}

// Each input's parts are whole runs of bytes, both in the input and in the output's rows.
void CpuBackend::cat(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim) {
  const backend::CatLayout layout = backend::cat_layout(out, dim);
  const int64_t element = static_cast<int64_t>(out.element_size());
  const int64_t row_bytes = out.size(dim) * layout.inner * element;
  char* dst = static_cast<char*>(out.data_ptr());
  int64_t offset = 0;
  for (const Tensor& in : inputs) {
    const int64_t part = in.size(dim) * layout.inner * element;
    const char* src = static_cast<const char*>(in.data_ptr());
    for (int64_t row = 0; row < layout.rows; ++row)
      std::memcpy(dst + row * row_bytes + offset, src + row * part, static_cast<size_t>(part));
    offset += part;
  }
}

}  // namespace rcuda::cpu
