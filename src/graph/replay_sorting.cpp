// Replay of the sort family and the cumulative ops: sort, argsort, topk, kthvalue, median,
// mode, cummax, cummin, logcumsumexp, and quantile.
#include "rcuda/autograd/api.h"
#include "rcuda/core/error.h"
#include "replay.h"

namespace rcuda::graph::replay {
namespace {

// values, indices: the outputs of the ops that report two.
Tensors both(std::pair<Tensor, Tensor> out) {
  return {std::move(out.first), std::move(out.second)};
}

}  // namespace

Tensors sorting(OpId op, const Tensors& in, const Attributes& a) {
  const Tensor& x = input(in, 0, op);
  const bool keepdim = flag(a, "keepdim", op, false);
  switch (op) {
    case OpId::Sort:
      return both(sort(x, integer(a, "dim", op), flag(a, "descending", op, false),
                       flag(a, "stable", op, false)));
    case OpId::Argsort:
      return {argsort(x, integer(a, "dim", op), flag(a, "descending", op, false),
                      flag(a, "stable", op, false))};
    case OpId::Topk:
      return both(topk(x, integer(a, "k", op), integer(a, "dim", op), flag(a, "largest", op, true),
                       flag(a, "sorted", op, true)));
    case OpId::Kthvalue:
      return both(kthvalue(x, integer(a, "k", op), integer(a, "dim", op), keepdim));
    case OpId::Median:
      // The whole-tensor form reports no dim and has one output.
      if (!a.has("dim")) return {median(x)};
      return both(median(x, integer(a, "dim", op), keepdim));
    case OpId::Mode:
      return both(mode(x, integer(a, "dim", op), keepdim));
    case OpId::Cummax:
      return both(cummax(x, integer(a, "dim", op)));
    case OpId::Cummin:
      return both(cummin(x, integer(a, "dim", op)));
    case OpId::Logcumsumexp:
      return {logcumsumexp(x, integer(a, "dim", op))};
    case OpId::Quantile: {
      std::optional<int64_t> dim;
      if (a.has("dim")) dim = integer(a, "dim", op);
      return {quantile(x, input(in, 1, op), dim, keepdim, text(a, "interpolation", op, "linear"))};
    }
    default:
      throw InternalError(std::string("graph: no sorting replay for ") + op_name(op));
  }
}

}  // namespace rcuda::graph::replay
