// Backward nodes of joining and indexing (entry points in src/autograd/indexing.cpp). split and
// chunk return views, which the view hook records (grads/views.h).
#pragma once

#include "rcuda/autograd/node.h"

namespace rcuda::autograd {

// cat and stack: input i gets its slice of the gradient along `dim` (wrapped).
struct JoinBackward final : Node {
  bool stack = false;
  int64_t dim = 0;
  // cat: each input's size along dim, -1 for an empty 1-D input that cat skipped.
  std::vector<int64_t> sizes;
  const char* name() const override { return stack ? "StackBackward" : "CatBackward"; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
};

// The ops that move elements by an index or a mask. Inputs: (x) for every kind but Scatter and
// ScatterAdd, which have (x, src).
enum class IndexKind : uint8_t {
  IndexSelect,
  Gather,
  Scatter,
  ScatterValue,
  ScatterAdd,
  MaskedFill,
  MaskedSelect
};

struct IndexBackward final : Node {
  IndexKind kind = IndexKind::Gather;
  int64_t dim = 0;
  SavedTensor index;  // the index; the mask for MaskedFill and MaskedSelect
  Shape shape;        // MaskedSelect: the shape x and mask broadcast to
  const char* name() const override;
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
  void release_saved() override { index.release(); }
};

}  // namespace rcuda::autograd
