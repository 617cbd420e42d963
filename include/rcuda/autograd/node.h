// A node of the backward graph: the recorded op that produced a tensor (its grad_fn). Read
// docs/autograd.md for how ops record and how the engine runs nodes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "rcuda/core/small_vector.h"
#include "rcuda/tensor/autograd_meta.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::autograd {

using TensorList = std::vector<Tensor>;

class Node;

// Where a gradient goes: input `input_nr` of `node` (an op's grad_fn, or a leaf's accumulator).
struct Edge {
  std::shared_ptr<Node> node;
  uint32_t input_nr = 0;
  bool valid() const { return node != nullptr; }
};

// Shape, dtype and device of a forward input: the engine sums a gradient back to the shape and
// casts it to the dtype, so formulas may return gradients in the broadcast output's shape.
struct InputMeta {
  // The input's shape, inside the node: one allocation less per input of every recorded op
  // (Note [Small vectors] in rcuda/core/small_vector.h). shape() copies it out.
  DimVector sizes;
  DType dtype = DType::Float32;
  Device device;
  Shape shape() const { return Shape(sizes.begin(), sizes.end()); }
  bool has_shape(const Shape& shape) const {
    return shape.size() == sizes.size() && std::equal(shape.begin(), shape.end(), sizes.begin());
  }
};

// A tensor kept for backward, with the storage version at save time: unpacking a tensor changed
// in place since then, or after the graph was freed, is an error naming the node. An op's own
// output (or a tensor an in-place op rewrites) is kept as an alias without autograd metadata,
// so that the node does not own itself through the tensor's grad_fn; an input is kept as it is
// (one handle copy: it refers only to nodes below this one).
class SavedTensor {
 public:
  enum Kind { kOutput, kInput };
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t, Kind kind = kOutput);
  bool defined() const { return data_.defined() || released_; }
  Tensor unpack(const Node& owner) const;
  void release();

 private:
  Tensor data_;
  uint64_t version_ = 0;
  bool released_ = false;
};

class Node {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // The op's backward name, as torch's grad_fn names: "MulBackward", "AddmmBackward", ...
  virtual const char* name() const = 0;
  // grads[i] is the gradient of forward output i (undefined where none flowed). Returns one
  // gradient per forward input (next_edges()), undefined where the input needs none.
  virtual TensorList apply(TensorList&& grads) = 0;
  // Frees the saved tensors (backward without retain_graph).
  virtual void release_saved() {}

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  const std::vector<InputMeta>& input_meta() const { return input_meta_; }
  uint32_t num_outputs() const { return num_outputs_; }
  // Creation order: the engine runs later nodes first, as PyTorch's does.
  uint64_t sequence_nr() const { return sequence_nr_; }
  // True when forward input i needs a gradient (lets formulas skip work).
  bool needs_input_grad(size_t i) const { return i < next_edges_.size() && next_edges_[i].valid(); }

  // Set by the recording helpers (rcuda/autograd/record.h).
  void add_input(const Tensor& input);
  void reserve_inputs(size_t n) {
    next_edges_.reserve(n);
    input_meta_.reserve(n);
  }
  void set_num_outputs(uint32_t n) { num_outputs_ = n; }
  void set_next_edge(size_t i, Edge edge) { next_edges_[i] = std::move(edge); }

  // Tensor hooks on this node's outputs, run by the engine on the summed gradient of output
  // `output_nr` before apply(); retain_grad() stores it into the tensor's `grad`, after them.
  struct OutputHook {
    uint32_t output_nr;
    GradHook hook;
  };
  struct RetainedGrad {
    uint32_t output_nr;
    std::weak_ptr<AutogradMeta> meta;
  };
  std::vector<OutputHook>& hooks() { return hooks_; }
  std::vector<RetainedGrad>& retained() { return retained_; }

  // The engine's bookkeeping for the backward pass now running through this node (Note
  // [Engine] in docs/autograd.md): valid while `pass` is that pass's number, so no table of
  // nodes is needed. One pass at a time: backward() is not reentrant.
  struct PassState {
    uint64_t pass = 0;
    int dependencies = 0;
    bool visited = false, queued = false;
    TensorList buffer;  // the summed gradient of each output
  };
  PassState& pass_state() { return pass_state_; }

 private:
  std::vector<Edge> next_edges_;
  std::vector<InputMeta> input_meta_;
  std::vector<OutputHook> hooks_;
  std::vector<RetainedGrad> retained_;
  PassState pass_state_;
  uint32_t num_outputs_ = 1;
  uint64_t sequence_nr_;
};

// The node at a leaf: adds the incoming gradient into the leaf's `grad`.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf);
  const char* name() const override { return "AccumulateGrad"; }
  TensorList apply(TensorList&& grads) override;
  const Tensor& leaf() const { return leaf_; }

 private:
  Tensor leaf_;
};

}  // namespace rcuda::autograd
