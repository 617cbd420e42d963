// The replay functions of the table in invoke.cpp, by family, and the attribute readers they
// share. Each runs one recorded call again through the op's public entry point, reading the
// attributes the entry point reported (docs/graph.md, "What each op records").
#pragma once

#include <string>
#include <vector>

#include "rcuda/core/op.h"
#include "rcuda/core/scalar.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::graph::replay {

using Tensors = std::vector<Tensor>;
using Replay = Tensors (*)(OpId, const Tensors&, const Attributes&);

// Attribute readers: ValueError naming the op when absent or of another type.
int64_t integer(const Attributes& a, const char* name, OpId op);
std::vector<int64_t> integers(const Attributes& a, const char* name, OpId op);
// A number stored as an integer or a double.
double number(const Attributes& a, const char* name, OpId op);
bool flag(const Attributes& a, const char* name, OpId op, bool fallback);
std::string text(const Attributes& a, const char* name, OpId op, const std::string& fallback);
// A number attribute as the Scalar it was (int64, double or bool), so that a replay fills an
// integer tensor with the same value.
Scalar scalar(const Attributes& a, const char* name, OpId op);
// The "other" attribute of a call with a number operand, as the Scalar it was.
Scalar operand(const Attributes& a, OpId op);
// The input at i, or ValueError naming the op when the node has fewer.
const Tensor& input(const Tensors& in, size_t i, OpId op);
// The input at i, undefined when absent (an optional tensor the call was not given).
Tensor optional_input(const Tensors& in, size_t i);

// replay_tensor.cpp
Tensors unary(OpId op, const Tensors& in, const Attributes& a);
Tensors binary(OpId op, const Tensors& in, const Attributes& a);
Tensors where(OpId op, const Tensors& in, const Attributes& a);
Tensors inplace(OpId op, const Tensors& in, const Attributes& a);
Tensors conversion(OpId op, const Tensors& in, const Attributes& a);
Tensors view(OpId op, const Tensors& in, const Attributes& a);
Tensors reduction(OpId op, const Tensors& in, const Attributes& a);
Tensors product(OpId op, const Tensors& in, const Attributes& a);
Tensors indexing(OpId op, const Tensors& in, const Attributes& a);

// replay_nn.cpp
Tensors layer(OpId op, const Tensors& in, const Attributes& a);
Tensors convolution(OpId op, const Tensors& in, const Attributes& a);
Tensors pool(OpId op, const Tensors& in, const Attributes& a);
Tensors normalization(OpId op, const Tensors& in, const Attributes& a);
Tensors resample(OpId op, const Tensors& in, const Attributes& a);

// replay_sorting.cpp: sort, topk, kthvalue, median, mode, cummax, cummin, logcumsumexp,
// quantile, argsort
Tensors sorting(OpId op, const Tensors& in, const Attributes& a);

// replay_linalg.cpp: the linalg_* ops
Tensors linalg(OpId op, const Tensors& in, const Attributes& a);

// replay_scatter.cpp: scatter, scatter_add, masked_select, nonzero, one_hot; index_put_
Tensors scattering(OpId op, const Tensors& in, const Attributes& a);
Tensors index_put(OpId op, const Tensors& in, const Attributes& a);

// replay_rnn.cpp: rnn, lstm, gru
Tensors recurrent(OpId op, const Tensors& in, const Attributes& a);

// replay_loss.cpp: the losses of rcuda::nn
Tensors loss(OpId op, const Tensors& in, const Attributes& a);

}  // namespace rcuda::graph::replay
