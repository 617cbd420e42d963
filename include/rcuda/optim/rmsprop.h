// RMSprop with momentum, centering, weight decay and maximize, as torch.optim.RMSprop.
#pragma once

#include <vector>

#include "rcuda/optim/optimizer.h"

namespace rcuda::optim {

// The defaults of every group (torch's names in the option map).
struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
  bool maximize = false;
  OptionMap to_map() const;
};

// State per parameter: "step", "square_avg", "momentum_buffer" (momentum > 0), "grad_avg"
// (centered).
class RMSprop : public Optimizer {
 public:
  explicit RMSprop(std::vector<Tensor> params, RMSpropOptions defaults = {});
  explicit RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults = {});

 protected:
  void check_options(const ParamGroup& group, size_t group_index) const override;
  void step_group(const ParamGroup& group, size_t group_index) override;
};

}  // namespace rcuda::optim
