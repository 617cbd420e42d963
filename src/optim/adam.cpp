// torch.optim.Adam and torch.optim.AdamW over the adam_step primitive.
#include "rcuda/optim/adam.h"

#include "optim/options.h"
#include "rcuda/backend/backend.h"

namespace rcuda::optim {
namespace {

enum Buffer : size_t { kExpAvg, kExpAvgSq, kMaxExpAvgSq };

Backend::AdamStep read_args(const std::string& name, const ParamGroup& group, size_t index) {
  const detail::OptionReader r(name, group, index);
  Backend::AdamStep a;
  a.lr = r.nonnegative("lr", "learning rate");
  a.eps = r.nonnegative("eps", "epsilon value");
  const std::array<double, 2> betas = r.pair("betas");
  if (!(betas[0] >= 0 && betas[0] < 1))
    r.invalid("beta parameter at index 0", "betas[0]", betas[0], "0 <= betas[0] < 1");
  if (!(betas[1] >= 0 && betas[1] < 1))
    r.invalid("beta parameter at index 1", "betas[1]", betas[1], "0 <= betas[1] < 1");
  a.beta1 = betas[0];
  a.beta2 = betas[1];
  a.weight_decay = r.nonnegative("weight_decay", "weight_decay value");
  a.amsgrad = r.flag("amsgrad");
  a.maximize = r.flag("maximize");
  return a;
}

}  // namespace

OptionMap AdamOptions::to_map() const {
  return {{"lr", lr},           {"betas", std::vector<double>{betas[0], betas[1]}},
          {"eps", eps},         {"weight_decay", weight_decay},
          {"amsgrad", amsgrad}, {"maximize", maximize}};
}

Adam::Adam(const char* name, bool decoupled_weight_decay, const AdamOptions& defaults)
    : Optimizer(name, defaults.to_map(), {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
                /*counts_steps=*/true),
      decoupled_weight_decay_(decoupled_weight_decay) {}

Adam::Adam(std::vector<Tensor> params, AdamOptions defaults)
    : Adam(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions defaults)
    : Adam("Adam", /*decoupled_weight_decay=*/false, defaults) {
  add_param_groups(std::move(groups));
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions defaults)
    : AdamW(std::vector<ParamGroup>{ParamGroup(std::move(params))}, defaults) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults)
    : Adam("AdamW", /*decoupled_weight_decay=*/true, defaults) {
  add_param_groups(std::move(groups));
}

void Adam::check_options(const ParamGroup& group, size_t group_index) const {
  read_args(name(), group, group_index);
}

void Adam::step_group(const ParamGroup& group, size_t group_index) {
  read_args(name(), group, group_index);  // checks the options before anything runs
  for (const Bucket& b : buckets(group, group_index)) {
    // Note [Optimizer steps in CUDA graphs]
    run_step(b, [this, b, group_index](bool executes) {
      Backend::AdamStep args = read_args(name(), param_groups()[group_index], group_index);
      args.decoupled_weight_decay = decoupled_weight_decay_;
      Backend::TensorList exp_avgs, exp_avg_sqs, max_exp_avg_sqs;
      std::vector<int64_t> steps;
      for (size_t i = 0; i < b.params.size(); ++i) {
        ParamState& s = *b.states[i];
        steps.push_back(executes ? ++s.step : s.step + 1);
        exp_avgs.push_back(buffer(s, kExpAvg, b.params[i]));
        exp_avg_sqs.push_back(buffer(s, kExpAvgSq, b.params[i]));
        if (args.amsgrad) max_exp_avg_sqs.push_back(buffer(s, kMaxExpAvgSq, b.params[i]));
      }
      backend_for(b.device).adam_step(b.params, b.grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                                      steps, args);
    });
    finish(b);
  }
}

}  // namespace rcuda::optim
