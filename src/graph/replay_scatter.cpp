// Replay of the writing and data-dependent indexing ops: scatter, scatter_add, masked_select,
// nonzero, one_hot, and index_put_ (in place).
#include "rcuda/autograd/api.h"
#include "rcuda/core/error.h"
#include "replay.h"

namespace rcuda::graph::replay {

Tensors scattering(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  switch (op) {
    case OpId::Scatter:
      // The number form reports value and no src.
      if (a.has("value"))
        return {scatter(x, integer(a, "dim", op), input(in, 1, op), scalar(a, "value", op))};
      return {scatter(x, integer(a, "dim", op), input(in, 1, op), input(in, 2, op))};
    case OpId::ScatterAdd:
      return {scatter_add(x, integer(a, "dim", op), input(in, 1, op), input(in, 2, op))};
    case OpId::MaskedSelect:
      return {masked_select(x, input(in, 1, op))};
    case OpId::Nonzero:
      return {nonzero(x)};
    case OpId::OneHot:
      return {one_hot(x, integer(a, "num_classes", op))};
    default:
      throw InternalError(std::string("graph: no scatter replay for ") + op_name(op));
  }
}

// Inputs: self, one per index (undefined where the list takes a whole dim), then values.
Tensors index_put(OpId op, const Tensors& in, const Attributes& a) {
  RCUDA_CHECK(in.size() >= 2, ValueError, "graph: ", op_name(op),
              " needs self and values but the node has ", in.size(), " inputs");
  const Tensor& self = in.front();
  IndexList indices;
  for (size_t i = 1; i + 1 < in.size(); ++i)
    indices.push_back(in[i].defined() ? std::optional<Tensor>(in[i]) : std::nullopt);
  index_put_(self, indices, in.back(), flag(a, "accumulate", op, false));
  return {self};
}

}  // namespace rcuda::graph::replay
