// Stochastic gradient descent with momentum, dampening, Nesterov momentum, weight decay and
// maximize, as torch.optim.SGD.
#pragma once

#include <vector>

#include "rcuda/optim/optimizer.h"

namespace rcuda::optim {

// The defaults of every group (torch's names in the option map).
struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
  bool maximize = false;
  OptionMap to_map() const;
};

// State per parameter: "momentum_buffer" (when momentum != 0); no step count.
class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions defaults = {});
  explicit SGD(std::vector<ParamGroup> groups, SGDOptions defaults = {});

 protected:
  void check_options(const ParamGroup& group, size_t group_index) const override;
  void step_group(const ParamGroup& group, size_t group_index) override;
};

}  // namespace rcuda::optim
