// torch.optim.SGD over the sgd_step primitive.
#include "rcuda/optim/sgd.h"

#include "optim/options.h"
#include "rcuda/backend/backend.h"
#include "rcuda/ops/creation.h"
#include "rcuda/tensor/memory_format.h"

namespace rcuda::optim {
namespace {

constexpr size_t kMomentumBuffer = 0;

Backend::SgdStep read_args(const std::string& name, const ParamGroup& group, size_t index) {
  const detail::OptionReader r(name, group, index);
  Backend::SgdStep a;
  a.lr = r.nonnegative("lr", "learning rate");
  a.momentum = r.nonnegative("momentum", "momentum value");
  a.dampening = r.number("dampening");
  a.weight_decay = r.nonnegative("weight_decay", "weight_decay value");
  a.nesterov = r.flag("nesterov");
  a.maximize = r.flag("maximize");
  if (a.nesterov && !(a.momentum > 0))
    r.invalid("Nesterov momentum", "momentum", a.momentum, "momentum > 0 with nesterov = true");
  if (a.nesterov && a.dampening != 0)
    r.invalid("Nesterov momentum", "dampening", a.dampening, "dampening = 0 with nesterov = true");
  return a;
}

}  // namespace

OptionMap SGDOptions::to_map() const {
  return {{"lr", lr},
          {"momentum", momentum},
          {"dampening", dampening},
          {"weight_decay", weight_decay},
          {"nesterov", nesterov},
          {"maximize", maximize}};
}

SGD::SGD(std::vector<Tensor> params, SGDOptions defaults)
    : SGD(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions defaults)
    : Optimizer("SGD", defaults.to_map(), {"momentum_buffer"}, /*counts_steps=*/false) {
  add_param_groups(std::move(groups));
}

void SGD::check_options(const ParamGroup& group, size_t group_index) const {
  read_args(name(), group, group_index);
}

void SGD::step_group(const ParamGroup& group, size_t group_index) {
  read_args(name(), group, group_index);  // checks the options before anything runs
  for (const Bucket& b : buckets(group, group_index)) {
    // Note [Optimizer steps in CUDA graphs]
    run_step(b, [this, b, group_index](bool executes) {
      Backend::SgdStep args = read_args(name(), param_groups()[group_index], group_index);
      Backend& backend = backend_for(b.device);
      if (args.momentum == 0) {
        backend.sgd_step(b.params, b.grads, {}, args);
        return;
      }
      // torch sets a new buffer to the gradient and updates existing ones: two calls when a
      // step has both kinds (the first step has only new ones, later steps only old ones).
      Backend::TensorList params[2], grads[2], buffers[2];
      for (size_t i = 0; i < b.params.size(); ++i) {
        Tensor& buffer = b.states[i]->buffers[kMomentumBuffer];
        const int is_new = buffer.defined() ? 0 : 1;
        if (is_new) {
          check_state_outside_capture(b.params[i], "momentum_buffer");
          buffer = empty_like_layout(b.params[i], b.dtype);  // the parameter's layout
        }
        params[is_new].push_back(b.params[i]);
        grads[is_new].push_back(b.grads[i]);
        buffers[is_new].push_back(buffer);
      }
      for (int is_new = 0; is_new < 2; ++is_new) {
        if (params[is_new].empty()) continue;
        args.momentum_buffers_are_new = is_new == 1;
        backend.sgd_step(params[is_new], grads[is_new], buffers[is_new], args);
      }
    });
    finish(b);
  }
}

}  // namespace rcuda::optim
