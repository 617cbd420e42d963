// A recorded backward graph as text, by the public op that recorded each node (Node::op), for
// reading what a loss's gradient will run through.
#pragma once

#include <string>

#include "rcuda/tensor/tensor.h"

namespace rcuda::autograd {

// t's grad_fn and every node below it, one line per node, depth-first from t: a node is named by
// op_name(node.op()) when a public op recorded it, else by node.name() ("AccumulateGrad" at a
// leaf, a custom function's name); each input is indented two spaces under the node it feeds.
// A node reached again (a tensor used twice) is not printed again. Empty when t has no grad_fn
// (a leaf, or a tensor made with grad mode off).
//
//   sum
//     mul
//       exp
//         AccumulateGrad
//       AccumulateGrad
std::string graph_str(const Tensor& t);

}  // namespace rcuda::autograd
