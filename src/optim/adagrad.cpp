// torch.optim.Adagrad over the adagrad_step primitive.
#include "rcuda/optim/adagrad.h"

#include "optim/options.h"
#include "rcuda/backend/backend.h"

namespace rcuda::optim {
namespace {

constexpr size_t kSum = 0;

struct AdagradArgs {
  Backend::AdagradStep step;
  double initial_accumulator_value;
};

AdagradArgs read_args(const std::string& name, const ParamGroup& group, size_t index) {
  const detail::OptionReader r(name, group, index);
  AdagradArgs a;
  a.step.lr = r.nonnegative("lr", "learning rate");
  a.step.lr_decay = r.nonnegative("lr_decay", "lr_decay value");
  a.step.weight_decay = r.nonnegative("weight_decay", "weight_decay value");
  a.initial_accumulator_value =
      r.nonnegative("initial_accumulator_value", "initial_accumulator_value value");
  a.step.eps = r.nonnegative("eps", "epsilon value");
  a.step.maximize = r.flag("maximize");
  return a;
}

}  // namespace

OptionMap AdagradOptions::to_map() const {
  return {{"lr", lr},
          {"lr_decay", lr_decay},
          {"weight_decay", weight_decay},
          {"initial_accumulator_value", initial_accumulator_value},
          {"eps", eps},
          {"maximize", maximize}};
}

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions defaults)
    : Adagrad(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

Adagrad::Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults)
    : Optimizer("Adagrad", defaults.to_map(), {"sum"}, /*counts_steps=*/true) {
  add_param_groups(std::move(groups));
}

void Adagrad::check_options(const ParamGroup& group, size_t group_index) const {
  read_args(name(), group, group_index);
}

void Adagrad::step_group(const ParamGroup& group, size_t group_index) {
  read_args(name(), group, group_index);  // checks the options before anything runs
  for (const Bucket& b : buckets(group, group_index)) {
    // Note [Optimizer steps in CUDA graphs]
    run_step(b, [this, b, group_index](bool executes) {
      const AdagradArgs args = read_args(name(), param_groups()[group_index], group_index);
      Backend::TensorList sums;
      std::vector<int64_t> steps;
      for (size_t i = 0; i < b.params.size(); ++i) {
        ParamState& s = *b.states[i];
        steps.push_back(executes ? ++s.step : s.step + 1);
        sums.push_back(buffer(s, kSum, b.params[i], args.initial_accumulator_value));
      }
      backend_for(b.device).adagrad_step(b.params, b.grads, sums, steps, args.step);
    });
    finish(b);
  }
}

}  // namespace rcuda::optim
