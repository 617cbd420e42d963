// The recurrent layers that record for backward (the no-grad contract is rcuda/ops/rnn.h):
// one RnnBackward node per call (src/autograd/grads/rnn.h), with gradients to input, hx, cx and
// every weight, from gradients of any of output, h_n and c_n. rcuda::nn::rnn (rcuda/nn/rnn.h)
// adds dropout between layers on top.
#pragma once

#include <vector>

#include "rcuda/ops/rnn.h"

namespace rcuda {

// As ops::rnn_forward, recording when grad mode is on and some tensor requires grad (then the
// forward keeps the backend's reserve whatever params.training says); the result's reserve is
// left undefined.
ops::RnnOutputs rnn(const Tensor& input, const Tensor& hx, const Tensor& cx,
                    const std::vector<Tensor>& weights, const ops::RnnParams& params);

}  // namespace rcuda
