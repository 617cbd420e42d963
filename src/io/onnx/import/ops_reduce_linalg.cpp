// ONNX import: Einsum and Det (kernel.h, Note [Kernels run the public ops]).
//
// Note [Einsum by pairs]
// ~~~~~~~~~~~~~~~~~~~~~~
// An equation such as "bij,bjk->bik" is run with rcuda's public ops, so that it records for
// autograd: each operand first loses its repeated labels (a diagonal) and the labels no other
// operand nor the output has (a sum); then the operands are contracted left to right, two at a
// time. A pair's labels are of four kinds: in both and still needed later (batch), in both and
// needed no more (contracted), and in one only. Floating operands go through one batched
// matmul, [batch, left, contracted] x [batch, contracted, right]; integer ones, which matmul
// refuses, through a broadcast product and a sum. The result is permuted to the output's order.
// The ellipsis "..." stands for the same leading broadcast dims in every operand (aligned from
// the right, size 1 stretching).
#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "io/onnx/import/kernel.h"
#include "io/onnx/import/ops_reduce.h"
#include "rcuda/autograd/api.h"
#include "rcuda/autograd/linalg_factor.h"

namespace rcuda::io::onnx_import {
namespace {

// A label: a letter's character code, or for the k-th dim of the ellipsis (counted from the
// left of the widest ellipsis) 256 + k.
using Label = int;
constexpr Label kEllipsisLabel = 256;

// One side of the equation as written: its letters, and where "..." stands (-1: nowhere).
struct Term {
  std::string letters;
  int ellipsis_at = -1;  // index into letters before which the ellipsis sits
};

struct Equation {
  std::vector<Term> inputs;
  bool explicit_output = false;
  Term output;
};

Term parse_term(const NodeReader& node, const std::string& text) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "...") == 0) {
      if (term.ellipsis_at >= 0) node.fail("equation: \"...\" appears twice in \"" + text + "\"");
      term.ellipsis_at = static_cast<int>(term.letters.size());
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(text[i]))) {
      term.letters += text[i];
    } else {
      node.fail("equation: unexpected character '" + std::string(1, text[i]) + "' in \"" + text +
                "\"");
    }
  }
  return term;
}

Equation parse_equation(const NodeReader& node, std::string text) {
  text.erase(std::remove_if(text.begin(), text.end(), ::isspace), text.end());
  Equation eq;
  const size_t arrow = text.find("->");
  const std::string lhs = text.substr(0, arrow);
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    eq.inputs.push_back(parse_term(node, lhs.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    eq.explicit_output = true;
    eq.output = parse_term(node, text.substr(arrow + 2));
  }
  if (eq.inputs.size() != node.num_inputs())
    node.fail("equation \"" + text + "\" has " + std::to_string(eq.inputs.size()) +
              " operands but the node has " + std::to_string(node.num_inputs()) + " inputs");
  return eq;
}

// The labels of a term for a tensor of `rank` dims, whose ellipsis covers the last of
// `ellipsis_rank` broadcast dims.
std::vector<Label> expand_term(const Term& term, int64_t ellipsis_rank) {
  std::vector<Label> labels;
  for (size_t i = 0; i <= term.letters.size(); ++i) {
    if (static_cast<int>(i) == term.ellipsis_at)
      for (int64_t k = 0; k < ellipsis_rank; ++k) labels.push_back(kEllipsisLabel + int(k));
    if (i < term.letters.size()) labels.push_back(static_cast<unsigned char>(term.letters[i]));
  }
  return labels;
}

// An operand on the way: its tensor and the label of each of its dims.
struct Operand {
  Tensor t;
  std::vector<Label> labels;
};

int64_t position(const std::vector<Label>& labels, Label l) {
  const auto it = std::find(labels.begin(), labels.end(), l);
  return it == labels.end() ? -1 : it - labels.begin();
}

// Takes the diagonal of each label written twice in one term ("ii").
void take_diagonals(Operand& op) {
  for (size_t p = 0; p < op.labels.size(); ++p) {
    for (size_t q = p + 1; q < op.labels.size(); ++q) {
      if (op.labels[p] != op.labels[q]) continue;
      const Label l = op.labels[p];
      op.t = op.t.diagonal(0, static_cast<int64_t>(p), static_cast<int64_t>(q));
      op.labels.erase(op.labels.begin() + static_cast<int64_t>(q));
      op.labels.erase(op.labels.begin() + static_cast<int64_t>(p));
      op.labels.push_back(l);
      take_diagonals(op);
      return;
    }
  }
}

// Sums over the labels of op for which keep() says false.
template <typename Keep>
void sum_out(Operand& op, Keep keep) {
  std::vector<int64_t> dims;
  std::vector<Label> kept;
  for (size_t d = 0; d < op.labels.size(); ++d) {
    if (keep(op.labels[d]))
      kept.push_back(op.labels[d]);
    else
      dims.push_back(static_cast<int64_t>(d));
  }
  if (dims.empty()) return;
  op.t = rcuda::sum(op.t, dims);
  op.labels = kept;
}

// op's dims reordered to `order` (each of op's labels once), with a size-1 dim for each label
// of `order` that op lacks.
Tensor aligned(const Operand& op, const std::vector<Label>& order) {
  std::vector<int64_t> perm;
  Shape shape;
  for (Label l : order) {
    const int64_t p = position(op.labels, l);
    if (p >= 0) perm.push_back(p);
    shape.push_back(p >= 0 ? op.t.size(p) : 1);
  }
  return rcuda::reshape(op.t.permute(perm), shape);
}

// a and b contracted over their shared labels that `needed` says are not needed afterwards
// (Note [Einsum by pairs]).
template <typename Needed>
Operand contract(Operand a, Operand b, Needed needed) {
  sum_out(a, [&](Label l) { return needed(l) || position(b.labels, l) >= 0; });
  sum_out(b, [&](Label l) { return needed(l) || position(a.labels, l) >= 0; });
  std::vector<Label> batch, contracted, left, right;
  Shape batch_sizes, contracted_sizes, left_sizes, right_sizes;
  for (size_t d = 0; d < a.labels.size(); ++d) {
    const Label l = a.labels[d];
    const int64_t in_b = position(b.labels, l);
    if (in_b < 0) {
      left.push_back(l);
      left_sizes.push_back(a.t.size(int64_t(d)));
      continue;
    }
    // A size-1 dim stretches to the other's (the ellipsis broadcasts).
    const int64_t size = std::max(a.t.size(int64_t(d)), b.t.size(in_b));
    (needed(l) ? batch : contracted).push_back(l);
    (needed(l) ? batch_sizes : contracted_sizes).push_back(size);
  }
  for (size_t d = 0; d < b.labels.size(); ++d) {
    if (position(a.labels, b.labels[d]) >= 0) continue;
    right.push_back(b.labels[d]);
    right_sizes.push_back(b.t.size(int64_t(d)));
  }
  auto join = [](auto x, const auto& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  Operand out;
  out.labels = join(join(batch, left), right);
  const Shape out_shape = join(join(batch_sizes, left_sizes), right_sizes);
  if (is_floating(a.t.dtype())) {
    const int64_t nb = rcuda::numel(batch_sizes), nk = rcuda::numel(contracted_sizes);
    const Shape a_full = join(join(batch_sizes, left_sizes), contracted_sizes);
    const Shape b_full = join(join(batch_sizes, contracted_sizes), right_sizes);
    const Tensor a3 = rcuda::reshape(aligned(a, join(join(batch, left), contracted)).expand(a_full),
                                     {nb, rcuda::numel(left_sizes), nk});
    const Tensor b3 =
        rcuda::reshape(aligned(b, join(join(batch, contracted), right)).expand(b_full),
                       {nb, nk, rcuda::numel(right_sizes)});
    out.t = rcuda::reshape(rcuda::matmul(a3, b3), out_shape);
    return out;
  }
  const std::vector<Label> all = join(out.labels, contracted);
  Tensor prod = rcuda::mul(aligned(a, all), aligned(b, all));
  if (!contracted.empty()) {
    std::vector<int64_t> dims;
    for (size_t d = out.labels.size(); d < all.size(); ++d) dims.push_back(int64_t(d));
    prod = rcuda::sum(prod, dims);
  }
  out.t = rcuda::reshape(prod, out_shape);  // the product's size-1 dims stretched as needed
  return out;
}

// The output's labels: as written, or (implicit form) the ellipsis then the letters written
// once, in alphabetical order.
std::vector<Label> output_labels(const Equation& eq, int64_t ellipsis_rank) {
  if (eq.explicit_output) return expand_term(eq.output, ellipsis_rank);
  std::map<char, int> count;
  for (const Term& term : eq.inputs)
    for (char c : term.letters) ++count[c];
  Term implicit;
  implicit.ellipsis_at = 0;
  for (const auto& [c, n] : count)
    if (n == 1) implicit.letters += c;
  return expand_term(implicit, ellipsis_rank);
}

std::vector<Tensor> run_einsum(const Equation& eq, const std::string& where,
                               const std::vector<Tensor>& in) {
  int64_t ellipsis_rank = 0;
  for (size_t i = 0; i < eq.inputs.size(); ++i) {
    const int64_t written = static_cast<int64_t>(eq.inputs[i].letters.size());
    const int64_t rank = in.at(i).dim();
    const bool has_ellipsis = eq.inputs[i].ellipsis_at >= 0;
    RCUDA_CHECK(has_ellipsis ? rank >= written : rank == written, ShapeError, where, ": operand ",
                i, " has rank ", rank, " but its term has ", written, " letters",
                has_ellipsis ? " and \"...\"" : "");
    if (has_ellipsis) ellipsis_rank = std::max(ellipsis_rank, rank - written);
  }
  std::vector<Operand> ops;
  for (size_t i = 0; i < eq.inputs.size(); ++i) {
    const int64_t own = in[i].dim() - static_cast<int64_t>(eq.inputs[i].letters.size());
    Operand op{in[i], expand_term(eq.inputs[i], ellipsis_rank)};
    // An operand with a shorter ellipsis takes its last labels (right-aligned broadcast).
    if (eq.inputs[i].ellipsis_at >= 0 && own < ellipsis_rank) {
      const auto first = op.labels.begin() + eq.inputs[i].ellipsis_at;
      op.labels.erase(first, first + (ellipsis_rank - own));
    }
    take_diagonals(op);
    ops.push_back(op);
  }
  const std::vector<Label> output = output_labels(eq, ellipsis_rank);
  // Needed after operand `next - 1`: in the output or in an operand from `next` on.
  auto needed_from = [&](size_t next) {
    return [&, next](Label l) {
      if (position(output, l) >= 0) return true;
      for (size_t j = next; j < ops.size(); ++j)
        if (position(ops[j].labels, l) >= 0) return true;
      return false;
    };
  };
  Operand result = ops[0];
  for (size_t j = 1; j < ops.size(); ++j) result = contract(result, ops[j], needed_from(j + 1));
  sum_out(result, needed_from(ops.size()));
  std::vector<int64_t> perm;
  for (Label l : output) {
    const int64_t p = position(result.labels, l);
    RCUDA_CHECK(p >= 0, ValueError, where, ": an output label of the equation is in no operand");
    perm.push_back(p);
  }
  Tensor y = result.labels.empty() ? result.t : result.t.permute(perm);
  // Integer sums are int64 in rcuda: back to the operands' dtype, as ONNX.
  return {rcuda::to(y, in[0].dtype())};
}

Kernel make_einsum(NodeReader& node) {
  const Equation eq = parse_equation(node, node.s("equation"));
  const std::string where = node.where();
  return [eq, where](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    return run_einsum(eq, where, in);
  };
}

// Det: the determinants of [..., M, M], through a float32 copy for half types, which LAPACK and
// cuSOLVER lack.
Kernel make_det(NodeReader&) {
  return [](const std::vector<Tensor>& in, const RunContext&) -> std::vector<Tensor> {
    const Tensor& x = in.at(0);
    if (x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16)
      return {rcuda::to(rcuda::linalg_det(rcuda::to(x, DType::Float32)), x.dtype())};
    return {rcuda::linalg_det(x)};
  };
}

}  // namespace

std::vector<ImportOp> reduce_linalg_ops() {
  return {
      {"Einsum", make_einsum, 12},
      {"Det", make_det, 11},
  };
}

}  // namespace rcuda::io::onnx_import
