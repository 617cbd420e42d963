// The optimizer base: parameter groups with named hyper-parameters, per-parameter state, and a
// state dict that saves and restores both, as torch.optim.Optimizer. The optimizers themselves
// are in sgd.h, adam.h, rmsprop.h and adagrad.h; src/optim/README.md describes the layer.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda::optim {

// Note [Hyper-parameters by name]
// A group's hyper-parameters are a map of torch's names ("lr", "betas", "momentum", ...) to a
// number, a flag or a list of numbers (betas), not a struct per optimizer: users change them
// between steps (`group.set("lr", 0.01)`, what learning-rate schedulers do), bindings convert
// one map type for every optimizer, keys an optimizer does not know ride along (a scheduler's
// "initial_lr"), and the state dict saves them as they are. Each optimizer fills missing names
// from its defaults when a group is added, and reads and checks the values it needs at every
// step, so a bad value is an error naming the optimizer, the group, the name and the value.
using OptionValue = std::variant<double, bool, std::vector<double>>;
using OptionMap = std::map<std::string, OptionValue>;

struct ParamGroup {
  std::vector<Tensor> params;
  OptionMap options;  // missing names take the optimizer's defaults

  ParamGroup() = default;
  explicit ParamGroup(std::vector<Tensor> params, OptionMap options = {})
      : params(std::move(params)), options(std::move(options)) {}

  // Typed access; ValueError naming the option when it is missing or of another kind.
  double number(const std::string& name) const;
  bool flag(const std::string& name) const;
  const std::vector<double>& numbers(const std::string& name) const;
  void set(const std::string& name, OptionValue value) { options[name] = std::move(value); }
  double lr() const { return number("lr"); }
  void set_lr(double lr) { set("lr", lr); }
};

// What an optimizer keeps for one parameter: its step count (optimizers that count steps) and
// its buffers, indexed as the optimizer's buffer_names() (undefined until first needed).
struct ParamState {
  int64_t step = 0;
  std::vector<Tensor> buffers;
};

// Note [State dict]
// As torch's optimizer.state_dict(): parameters are numbered 0, 1, ... in group order, and the
// dict holds, per parameter with state, its buffers by name ("exp_avg", "momentum_buffer", ...)
// and its numbers ("step"), plus each group's options and parameter numbers. Plain maps, so
// that bindings can convert it and io can write it. The tensors are the optimizer's own (as
// torch): clone them to keep a snapshot while stepping on; load_state_dict copies what it
// reads, to each parameter's device and dtype.
struct ParamStateDict {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, double> numbers;
};
struct GroupStateDict {
  OptionMap options;
  std::vector<int64_t> params;
};
struct StateDict {
  std::map<int64_t, ParamStateDict> state;
  std::vector<GroupStateDict> param_groups;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // "SGD", "Adam", ...: the prefix of every error message.
  const std::string& name() const { return name_; }
  // One update of every parameter that has a gradient (parameters without one are skipped):
  // in place, bumping each updated storage's version (Note [Version counter]), recording
  // nothing for autograd.
  void step();
  // Gradients to undefined (set_to_none, as torch's default) or to zeros in place.
  void zero_grad(bool set_to_none = true);

  // Mutable, as torch's: change a group's options between steps.
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  // Fills missing options from the defaults and checks them; ValueError for a parameter
  // already optimized here, DTypeError for a non-floating one.
  void add_param_group(ParamGroup group);
  const OptionMap& defaults() const { return defaults_; }

  // The names of a parameter's buffers, in ParamState::buffers order.
  const std::vector<std::string>& buffer_names() const { return buffer_names_; }
  // The state of `param`, or null before its first update.
  const ParamState* state(const Tensor& param) const;

  StateDict state_dict() const;
  // ValueError / ShapeError naming what does not match (group count, parameters per group,
  // unknown parameter numbers or buffer names, buffer shapes, options); nothing changes then.
  void load_state_dict(const StateDict& dict);

 protected:
  Optimizer(std::string name, OptionMap defaults, std::vector<std::string> buffer_names,
            bool counts_steps);
  // Derived constructors call this once their defaults are set (it calls check_options).
  void add_param_groups(std::vector<ParamGroup> groups);

  // ValueError naming the optimizer, group, option and value for a bad hyper-parameter.
  virtual void check_options(const ParamGroup& group, size_t group_index) const = 0;
  // Updates the parameters of one group that have gradients.
  virtual void step_group(const ParamGroup& group, size_t group_index) = 0;

  // A group's parameters that have gradients, split by device and dtype, ready for one
  // backend call each: contiguous parameters (a staging copy where one is not) and gradients,
  // each parameter's state (created on first use) and, after the call, finish() copies staged
  // parameters back and bumps versions.
  struct Bucket {
    Device device;
    DType dtype = DType::Float32;
    std::vector<Tensor> params, grads;
    std::vector<ParamState*> states;
    std::vector<std::pair<Tensor, Tensor>> staged;  // (parameter, its contiguous copy)
  };
  std::vector<Bucket> buckets(const ParamGroup& group, size_t group_index);
  // DTypeError / DeviceError / ShapeError naming the parameter when its gradient does not match.
  void check_gradient(const Tensor& param, const Tensor& grad, size_t index,
                      size_t group_index) const;
  void finish(const Bucket& bucket);
  // The buffer `index` of a parameter's state (its staged copy's shape, dtype, device),
  // created filled with `initial` when undefined.
  Tensor& buffer(ParamState& state, size_t index, const Tensor& param, double initial = 0);
  // Note [Optimizer steps in CUDA graphs]
  // launch(executes) makes the bucket's backend call; run_step runs it now, and, while this
  // thread captures a CUDA graph on the bucket's device, again before every replay
  // (run_updatable in rcuda/backend/cuda_graph.h). So each replay is a real step: launch reads
  // the group's options (a changed lr applies) and advances the step counts when `executes`; at
  // capture, where nothing runs, it counts nothing (executes is false). The state must exist
  // before the capture (a state made inside would be zeroed again by every replay), and the
  // optimizer must outlive the graph.
  void run_step(const Bucket& bucket, const std::function<void(bool executes)>& launch);
  // ValueError naming `what` when this thread captures on `param`'s device (the state `what`
  // of a parameter is missing there).
  void check_state_outside_capture(const Tensor& param, const char* what) const;

 private:
  std::string name_;
  OptionMap defaults_;
  std::vector<std::string> buffer_names_;
  bool counts_steps_;
  std::vector<ParamGroup> groups_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

}  // namespace rcuda::optim
