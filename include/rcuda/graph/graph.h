// A recorded graph that is data (docs/graph.md): the ops a traced function ran, in order, with
// their attributes, the parameters and constants they read, and the function's inputs and
// outputs. C++ replays it without R (Graph::run, through the same public ops, so a replay
// records for autograd and autocasts as any call), prints it, and io/onnx exports it.
//
//   graph::Graph g = graph::trace([&](const std::vector<Tensor>& in) {
//     return std::vector<Tensor>{nn::relu(nn::linear(in[0], w, b))};
//   }, {x}, {{"weight", w}, {"bias", b}});
//   std::vector<Tensor> y = g.run({x2});   // x2 may have another batch size
//   std::cout << g.to_string();
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rcuda/core/op.h"
#include "rcuda/core/shape.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::graph {

enum class ValueKind : uint8_t {
  Input,      // an argument of the traced function
  Parameter,  // a named tensor the function read (a module's weight or buffer), kept by handle
  Constant,   // any other tensor the function read: kept as it was when traced
  OpOutput,   // made by a node
};

struct Value {
  ValueKind kind = ValueKind::Constant;
  std::string name;  // inputs and parameters: their names; others: "%<id>"
  Shape shape;       // as traced
  DType dtype = DType::Float32;
  Device device;
  Tensor tensor;      // Parameter and Constant: the tensor read
  int node = -1;      // OpOutput: the node that makes it
  int output_nr = 0;  // OpOutput: which of the node's outputs
};

struct Node {
  OpId op = OpId::Count;
  std::vector<int> inputs;   // value ids in the op's order; -1 for an absent optional tensor
  std::vector<int> outputs;  // value ids
  Attributes attrs;
  std::string scope;  // where the call was made: a module path ("features.0"), or "" at the top
};

// " (in module features.0)", or "" at the top: how messages say where a node was called.
std::string in_module(const std::string& scope);

// Where each op call of a trace is made, asked once per recorded node (R's jit_trace gives the
// path of the innermost module whose forward is running).
using ScopeProvider = std::function<std::string()>;

// Names of a graph's parameters by tensor (a module's named_parameters and buffers).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Graph {
 public:
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;            // value ids of the function's arguments, in order
  std::vector<int> outputs;           // value ids of its results, in order
  std::vector<std::string> warnings;  // what the trace noticed (host reads), as sentences

  // Runs the graph on `inputs` (as many as traced, the same dtypes; other sizes where the ops
  // allow, such as another batch size), each node through its public op (graph::invoke).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

  // One line per node: "%5 = linear(%0, fc1.weight, fc1.bias)" with attributes and shapes.
  std::string to_string() const;

  // How many nodes of each op, in first-use order ("linear: 2").
  std::vector<std::pair<OpId, int>> op_counts() const;
};

// Traces `fn` on `example_inputs`: runs it once, recording every outermost public op call
// (Note [The funnel] in rcuda/autograd/funnel.h). Tensors in `parameters` become named
// parameters; any other tensor the function reads that no traced op made becomes a constant.
// `input_names` names the inputs ("input", "input_2", ... by default).
using TracedFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// The tracer itself, for bindings that run the traced code between its start and finish (R's
// jit_trace): observing starts when it is made, on this thread, and ends at finish() or when
// it is destroyed. graph::trace is this around a C++ function.
class Tracer {
 public:
  Tracer(const std::vector<Tensor>& example_inputs, const NamedTensors& parameters,
         const std::vector<std::string>& input_names = {}, ScopeProvider scope = {});
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Stops observing and returns the graph whose results are `outputs` (tensors the traced
  // code returned; each must be an input, a parameter or made by a traced op).
  Graph finish(const std::vector<Tensor>& outputs);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Runs one node's op from its inputs and attributes through the op's public entry point (the
// replay table in src/graph/invoke.cpp); the outputs in the op's order. An op without a replay
// entry is a ValueError naming it.
std::vector<Tensor> invoke(OpId op, const std::vector<Tensor>& inputs, const Attributes& attrs);
// Whether the op has a replay entry (a trace refuses ops without one when they are recorded).
bool can_invoke(OpId op);
Graph trace(const TracedFunction& fn, const std::vector<Tensor>& example_inputs,
            const NamedTensors& parameters = {}, const std::vector<std::string>& input_names = {});

}  // namespace rcuda::graph
