// torch.optim.RMSprop over the rmsprop_step primitive.
#include "rcuda/optim/rmsprop.h"

#include "optim/options.h"
#include "rcuda/backend/backend.h"

namespace rcuda::optim {
namespace {

enum Buffer : size_t { kSquareAvg, kMomentumBuffer, kGradAvg };

Backend::RmspropStep read_args(const std::string& name, const ParamGroup& group, size_t index) {
  const detail::OptionReader r(name, group, index);
  Backend::RmspropStep a;
  a.lr = r.nonnegative("lr", "learning rate");
  a.eps = r.nonnegative("eps", "epsilon value");
  a.momentum = r.nonnegative("momentum", "momentum value");
  a.weight_decay = r.nonnegative("weight_decay", "weight_decay value");
  a.alpha = r.nonnegative("alpha", "alpha value");
  a.centered = r.flag("centered");
  a.maximize = r.flag("maximize");
  return a;
}

}  // namespace

OptionMap RMSpropOptions::to_map() const {
  return {{"lr", lr},
          {"alpha", alpha},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"momentum", momentum},
          {"centered", centered},
          {"maximize", maximize}};
}

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions defaults)
    : RMSprop(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults)
    : Optimizer("RMSprop", defaults.to_map(), {"square_avg", "momentum_buffer", "grad_avg"},
                /*counts_steps=*/true) {
  add_param_groups(std::move(groups));
}

void RMSprop::check_options(const ParamGroup& group, size_t group_index) const {
  read_args(name(), group, group_index);
}

void RMSprop::step_group(const ParamGroup& group, size_t group_index) {
  read_args(name(), group, group_index);  // checks the options before anything runs
  for (const Bucket& b : buckets(group, group_index)) {
    // Note [Optimizer steps in CUDA graphs]
    run_step(b, [this, b, group_index](bool executes) {
      const Backend::RmspropStep args = read_args(name(), param_groups()[group_index], group_index);
      Backend::TensorList square_avgs, momentum_buffers, grad_avgs;
      for (size_t i = 0; i < b.params.size(); ++i) {
        ParamState& s = *b.states[i];
        if (executes) ++s.step;
        square_avgs.push_back(buffer(s, kSquareAvg, b.params[i]));
        if (args.momentum > 0) momentum_buffers.push_back(buffer(s, kMomentumBuffer, b.params[i]));
        if (args.centered) grad_avgs.push_back(buffer(s, kGradAvg, b.params[i]));
      }
      backend_for(b.device).rmsprop_step(b.params, b.grads, square_avgs, momentum_buffers,
                                         grad_avgs, args);
    });
    finish(b);
  }
}

}  // namespace rcuda::optim
