// Backward nodes of the sort family and the cumulative ops (entry points in
// src/autograd/sorting.cpp).
#pragma once

#include "rcuda/autograd/node.h"

namespace rcuda::autograd {

// The ops whose values are input elements picked by an index tensor: each element's gradient
// goes back to the position it came from (a scatter-add, so repeated positions add up).
enum class IndexedKind : uint8_t { Sort, Topk, Kthvalue, Median, Mode, Cummax, Cummin };

struct IndexedBackward final : Node {
  IndexedKind kind = IndexedKind::Sort;
  int64_t dim = 0;  // wrapped
  bool keepdim = true;
  SavedTensor indices;
  const char* name() const override;
  TensorList apply(TensorList&& grads) override;
  void release_saved() override { indices.release(); }
};

// cumprod and logcumsumexp: their own backward primitive, reading the input and the output.
struct CumulativeBackward final : Node {
  bool is_prod = true;  // else logcumsumexp
  int64_t dim = 0;
  SavedTensor x, out;
  const char* name() const override { return is_prod ? "CumprodBackward" : "LogcumsumexpBackward"; }
  TensorList apply(TensorList&& grads) override;
  void release_saved() override {
    x.release();
    out.release();
  }
};

}  // namespace rcuda::autograd
