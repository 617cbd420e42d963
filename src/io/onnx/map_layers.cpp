// Matrix products and layers: linear, dropout, embedding, the normalisations.
#include "io/onnx/mappings.h"
#include "rcuda/ops/creation.h"

namespace rcuda::io::onnx_export {
namespace {

// An optional tensor input, or a constant `fill` of `size` elements when absent (ONNX's
// normalisations take scale and bias as inputs, which torch lets be absent).
std::string input_or_fill(Builder& b, size_t i, const Shape& shape, double fill) {
  if (b.has_in(i)) return b.in_as(i, b.out_value().dtype);
  return b.tensor(ops::full(shape, Scalar(fill), b.out_value().dtype),
                  fill == 0 ? "zeros" : "ones");
}

}  // namespace

void matmul(Builder& b) {
  const DType dtype = b.out_value().dtype;
  b.add("MatMul", {b.in_as(0, dtype), b.in_as(1, dtype)}, {b.out()});
}

// beta * input + alpha * (a @ b): Gemm, whose C broadcasts as addmm's input does.
void addmm(Builder& b) {
  const DType dtype = b.out_value().dtype;
  onnx::NodeProto* n =
      b.add("Gemm", {b.in_as(1, dtype), b.in_as(2, dtype), b.in_as(0, dtype)}, {b.out()});
  set_attr(n, "alpha", b.has_attr("alpha") ? b.scalar_attr("alpha").to_double() : 1.0);
  set_attr(n, "beta", b.has_attr("beta") ? b.scalar_attr("beta").to_double() : 1.0);
}

// x @ weight^T + bias: one Gemm for a matrix x, else MatMul with the transposed weight (a
// Transpose node, so the initializer keeps the parameter's own layout and name) and Add.
void linear(Builder& b) {
  const DType dtype = b.out_value().dtype;
  const std::string x = b.in_as(0, dtype), w = b.in_as(1, dtype);
  const std::string bias = b.has_in(2) ? b.in_as(2, dtype) : "";
  if (b.in_rank(0) == 2) {
    std::vector<std::string> inputs = {x, w};
    if (!bias.empty()) inputs.push_back(bias);
    set_attr(b.add("Gemm", inputs, {b.out()}), "transB", 1);
    return;
  }
  onnx::NodeProto* wt = b.add("Transpose", {w}, {});
  set_attr(wt, "perm", std::vector<int64_t>{1, 0});
  if (bias.empty()) {
    b.add("MatMul", {x, wt->output(0)}, {b.out()});
    return;
  }
  b.add("Add", {b.add1("MatMul", {x, wt->output(0)}), bias}, {b.out()});
}

// An exported model is for inference: dropout in training mode would drop at random in every
// run of it.
void dropout(Builder& b) {
  if (b.attr_or<bool>("training", false))
    b.fail("dropout with training=true has no inference form; trace the model in eval mode");
  b.add("Identity", {b.in(0)}, {b.out()});
}

// Rows of the weight at 0-based indices (R's bindings shift its 1-based indices before the
// op; docs/onnx.md). padding_idx only changes the gradient.
void embedding(Builder& b) {
  const DType index_dtype = b.in_value(0).dtype;
  const std::string indices = index_dtype == DType::Int32 || index_dtype == DType::Int64
                                  ? b.in(0)
                                  : b.in_as(0, DType::Int64);
  set_attr(b.add("Gather", {b.in(1), indices}, {b.out()}), "axis", 0);
}

void layer_norm(Builder& b) {
  const Shape normalized = b.attr<std::vector<int64_t>>("normalized_shape");
  onnx::NodeProto* n =
      b.add("LayerNormalization",
            {b.in(0), input_or_fill(b, 1, normalized, 1.0), input_or_fill(b, 2, normalized, 0.0)},
            {b.out()});
  set_attr(n, "axis", -static_cast<int64_t>(normalized.size()));
  set_attr(n, "epsilon", b.scalar_attr("eps").to_double());
}

// Eval mode only: the running statistics, as torch's eval-mode batch_norm.
void batch_norm(Builder& b) {
  if (b.attr_or<bool>("training", false))
    b.fail(
        "batch_norm with training=true normalises by the batch's own statistics; trace the "
        "model in eval mode");
  if (!b.has_in(1) || !b.has_in(2)) b.fail("eval mode needs running_mean and running_var");
  const Shape channels = b.in_value(1).shape;
  onnx::NodeProto* n = b.add("BatchNormalization",
                             {b.in(0), input_or_fill(b, 3, channels, 1.0),
                              input_or_fill(b, 4, channels, 0.0), b.in(1), b.in(2)},
                             {b.out()});
  set_attr(n, "epsilon", b.scalar_attr("eps").to_double());
}

// With the input's statistics: InstanceNormalization. With running statistics
// (use_input_stats=false): the same affine map as eval-mode batch_norm.
void instance_norm(Builder& b) {
  const double eps = b.scalar_attr("eps").to_double();
  if (!b.attr_or<bool>("use_input_stats", true)) {
    if (!b.has_in(1) || !b.has_in(2)) b.fail("use_input_stats=false needs running statistics");
    const Shape channels = b.in_value(1).shape;
    set_attr(b.add("BatchNormalization",
                   {b.in(0), input_or_fill(b, 3, channels, 1.0), input_or_fill(b, 4, channels, 0.0),
                    b.in(1), b.in(2)},
                   {b.out()}),
             "epsilon", eps);
    return;
  }
  if (b.in_rank(0) < 3) b.fail("needs an input of at least 3 dims [N, C, ...]");
  const Shape channels = {b.in_value(0).shape[1]};
  set_attr(b.add("InstanceNormalization",
                 {b.in(0), input_or_fill(b, 3, channels, 1.0), input_or_fill(b, 4, channels, 0.0)},
                 {b.out()}),
           "epsilon", eps);
}

// [N, C, *] -> [N, G, rest], normalised per (n, g) by InstanceNormalization, back to the input's
// shape (read at run time, so the batch may change), then the per-channel weight and bias.
void group_norm(Builder& b) {
  const int64_t rank = b.in_rank(0);
  if (rank < 2) b.fail("needs an input of at least 2 dims [N, C, ...]");
  const int64_t groups = b.attr<int64_t>("num_groups");
  const DType dtype = b.out_value().dtype;
  const std::string x = b.in_as(0, dtype);
  const std::string grouped = b.add1("Reshape", {x, b.ints({0, groups, -1})});
  onnx::NodeProto* norm = b.add("InstanceNormalization",
                                {grouped, b.tensor(ops::ones({groups}, dtype), "ones"),
                                 b.tensor(ops::zeros({groups}, dtype), "zeros")},
                                {});
  set_attr(norm, "epsilon", b.scalar_attr("eps").to_double());
  std::string y = b.add1("Reshape", {norm->output(0), b.add1("Shape", {x})});
  // [C] -> [C, 1, ...]: broadcast against the dims after C.
  std::vector<int64_t> per_channel = {-1};
  per_channel.resize(static_cast<size_t>(rank - 1), 1);
  if (b.has_in(1))
    y = b.add1("Mul", {y, b.add1("Reshape", {b.in_as(1, dtype), b.ints(per_channel)})});
  if (b.has_in(2))
    y = b.add1("Add", {y, b.add1("Reshape", {b.in_as(2, dtype), b.ints(per_channel)})});
  b.add("Identity", {y}, {b.out()});
}

}  // namespace rcuda::io::onnx_export
