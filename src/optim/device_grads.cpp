// Gradients grouped by device for the multi-tensor primitives (device_grads.h).
#include "device_grads.h"

#include "rcuda/core/error.h"
#include "rcuda/ops/copy.h"

namespace rcuda::optim::detail {

// The gradients of `params` that exist, checked floating.
std::vector<Tensor> gradients_of(const std::vector<Tensor>& params, const char* op) {
  std::vector<Tensor> grads;
  for (size_t i = 0; i < params.size(); ++i) {
    RCUDA_CHECK(params[i].defined(), ValueError, op, ": parameter ", i, " is an undefined tensor");
    Tensor g = params[i].grad();
    if (!g.defined()) continue;
    RCUDA_CHECK(is_floating(g.dtype()) && !is_float8(g.dtype()), DTypeError, op,
                ": the gradient of parameter ", i, " has dtype ", dtype_name(g.dtype()),
                ", expected float16, bfloat16, float32 or float64");
    grads.push_back(std::move(g));
  }
  return grads;
}

void DeviceGrads::write_back() const {
  for (const auto& [grad, copy] : staged) ops::copy_(grad, copy);
}

std::vector<DeviceGrads> by_device(const std::vector<Tensor>& grads) {
  std::vector<DeviceGrads> out;
  for (const Tensor& g : grads) {
    DeviceGrads* d = nullptr;
    for (DeviceGrads& e : out)
      if (e.device == g.device()) d = &e;
    if (d == nullptr) {
      out.push_back(DeviceGrads{g.device(), {}, {}, {}});
      d = &out.back();
    }
    d->grads.push_back(g);
    if (g.is_contiguous()) {
      d->dense.push_back(g);
    } else {
      Tensor copy = ops::clone(g);
      d->staged.emplace_back(g, copy);
      d->dense.push_back(std::move(copy));
    }
  }
  return out;
}

}  // namespace rcuda::optim::detail
