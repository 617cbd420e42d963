// The gradient of the pools: ops::pool_backward, one primitive call (a scatter or gather by the
// saved indices for max pools, each window's share for average pools); nothing reads a value
// back on the GPU.
#include "pool.h"

namespace rcuda::autograd {

const char* PoolBackward::name() const {
  const bool one_d = options.spatial_dims == 1;
  switch (options.op) {
    case PoolOp::Max:
      return options.adaptive ? "AdaptiveMaxPool2DBackward"
             : one_d          ? "MaxPool1DWithIndicesBackward"
                              : "MaxPool2DWithIndicesBackward";
    case PoolOp::Avg:
      return options.adaptive ? "AdaptiveAvgPool2DBackward"
             : one_d          ? "AvgPool1DBackward"
                              : "AvgPool2DBackward";
  }
  return "PoolBackward";
}

TensorList PoolBackward::apply(TensorList&& grads) {
  return {ops::pool_backward(grads[0], input_shape, channels_last, indices.unpack(*this), options)};
}

}  // namespace rcuda::autograd
