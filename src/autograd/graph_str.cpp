// graph_str: the backward graph below a tensor, printed by op name.
#include "rcuda/autograd/graph_str.h"

#include <unordered_set>
#include <utility>
#include <vector>

#include "rcuda/autograd/node.h"
#include "rcuda/core/op.h"

namespace rcuda::autograd {

std::string graph_str(const Tensor& t) {
  std::string out;
  if (!t.defined() || !t.grad_fn()) return out;
  // An explicit stack, not recursion: an unrolled recurrent graph can be thousands of nodes
  // deep. Inputs are pushed last first so that they pop in the node's input order.
  std::vector<std::pair<const Node*, size_t>> stack{{t.grad_fn().get(), 0}};
  std::unordered_set<const Node*> printed;
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (!printed.insert(node).second) continue;
    out.append(2 * depth, ' ');
    out += node->op() != OpId::Count ? op_name(node->op()) : node->name();
    out += '\n';
    const auto edges = node->next_edges();
    for (size_t i = edges.size(); i-- > 0;)
      if (edges[i].valid() && printed.count(edges[i].node.get()) == 0)
        stack.emplace_back(edges[i].node.get(), depth + 1);
  }
  return out;
}

}  // namespace rcuda::autograd
