// How Backend::cat's output holds its inputs (both backends walk it the same way).
#pragma once

#include <cstdint>

#include "rcuda/tensor/tensor.h"

namespace rcuda::backend {

// A contiguous output joined along `dim` is `rows` rows (the dims before `dim`), each holding
// every input's part back to back; an input's part is its size(dim) x `inner` elements (the
// dims after `dim`), and the input holds its parts one after another.
struct CatLayout {
  int64_t rows = 1;
  int64_t inner = 1;
};

inline CatLayout cat_layout(const Tensor& out, int64_t dim) {
  CatLayout layout;
  for (int64_t k = 0; k < dim; ++k) layout.rows *= out.size(k);
  for (int64_t k = dim + 1; k < out.dim(); ++k) layout.inner *= out.size(k);
  return layout;
}

}  // namespace rcuda::backend
