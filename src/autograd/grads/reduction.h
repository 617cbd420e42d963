// Backward nodes of reductions, softmax and cumsum (entry points in src/autograd/reduction.cpp).
#pragma once

#include "rcuda/autograd/node.h"

namespace rcuda::autograd {

// sum and mean over `dims` (empty: all): the gradient spreads evenly back over the reduced dims.
struct SumBackward final : Node {
  std::vector<int64_t> dims;
  bool keepdim = false;
  bool mean = false;
  const char* name() const override { return mean ? "MeanBackward" : "SumBackward"; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
};

// The reductions over a list of dims whose gradient reads the input and the result. Max and
// Min are the reductions over every element (dims empty); along one dim they are ArgReduce.
enum class ReductionKind : uint8_t { Prod, Max, Min, Var, Std, Norm, Logsumexp };

struct ReductionBackward final : Node {
  ReductionKind kind = ReductionKind::Prod;
  std::vector<int64_t> dims;  // empty: every dim
  bool keepdim = false;
  double correction = 1;  // Var, Std
  double p = 2;           // Norm
  SavedTensor x, out;
  const char* name() const override;
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
  void release_saved() override {
    x.release();
    out.release();
  }
};

// max/min along `dim`: outputs (values, indices); the gradient of values goes to the selected
// index only, and indices carry none.
struct ArgReduceBackward final : Node {
  bool is_max = true;
  int64_t dim = 0;
  bool keepdim = false;
  SavedTensor indices;
  const char* name() const override { return is_max ? "MaxBackward" : "MinBackward"; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
  void release_saved() override { indices.release(); }
};

// softmax and log_softmax along `dim`, from the saved output.
struct SoftmaxBackward final : Node {
  bool log = false;
  int64_t dim = 0;
  SavedTensor out;
  const char* name() const override { return log ? "LogSoftmaxBackward" : "SoftmaxBackward"; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
  void release_saved() override { out.release(); }
};

// cumsum along `dim`: the gradient is the cumulative sum taken from the other end.
struct CumsumBackward final : Node {
  int64_t dim = 0;
  const char* name() const override { return "CumsumBackward"; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
};

// The gradient of a reduction's output, in keepdim form (size 1 in each reduced dim) so that it
// broadcasts against the input: undoes keepdim = false.
Tensor unsqueeze_reduced(const Tensor& grad, const Shape& input_shape,
                         const std::vector<int64_t>& dims, bool keepdim);

}  // namespace rcuda::autograd
