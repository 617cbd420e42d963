// The export functions of each op family, which export_table.cpp assigns to OpIds. Each adds the
// ONNX nodes of b.node() (docs/onnx.md has the mapping as a table).
#pragma once

#include "io/onnx/builder.h"

namespace rcuda::io::onnx_export {

// map_elementwise.cpp
// One ONNX op of the same name; a floating result of integers (exp of int64) casts first.
void unary(Builder& b, const char* onnx_op);
void expm1(Builder& b);
void log1p(Builder& b);
void rsqrt(Builder& b);
void log2(Builder& b);
void log10(Builder& b);
void exp2(Builder& b);
void erfc(Builder& b);
void trunc(Builder& b);
void logical_not(Builder& b);
void clamp(Builder& b);
void hardtanh(Builder& b);
void leaky_relu(Builder& b);
void elu(Builder& b);
void softplus(Builder& b);
void gelu(Builder& b);
void silu(Builder& b);

// map_binary.cpp
// Two operands cast to the result's dtype, as torch promotes them: add, sub (with alpha), mul,
// div, pow, maximum, minimum.
void arithmetic(Builder& b, const char* onnx_op);
void remainder(Builder& b);
void atan2(Builder& b);
void floor_divide(Builder& b);
// Eq, Ne, Lt, Le, Gt, Ge: the operands in their common dtype; ne is Not(Equal).
void comparison(Builder& b, const char* onnx_op, bool negate);
void logical(Builder& b, const char* onnx_op);
void where(Builder& b);
void masked_fill(Builder& b);

// map_shape.cpp
void to(Builder& b);
void identity(Builder& b);
void reshape(Builder& b);
void flatten(Builder& b);
void permute(Builder& b);
void transpose(Builder& b);
void slice(Builder& b);
void select(Builder& b);
void expand(Builder& b);
void cat(Builder& b);
void stack(Builder& b);
void index_select(Builder& b);
void gather(Builder& b);

// map_reduce.cpp
// sum, mean, prod over dims (empty: all).
void reduce_dims(Builder& b, const char* onnx_op);
void max_min(Builder& b, bool is_max);
void arg_max_min(Builder& b, bool is_max);
void all_any(Builder& b, bool is_all);
void norm(Builder& b);
// var, std: composed (ReduceMean, Sub, Mul, ReduceSum, Div; std adds Sqrt).
void var_std(Builder& b, bool is_std);
void logsumexp(Builder& b);
void softmax(Builder& b, const char* onnx_op);
void cumsum(Builder& b);

// map_layers.cpp
void matmul(Builder& b);
void addmm(Builder& b);
void linear(Builder& b);
void dropout(Builder& b);
void embedding(Builder& b);
void layer_norm(Builder& b);
void batch_norm(Builder& b);
void instance_norm(Builder& b);
void group_norm(Builder& b);

// map_recurrent.cpp
// rnn, lstm, gru: one ONNX RNN, LSTM or GRU per layer, gate blocks reordered to ONNX's.
void recurrent(Builder& b);

// map_conv_pool.cpp
void conv(Builder& b);
void conv_transpose2d(Builder& b);
void max_pool(Builder& b);
void avg_pool(Builder& b);
void adaptive_pool2d(Builder& b, bool is_max);

// map_resample.cpp
void pad(Builder& b);
void interpolate(Builder& b);

}  // namespace rcuda::io::onnx_export
