// The backward node of the normalisation layers (entry points in src/autograd/norm.cpp).
#pragma once

#include "rcuda/autograd/node.h"

namespace rcuda::autograd {

enum class NormKind : uint8_t { Batch, Group, Instance };

// Inputs (x, weight, bias), the last two possibly undefined; the forward's statistics.
struct NormBackward final : Node {
  NormKind kind = NormKind::Batch;
  int64_t groups = 1;       // Group
  bool batch_stats = true;  // Batch: training; Instance: use_input_stats
  SavedTensor x, weight, mean, invstd;
  const char* name() const override;
  TensorList apply(TensorList&& grads) override;
  void release_saved() override {
    for (SavedTensor* t : {&x, &weight, &mean, &invstd}) t->release();
  }
};

}  // namespace rcuda::autograd
