// Adam and AdamW, as torch.optim.Adam and torch.optim.AdamW: amsgrad, maximize, weight decay
// added to the gradient (Adam) or decoupled, param *= 1 - lr * weight_decay (AdamW).
#pragma once

#include <array>
#include <vector>

#include "rcuda/optim/optimizer.h"

namespace rcuda::optim {

// The defaults of every group (torch's names in the option map; betas is a list of two).
struct AdamOptions {
  double lr = 1e-3;
  std::array<double, 2> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
  OptionMap to_map() const;
};

// AdamW's defaults differ from Adam's only in weight_decay (1e-2, as torch).
struct AdamWOptions : AdamOptions {
  AdamWOptions() { weight_decay = 1e-2; }
};

// State per parameter: "step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq" (amsgrad).
class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, AdamOptions defaults = {});
  explicit Adam(std::vector<ParamGroup> groups, AdamOptions defaults = {});

 protected:
  Adam(const char* name, bool decoupled_weight_decay, const AdamOptions& defaults);
  void check_options(const ParamGroup& group, size_t group_index) const override;
  void step_group(const ParamGroup& group, size_t group_index) override;

 private:
  bool decoupled_weight_decay_;
};

class AdamW : public Adam {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions defaults = {});
  explicit AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults = {});
};

}  // namespace rcuda::optim
