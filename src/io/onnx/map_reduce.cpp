// Reductions, softmax and scans. Reduce* ops take their axes as an attribute or an input
// depending on the opset (Builder::reduce).
#include <cmath>

#include "io/onnx/mappings.h"

namespace rcuda::io::onnx_export {
namespace {

std::vector<int64_t> reduced_dims(Builder& b) {
  std::vector<int64_t> dims;
  for (int64_t d : b.attr_or<std::vector<int64_t>>("dims", {}))
    dims.push_back(b.dim(d, b.in_rank(0)));
  return dims;
}

}  // namespace

// sum's dtype and the promotion of integers (sum of int32 is int64) are the result's dtype,
// which the input is cast to first, as torch accumulates in it.
void reduce_dims(Builder& b, const char* onnx_op) {
  b.reduce(onnx_op, b.in_as(0, b.out_value().dtype), reduced_dims(b),
           b.attr_or<bool>("keepdim", false), b.out());
}

// Whole tensor: one value. Along a dim: the values and the indices (ArgMax's first index).
void max_min(Builder& b, bool is_max) {
  const char* reduce = is_max ? "ReduceMax" : "ReduceMin";
  if (b.node().outputs.size() == 1) {
    b.reduce(reduce, b.in(0), {}, false, b.out());
    return;
  }
  const int64_t dim = b.dim(b.attr<int64_t>("dim"), b.in_rank(0));
  const bool keepdim = b.attr_or<bool>("keepdim", false);
  b.reduce(reduce, b.in(0), {dim}, keepdim, b.out(0));
  onnx::NodeProto* arg = b.add(is_max ? "ArgMax" : "ArgMin", {b.in(0)}, {b.out(1)});
  set_attr(arg, "axis", dim);
  set_attr(arg, "keepdims", static_cast<int64_t>(keepdim));
}

// Without a dim, the index into the flattened tensor.
void arg_max_min(Builder& b, bool is_max) {
  const char* op = is_max ? "ArgMax" : "ArgMin";
  const bool keepdim = b.attr_or<bool>("keepdim", false);
  if (b.has_attr("dim")) {
    onnx::NodeProto* n = b.add(op, {b.in(0)}, {b.out()});
    set_attr(n, "axis", b.dim(b.attr<int64_t>("dim"), b.in_rank(0)));
    set_attr(n, "keepdims", static_cast<int64_t>(keepdim));
    return;
  }
  // ArgMax keeps the flat dim ([1]), then a Reshape gives torch's shape: a scalar, or ones.
  const std::string flat = b.add1("Reshape", {b.in(0), b.ints({-1})});
  onnx::NodeProto* n = b.add(op, {flat}, {});
  set_attr(n, "axis", 0);
  set_attr(n, "keepdims", 1);
  const size_t rank = keepdim ? static_cast<size_t>(b.in_rank(0)) : 0;
  b.add("Reshape", {n->output(0), b.ints(std::vector<int64_t>(rank, 1))}, {b.out()});
}

// ONNX reductions take no bool before opset 20: min (all) or max (any) of the values as int32.
void all_any(Builder& b, bool is_all) {
  const std::string as_int = b.cast(b.in_as(0, DType::Bool), DType::Bool, DType::Int32);
  const std::string r = b.fresh("reduced");
  b.reduce(is_all ? "ReduceMin" : "ReduceMax", as_int, reduced_dims(b),
           b.attr_or<bool>("keepdim", false), r);
  b.add("Identity", {b.cast(r, DType::Int32, b.out_value().dtype)}, {b.out()});
}

// p = 1, 2 and inf are ONNX ops; other p: (sum |x|^p)^(1/p).
void norm(Builder& b) {
  const double p = b.scalar_attr("p").to_double();
  const std::vector<int64_t> dims = reduced_dims(b);
  const bool keepdim = b.attr_or<bool>("keepdim", false);
  const DType dtype = b.out_value().dtype;
  const std::string x = b.in_as(0, dtype);
  if (p == 1.0 || p == 2.0) {
    b.reduce(p == 1.0 ? "ReduceL1" : "ReduceL2", x, dims, keepdim, b.out());
  } else if (std::isinf(p)) {
    b.reduce(p > 0 ? "ReduceMax" : "ReduceMin", b.add1("Abs", {x}), dims, keepdim, b.out());
  } else if (p > 0) {
    const std::string powered = b.add1("Pow", {b.add1("Abs", {x}), b.number(p, dtype)});
    const std::string sum = b.fresh("sum");
    b.reduce("ReduceSum", powered, dims, keepdim, sum);
    b.add("Pow", {sum, b.number(1.0 / p, dtype)}, {b.out()});
  } else {
    b.fail("p must be positive or inf, got ", p);
  }
}

// Two passes, as a float computation should: the mean, then the sum of squared deviations,
// divided by max(0, N - correction) as torch divides (N = the reduced dims' sizes, read at run
// time so that a dynamic batch counts). std: its square root.
void var_std(Builder& b, bool is_std) {
  const DType dtype = b.out_value().dtype;
  const std::vector<int64_t> dims = reduced_dims(b);
  const bool keepdim = b.attr_or<bool>("keepdim", false);
  const double correction = b.scalar_attr("correction").to_double();
  const std::string x = b.in_as(0, dtype);
  const std::string mean = b.fresh("mean");
  b.reduce("ReduceMean", x, dims, true, mean);
  const std::string deviation = b.add1("Sub", {x, mean});
  const std::string squares = b.fresh("squares");
  b.reduce("ReduceSum", b.add1("Mul", {deviation, deviation}), dims, keepdim, squares);
  std::string count;
  if (dims.empty()) {
    count = b.cast(b.add1("Size", {x}), DType::Int64, dtype);
  } else {
    onnx::NodeProto* sizes = b.add("Gather", {b.add1("Shape", {x}), b.ints(dims)}, {});
    set_attr(sizes, "axis", 0);
    count = b.fresh("count");
    b.reduce("ReduceProd", b.cast(sizes->output(0), DType::Int64, dtype), {}, false, count);
  }
  const std::string divisor =
      b.add1("Max", {b.add1("Sub", {count, b.number(correction, dtype)}), b.number(0.0, dtype)});
  if (!is_std) {
    b.add("Div", {squares, divisor}, {b.out()});
    return;
  }
  b.add("Sqrt", {b.add1("Div", {squares, divisor})}, {b.out()});
}

void logsumexp(Builder& b) {
  b.reduce("ReduceLogSumExp", b.in_as(0, b.out_value().dtype), reduced_dims(b),
           b.attr_or<bool>("keepdim", false), b.out());
}

void softmax(Builder& b, const char* onnx_op) {
  const int64_t dim = b.dim(b.attr<int64_t>("dim"), b.in_rank(0));
  set_attr(b.add(onnx_op, {b.in_as(0, b.out_value().dtype)}, {b.out()}), "axis", dim);
}

void cumsum(Builder& b) {
  const int64_t dim = b.dim(b.attr<int64_t>("dim"), b.in_rank(0));
  b.add("CumSum", {b.in_as(0, b.out_value().dtype), b.int_scalar(dim)}, {b.out()});
}

}  // namespace rcuda::io::onnx_export
