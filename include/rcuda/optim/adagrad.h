// Adagrad with learning-rate decay, weight decay and maximize, as torch.optim.Adagrad.
#pragma once

#include <vector>

#include "rcuda/optim/optimizer.h"

namespace rcuda::optim {

// The defaults of every group (torch's names in the option map).
struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
  bool maximize = false;
  OptionMap to_map() const;
};

// State per parameter: "step", "sum" (starting at initial_accumulator_value; created at a
// parameter's first update, where torch creates it in the constructor: the values agree).
class Adagrad : public Optimizer {
 public:
  explicit Adagrad(std::vector<Tensor> params, AdagradOptions defaults = {});
  explicit Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults = {});

 protected:
  void check_options(const ParamGroup& group, size_t group_index) const override;
  void step_group(const ParamGroup& group, size_t group_index) override;
};

}  // namespace rcuda::optim
