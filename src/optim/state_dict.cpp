// Saving and restoring an optimizer (Note [State dict] in rcuda/optim/optimizer.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <utility>

#include "rcuda/core/error.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/optim/optimizer.h"

namespace rcuda::optim {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::ostringstream out;
  for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << names[i];
  return names.empty() ? std::string("nothing") : out.str();
}

}  // namespace

StateDict Optimizer::state_dict() const {
  StateDict dict;
  int64_t id = 0;
  for (const ParamGroup& group : groups_) {
    GroupStateDict saved;
    saved.options = group.options;
    for (const Tensor& p : group.params) {
      saved.params.push_back(id);
      const auto it = state_.find(p.impl());
      if (it != state_.end()) {
        ParamStateDict entry;
        const ParamState& s = it->second;
        for (size_t k = 0; k < s.buffers.size(); ++k)
          if (s.buffers[k].defined()) entry.tensors.emplace(buffer_names_[k], s.buffers[k]);
        if (counts_steps_) entry.numbers.emplace("step", static_cast<double>(s.step));
        dict.state.emplace(id, std::move(entry));
      }
      ++id;
    }
    dict.param_groups.push_back(std::move(saved));
  }
  return dict;
}

void Optimizer::load_state_dict(const StateDict& dict) {
  const std::string who = name_ + ".load_state_dict";
  RCUDA_CHECK(dict.param_groups.size() == groups_.size(), ValueError, who, ": the state dict has ",
              dict.param_groups.size(), " param groups, the optimizer ", groups_.size());
  // Everything is checked and built aside first, so a bad dict changes nothing.
  std::vector<ParamGroup> groups = groups_;
  std::map<int64_t, Tensor> params_by_id;
  for (size_t g = 0; g < groups.size(); ++g) {
    const GroupStateDict& saved = dict.param_groups[g];
    RCUDA_CHECK(saved.params.size() == groups[g].params.size(), ValueError, who, ": param group ",
                g, " of the state dict has ", saved.params.size(), " parameters, the optimizer's ",
                groups[g].params.size());
    for (size_t i = 0; i < saved.params.size(); ++i) {
      const bool inserted = params_by_id.emplace(saved.params[i], groups[g].params[i]).second;
      RCUDA_CHECK(inserted, ValueError, who, ": parameter number ", saved.params[i],
                  " appears more than once in the state dict's param groups");
    }
    groups[g].options = saved.options;
    for (const auto& [key, value] : defaults_) groups[g].options.emplace(key, value);
    check_options(groups[g], g);
  }

  std::unordered_map<const TensorImpl*, ParamState> state;
  for (const auto& [id, saved] : dict.state) {
    const auto found = params_by_id.find(id);
    RCUDA_CHECK(found != params_by_id.end(), ValueError, who, ": the state dict has state for ",
                "parameter number ", id, ", which none of its param groups lists");
    const Tensor& p = found->second;
    ParamState s;
    s.buffers.resize(buffer_names_.size());
    for (const auto& [name, t] : saved.tensors) {
      const auto k = std::find(buffer_names_.begin(), buffer_names_.end(), name);
      RCUDA_CHECK(k != buffer_names_.end(), ValueError, who, ": unknown state '", name,
                  "' for parameter number ", id, " (", name_, " keeps ", joined(buffer_names_),
                  ")");
      RCUDA_CHECK(t.defined(), ValueError, who, ": ", name, " of parameter number ", id,
                  " is an undefined tensor");
      RCUDA_CHECK(t.shape() == p.shape(), ShapeError, who, ": ", name, " of parameter number ", id,
                  " has shape ", shape_str(t.shape()), ", the parameter ", shape_str(p.shape()));
      RCUDA_CHECK(is_floating(t.dtype()) && !is_float8(t.dtype()), DTypeError, who, ": ", name,
                  " of parameter number ", id, " has dtype ", dtype_name(t.dtype()),
                  ", expected a floating dtype");
      // A copy in the parameter's dtype and on its device, as torch casts loaded state.
      Tensor copy = ops::empty(p.shape(), {p.dtype(), p.device()});
      ops::copy_(copy, t);
      s.buffers[static_cast<size_t>(k - buffer_names_.begin())] = std::move(copy);
    }
    for (const auto& [name, value] : saved.numbers) {
      RCUDA_CHECK(counts_steps_ && name == "step", ValueError, who, ": unknown number '", name,
                  "' for parameter number ", id, " (", name_,
                  counts_steps_ ? " keeps only 'step')" : " keeps no numbers)");
      RCUDA_CHECK(value >= 0 && std::floor(value) == value, ValueError, who,
                  ": step of parameter number ", id, " is ", value,
                  ", expected a whole number >= 0");
      s.step = static_cast<int64_t>(value);
    }
    RCUDA_CHECK(!counts_steps_ || saved.numbers.count("step") == 1, ValueError, who,
                ": the state of parameter number ", id, " has no 'step'");
    state.emplace(p.impl(), std::move(s));
  }
  groups_ = std::move(groups);
  state_ = std::move(state);
}

}  // namespace rcuda::optim
