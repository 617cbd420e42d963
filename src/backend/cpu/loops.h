// The CPU elementwise engine: walks N same-shaped operands (output first), coalescing dims that
// are contiguous in every operand, so that most work runs as long rows with fixed strides.
// Rows whose strides equal the element sizes take a contiguous path the compiler vectorises.
#pragma once

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <numeric>
#include <vector>

#include "backend/strided_loop.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::cpu {

using backend::make_loop;
using backend::StridedLoop;

// Below this many elements a loop stays on one thread: starting a parallel region costs
// microseconds, more than the work.
constexpr int64_t kParallelGrain = 32768;

// Runs [begin, end) of the loop's linear index space as rows: row(ptrs, strides, count).
template <int N, typename Row>
void run_rows(const StridedLoop<N>& loop, int64_t begin, int64_t end, Row& row) {
  const int nd = static_cast<int>(loop.sizes.size());
  const int64_t inner = loop.sizes[nd - 1];
  std::array<int64_t, N> inner_strides;
  for (int k = 0; k < N; ++k) inner_strides[k] = loop.byte_strides[k][nd - 1];
  DimVector index(static_cast<size_t>(nd));  // Note [Small vectors]
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    index[d] = rem % loop.sizes[d];
    rem /= loop.sizes[d];
  }
  std::array<char*, N> ptrs;
  for (int64_t i = begin; i < end;) {
    for (int k = 0; k < N; ++k) {
      char* p = loop.data[k];
      for (int d = 0; d < nd; ++d) p += index[d] * loop.byte_strides[k][d];
      ptrs[k] = p;
    }
    const int64_t count = std::min(inner - index[nd - 1], end - i);
    row(ptrs, inner_strides, count);
    i += count;
    index[nd - 1] += count;
    for (int d = nd - 1; d > 0 && index[d] == loop.sizes[d]; --d) {
      index[d] = 0;
      ++index[d - 1];
    }
  }
}

// Splits the linear range over OpenMP threads when it is large enough.
template <typename Range>
void parallel_range(int64_t numel, Range range) {
  if (numel < kParallelGrain || omp_get_max_threads() == 1 || omp_in_parallel()) {
    range(int64_t{0}, numel);
    return;
  }
  // An exception must not leave an OpenMP region (that terminates the process): the first one
  // is kept and rethrown after the region.
  std::exception_ptr error;
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t chunk = (numel + threads - 1) / threads;
    const int64_t begin = std::min(numel, t * chunk), end = std::min(numel, begin + chunk);
    try {
      if (begin < end) range(begin, end);
    } catch (...) {
#pragma omp critical(rcuda_parallel_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

// parallel_range over `units` units of about `cost` elements each (rows of a row-wise op):
// range(first, last) receives whole units, so the grain still counts elements of work.
template <typename Range>
void parallel_units(int64_t units, int64_t cost, Range range) {
  cost = std::max<int64_t>(cost, 1);
  parallel_range(units * cost, [&](int64_t begin, int64_t end) {
    const int64_t first = (begin + cost - 1) / cost, last = (end + cost - 1) / cost;
    if (first < last) range(first, last);
  });
}

template <int N, typename Row>
void for_each_row(const std::array<Tensor, N>& operands, Row row) {
  if (operands[0].numel() == 0) return;
  const StridedLoop<N> loop = make_loop<N>(operands);
  parallel_range(loop.numel,
                 [&](int64_t begin, int64_t end) { run_rows<N>(loop, begin, end, row); });
}

// out[i] = f(in[i]) with conversion through ComputeType; contiguous rows vectorise.
template <typename Out, typename In, typename F>
void unary_loop(const Tensor& out, const Tensor& in, F f) {
  for_each_row<2>({out, in}, [&](const std::array<char*, 2>& p, const std::array<int64_t, 2>& s,
                                 int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const In*>(p[1] + i * s[1]));
    }
  });
}

// out[i] = f(a[i], b[i]); fast paths for contiguous rows and a broadcast (stride 0) operand.
template <typename Out, typename In, typename F>
void binary_loop(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  for_each_row<3>({out, a, b}, [&](const std::array<char*, 3>& p, const std::array<int64_t, 3>& s,
                                   int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    const In* y = reinterpret_cast<const In*>(p[2]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == sizeof(In)) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == 0) {
      const In yv = *y;
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
    } else if (s[0] == sizeof(Out) && s[1] == 0 && s[2] == sizeof(In)) {
      const In xv = *x;
      for (int64_t i = 0; i < n; ++i) o[i] = f(xv, y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const In*>(p[1] + i * s[1]),
                                                     *reinterpret_cast<const In*>(p[2] + i * s[2]));
    }
  });
}

// out[i] = f(a[i], b[i], c[i]); a fast path for contiguous rows.
template <typename Out, typename In, typename F>
void ternary_loop(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, F f) {
  for_each_row<4>({out, a, b, c}, [&](const std::array<char*, 4>& p,
                                      const std::array<int64_t, 4>& s, int64_t n) {
    if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == sizeof(In) && s[3] == sizeof(In)) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const In* x = reinterpret_cast<const In*>(p[1]);
      const In* y = reinterpret_cast<const In*>(p[2]);
      const In* z = reinterpret_cast<const In*>(p[3]);
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i], z[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const In*>(p[1] + i * s[1]),
                                                     *reinterpret_cast<const In*>(p[2] + i * s[2]),
                                                     *reinterpret_cast<const In*>(p[3] + i * s[3]));
    }
  });
}

}  // namespace rcuda::cpu
