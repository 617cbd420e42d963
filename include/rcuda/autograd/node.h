// A node of the backward graph: the recorded op that produced a tensor (its grad_fn). Read
// docs/autograd.md for how ops record and how the engine runs nodes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "rcuda/core/op.h"
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
  // On an edge into a leaf's accumulator, the leaf: the graph keeps it alive until backward, so
  // that its hooks run and its `grad` fills even when every other handle is gone (Note [The
  // leaf keeps its accumulator]).
  Tensor leaf;
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
// (one handle copy: it refers only to nodes below this one). During a backward pass that creates
// a graph, an output (output 0 of its node) unpacks with the node as its grad_fn again, so that
// a formula reading it records its history (Note [Gradients of gradients] in docs/autograd.md).
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
  bool is_output_ = false;
};

// One forward input of a node: where its gradient goes, and its shape, dtype and device. One list
// for both, so that a node makes one allocation for its inputs, not two.
struct NodeInput {
  Edge edge;
  InputMeta meta;
};

// One field of every input of a node, read like the vector it is taken from: size(), [i],
// range-for.
template <typename T, T NodeInput::*Field>
class InputFields {
 public:
  class iterator {
   public:
    explicit iterator(const NodeInput* at) : at_(at) {}
    const T& operator*() const { return at_->*Field; }
    iterator& operator++() {
      ++at_;
      return *this;
    }
    bool operator!=(const iterator& other) const { return at_ != other.at_; }
    bool operator==(const iterator& other) const { return at_ == other.at_; }

   private:
    const NodeInput* at_;
  };

  explicit InputFields(const std::vector<NodeInput>& inputs) : inputs_(&inputs) {}
  size_t size() const { return inputs_->size(); }
  bool empty() const { return inputs_->empty(); }
  const T& operator[](size_t i) const { return (*inputs_)[i].*Field; }
  iterator begin() const { return iterator(inputs_->data()); }
  iterator end() const { return iterator(inputs_->data() + inputs_->size()); }

 private:
  const std::vector<NodeInput>* inputs_;
};

// Shared from this: a saved output unpacked in a backward pass that creates a graph takes its
// node as grad_fn (SavedTensor::unpack).
class Node : public std::enable_shared_from_this<Node> {
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
  // Whether apply() records its own history when grad mode is on, so that a backward pass with
  // create_graph can run it (Note [Gradients of gradients] in docs/autograd.md). False by
  // default: the engine then refuses such a pass with an error naming the op, rather than give
  // second derivatives that silently miss this node's share.
  virtual bool supports_create_graph() const { return false; }

  InputFields<Edge, &NodeInput::edge> next_edges() const {
    return InputFields<Edge, &NodeInput::edge>(inputs_);
  }
  InputFields<InputMeta, &NodeInput::meta> input_meta() const {
    return InputFields<InputMeta, &NodeInput::meta>(inputs_);
  }
  // Input i's metadata, for a formula that keeps a reference to it (a reference into the
  // temporary list above is one that compilers may warn about).
  const InputMeta& input_meta(size_t i) const { return inputs_[i].meta; }
  uint32_t num_outputs() const { return num_outputs_; }
  // The public op that recorded this node, so that a graph prints by op name (graph_str in
  // rcuda/autograd/graph_str.h); OpId::Count for a node no public op made (a leaf's
  // AccumulateGrad, a custom R autograd_function). A node type whose formula has an `op` field
  // of its own (UnaryBackward's UnaryOp) hides this name: read it through a Node.
  OpId op() const { return op_; }
  // Creation order: the engine runs later nodes first, as PyTorch's does.
  uint64_t sequence_nr() const { return sequence_nr_; }
  // True when forward input i needs a gradient (lets formulas skip work).
  bool needs_input_grad(size_t i) const { return i < inputs_.size() && inputs_[i].edge.valid(); }

  // Set by the recording helpers (rcuda/autograd/record.h).
  void add_input(const Tensor& input);
  void reserve_inputs(size_t n) { inputs_.reserve(n); }
  void set_num_outputs(uint32_t n) { num_outputs_ = n; }
  void set_op(OpId op) { op_ = op; }
  void set_next_edge(size_t i, Edge edge) { inputs_[i].edge = std::move(edge); }

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
  std::vector<NodeInput> inputs_;
  std::vector<OutputHook> hooks_;
  std::vector<RetainedGrad> retained_;
  PassState pass_state_;
  uint32_t num_outputs_ = 1;
  OpId op_ = OpId::Count;  // in the padding after num_outputs_: the node grows by nothing
  uint64_t sequence_nr_;
};

// Note [The leaf keeps its accumulator]
// The node at a leaf adds the incoming gradient into the leaf's `grad`. The leaf owns it (its
// AutogradMeta's grad_accumulator), made the first time an op records the leaf as an input, so
// that each recorded op on a parameter does not make and free one (PyTorch's leaf holds it
// weakly and remakes it for every graph). It refers to the leaf weakly, else the two would own
// each other; the edges of a graph into it hold the leaf (Edge::leaf), as PyTorch's
// accumulator does, so backward still reaches a leaf whose handles are gone.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(const Tensor& leaf);
  const char* name() const override { return "AccumulateGrad"; }
  TensorList apply(TensorList&& grads) override;
  bool supports_create_graph() const override { return true; }
  // The leaf, or an undefined tensor once nothing holds it.
  Tensor leaf() const { return Tensor(leaf_.lock()); }

 private:
  std::weak_ptr<TensorImpl> leaf_;
};

}  // namespace rcuda::autograd
