// torch.nn.functional for C++: the differentiable functions a training loop calls, written over
// the public op API (rcuda/autograd/api.h). Initialisers are in rcuda/nn/init.h.
//
//   Tensor h = nn::relu(nn::linear(x, w1, b1));
//   Tensor loss = nn::cross_entropy(nn::linear(h, w2, b2), labels);
//   autograd::backward(loss);
#pragma once

#include "rcuda/nn/activation.h"
#include "rcuda/nn/conv.h"  // conv1d, conv2d, conv_transpose2d
#include "rcuda/nn/layers.h"
#include "rcuda/nn/loss.h"
#include "rcuda/nn/norm.h"
#include "rcuda/nn/pool.h"
#include "rcuda/nn/resample.h"  // pad, interpolate
#include "rcuda/nn/rnn.h"       // rnn, lstm, gru
