// The optimizer base: state dicts (round trip continues identically, load errors), argument
// checks with messages naming the optimizer, the option and the value, zero_grad, and groups
// added after construction.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "optim/optim_reference.h"

namespace rcuda {
namespace {

using optim::OptionMap;
using optim::ParamGroup;
using optim::StateDict;
using test::error_message;
using test::random_tensor;
using test::to_doubles;

// Whether `message` contains `expected`, printing both when not.
::testing::AssertionResult contains(const std::string& message, const std::string& expected) {
  if (message.find(expected) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "message \"" << message << "\" lacks \"" << expected << "\"";
}

using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<ParamGroup>)>;

template <typename Opt>
Make maker(OptionMap options) {
  return [options](std::vector<ParamGroup> groups) -> std::unique_ptr<optim::Optimizer> {
    for (ParamGroup& g : groups)
      for (const auto& [k, v] : options) g.options.emplace(k, v);
    return std::make_unique<Opt>(std::move(groups));
  };
}

struct Named {
  const char* name;
  Make make;
};

std::vector<Named> all_optimizers() {
  return {
      {"SGD", maker<optim::SGD>({{"lr", 0.1}, {"momentum", 0.9}, {"nesterov", true}})},
      {"Adam", maker<optim::Adam>({{"lr", 0.05}, {"amsgrad", true}})},
      {"AdamW", maker<optim::AdamW>({{"lr", 0.05}})},
      {"RMSprop", maker<optim::RMSprop>({{"centered", true}, {"momentum", 0.5}})},
      {"Adagrad", maker<optim::Adagrad>({{"lr_decay", 0.1}, {"initial_accumulator_value", 0.2}})},
  };
}

std::vector<Tensor> clones(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(ops::clone(p));
  return out;
}

// The same fresh gradients on both parameter lists.
void set_same_grads(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor g = random_tensor(a[i].shape(), a[i].dtype());
    a[i].set_grad(g);
    b[i].set_grad(ops::clone(g));
  }
}

TEST(OptimStateDict, RoundTripContinuesIdentically) {
  for (const Named& o : all_optimizers()) {
    SCOPED_TRACE(o.name);
    const std::vector<Tensor> a = {random_tensor({3, 4}, DType::Float32),
                                   random_tensor({5}, DType::Float32),
                                   random_tensor({2}, DType::Float32)};
    auto opt_a = o.make({ParamGroup({a[0], a[1]}), ParamGroup({a[2]}, {{"lr", 0.02}})});
    for (int step = 0; step < 2; ++step) {
      for (const Tensor& p : a) p.set_grad(random_tensor(p.shape(), p.dtype()));
      opt_a->step();
    }
    const StateDict saved = opt_a->state_dict();
    ASSERT_EQ(saved.param_groups.size(), 2u);
    EXPECT_EQ(saved.param_groups[0].params, (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(saved.param_groups[1].params, (std::vector<int64_t>{2}));
    EXPECT_EQ(std::get<double>(saved.param_groups[1].options.at("lr")), 0.02);
    ASSERT_EQ(saved.state.size(), 3u);
    if (std::string(o.name) != "SGD") {
      EXPECT_EQ(saved.state.at(1).numbers.at("step"), 2);
    }

    // A fresh optimizer with other options over copies of the parameters takes everything.
    const std::vector<Tensor> b = clones(a);
    auto opt_b = o.make({ParamGroup({b[0], b[1]}, {{"lr", 0.5}}), ParamGroup({b[2]})});
    opt_b->load_state_dict(saved);
    EXPECT_EQ(opt_b->param_groups()[0].lr(), opt_a->param_groups()[0].lr());
    EXPECT_EQ(opt_b->param_groups()[1].lr(), 0.02);
    for (int step = 0; step < 3; ++step) {
      set_same_grads(a, b);
      opt_a->step();
      opt_b->step();
      for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(to_doubles(a[i]), to_doubles(b[i]));
    }
    // The loaded state is a copy: stepping one optimizer left the other's dict alone.
    const StateDict now = opt_b->state_dict();
    for (const auto& [name, t] : now.state.at(0).tensors)
      EXPECT_FALSE(t.storage() == saved.state.at(0).tensors.at(name).storage()) << name;
  }
}

TEST(OptimStateDict, LoadErrorsNameTheMismatch) {
  const std::vector<Tensor> p = {random_tensor({3, 4}, DType::Float32),
                                 random_tensor({5}, DType::Float32)};
  optim::Adam opt(p, {});
  for (const Tensor& t : p) t.set_grad(random_tensor(t.shape(), t.dtype()));
  opt.step();
  const StateDict good = opt.state_dict();
  const std::vector<double> before = to_doubles(opt.state(p[0])->buffers[0]);

  StateDict d = good;
  d.param_groups.push_back(d.param_groups[0]);
  EXPECT_TRUE(contains(error_message([&] { opt.load_state_dict(d); }),
                       "Adam.load_state_dict: the state dict has 2 param groups, the optimizer 1"));

  d = good;
  d.param_groups[0].params.pop_back();
  EXPECT_TRUE(contains(error_message([&] { opt.load_state_dict(d); }),
                       "param group 0 of the state dict has 1 parameters, the optimizer's 2"));

  d = good;
  d.state[0].tensors["exp_avg"] = random_tensor({4, 3}, DType::Float32);
  EXPECT_THROW(opt.load_state_dict(d), ShapeError);
  EXPECT_TRUE(contains(error_message([&] { opt.load_state_dict(d); }),
                       "exp_avg of parameter number 0 has shape [4, 3], the parameter [3, 4]"));

  d = good;
  d.state[1].tensors["momentum_buffer"] = random_tensor({5}, DType::Float32);
  EXPECT_TRUE(contains(error_message([&] { opt.load_state_dict(d); }),
                       "unknown state 'momentum_buffer' for parameter number 1 (Adam keeps "
                       "exp_avg, exp_avg_sq, max_exp_avg_sq)"));

  d = good;
  d.state[0].numbers.erase("step");
  EXPECT_TRUE(contains(error_message([&] { opt.load_state_dict(d); }), "has no 'step'"));

  d = good;
  d.state[0].numbers["step"] = 1.5;
  EXPECT_TRUE(contains(error_message([&] { opt.load_state_dict(d); }),
                       "step of parameter number 0 is 1.5"));

  d = good;
  d.state[7] = d.state[0];
  EXPECT_TRUE(contains(error_message([&] { opt.load_state_dict(d); }),
                       "state for parameter number 7, which none of its param groups lists"));

  d = good;
  d.param_groups[0].params = {0, 0};
  EXPECT_TRUE(contains(error_message([&] { opt.load_state_dict(d); }),
                       "parameter number 0 appears more than once"));

  d = good;
  d.param_groups[0].options["lr"] = -1.0;
  EXPECT_TRUE(contains(error_message([&] { opt.load_state_dict(d); }),
                       "Adam: invalid learning rate: lr = -1 in param group 0"));

  // Nothing changed on any failure.
  EXPECT_EQ(opt.param_groups()[0].lr(), 1e-3);
  EXPECT_EQ(to_doubles(opt.state(p[0])->buffers[0]), before);
  EXPECT_EQ(opt.state(p[0])->step, 1);
}

TEST(OptimStateDict, SgdWithoutMomentumKeepsNoBuffersOrSteps) {
  const Tensor p = random_tensor({4}, DType::Float64);
  optim::SGD opt({p}, {});
  p.set_grad(random_tensor({4}, DType::Float64));
  opt.step();
  const StateDict d = opt.state_dict();
  ASSERT_EQ(d.state.size(), 1u);
  EXPECT_TRUE(d.state.at(0).tensors.empty());
  EXPECT_TRUE(d.state.at(0).numbers.empty());
}

// ---- argument checks ----

std::string construct_error(const std::function<void()>& f) { return error_message(f); }

TEST(OptimChecks, HyperParametersNameOptimizerArgumentAndValue) {
  const std::vector<Tensor> p = {random_tensor({2}, DType::Float32)};
  struct Bad {
    std::function<void()> make;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {[&] { optim::SGD(p, {-0.1}); }, "SGD: invalid learning rate: lr = -0.1 in param group 0"},
      {[&] {
         optim::SGDOptions o;
         o.momentum = -1;
         optim::SGD(p, o);
       },
       "SGD: invalid momentum value: momentum = -1"},
      {[&] {
         optim::SGDOptions o;
         o.nesterov = true;
         optim::SGD(p, o);
       },
       "SGD: invalid Nesterov momentum: momentum = 0 in param group 0 (expected momentum > 0 "
       "with nesterov = true)"},
      {[&] {
         optim::SGDOptions o;
         o.nesterov = true;
         o.momentum = 0.9;
         o.dampening = 0.1;
         optim::SGD(p, o);
       },
       "SGD: invalid Nesterov momentum: dampening = 0.1"},
      {[&] {
         optim::SGDOptions o;
         o.weight_decay = -0.5;
         optim::SGD(p, o);
       },
       "SGD: invalid weight_decay value: weight_decay = -0.5"},
      {[&] { optim::Adam(p, {-1e-3}); }, "Adam: invalid learning rate: lr = -0.001"},
      {[&] {
         optim::AdamOptions o;
         o.betas = {1.0, 0.999};
         optim::Adam(p, o);
       },
       "Adam: invalid beta parameter at index 0: betas[0] = 1 in param group 0 (expected 0 <= "
       "betas[0] < 1)"},
      {[&] {
         optim::AdamOptions o;
         o.betas = {0.9, -0.1};
         optim::Adam(p, o);
       },
       "Adam: invalid beta parameter at index 1: betas[1] = -0.1"},
      {[&] {
         optim::AdamOptions o;
         o.betas = {std::numeric_limits<double>::quiet_NaN(), 0.9};
         optim::Adam(p, o);
       },
       "betas[0] = nan"},
      {[&] {
         optim::AdamOptions o;
         o.eps = -1e-8;
         optim::Adam(p, o);
       },
       "Adam: invalid epsilon value: eps = -1e-08"},
      {[&] {
         optim::AdamWOptions o;
         o.weight_decay = -1;
         optim::AdamW(p, o);
       },
       "AdamW: invalid weight_decay value: weight_decay = -1"},
      {[&] {
         optim::RMSpropOptions o;
         o.alpha = -0.5;
         optim::RMSprop(p, o);
       },
       "RMSprop: invalid alpha value: alpha = -0.5"},
      {[&] {
         optim::RMSpropOptions o;
         o.momentum = -0.5;
         optim::RMSprop(p, o);
       },
       "RMSprop: invalid momentum value: momentum = -0.5"},
      {[&] {
         optim::RMSpropOptions o;
         o.eps = -1;
         optim::RMSprop(p, o);
       },
       "RMSprop: invalid epsilon value: eps = -1"},
      {[&] {
         optim::AdagradOptions o;
         o.lr_decay = -0.1;
         optim::Adagrad(p, o);
       },
       "Adagrad: invalid lr_decay value: lr_decay = -0.1"},
      {[&] {
         optim::AdagradOptions o;
         o.initial_accumulator_value = -2;
         optim::Adagrad(p, o);
       },
       "Adagrad: invalid initial_accumulator_value value: initial_accumulator_value = -2"},
      {[&] {
         optim::Adagrad(std::vector<ParamGroup>{ParamGroup(p, {{"lr", true}})});
       },
       "Adagrad: param group 0: option 'lr' is a flag, expected a number"},
      {[&] {
         optim::Adam(std::vector<ParamGroup>{
             ParamGroup(p, {{"betas", std::vector<double>{0.9, 0.99, 0.1}}})});
       },
       "Adam: param group 0: option 'betas' has 3 numbers, expected 2"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.message);
    EXPECT_THROW(b.make(), ValueError);
    EXPECT_TRUE(contains(construct_error(b.make), b.message));
  }
}

TEST(OptimChecks, ParametersAreFloatingUniqueAndPresent) {
  const Tensor a = random_tensor({2}, DType::Float32), b = random_tensor({3}, DType::Float32);
  EXPECT_TRUE(contains(error_message([&] {
                         optim::SGD({a, b, a});
                       }),
                       "SGD: parameter 2 of param group 0 is also parameter 0 of param group 0"));
  EXPECT_THROW(optim::SGD({a, b, a}), ValueError);
  EXPECT_TRUE(contains(error_message([&] {
                         optim::Adam(std::vector<ParamGroup>{ParamGroup({a}), ParamGroup({b, a})});
                       }),
                       "Adam: parameter 1 of param group 1 is also parameter 0 of param group 0"));
  const Tensor ints = random_tensor({2}, DType::Int64);
  EXPECT_THROW(optim::RMSprop({ints}), DTypeError);
  EXPECT_TRUE(contains(error_message([&] {
                         optim::RMSprop({a, ints});
                       }),
                       "RMSprop: parameter 1 of param group 0 has dtype int64"));
  EXPECT_TRUE(contains(error_message([&] { optim::Adagrad(std::vector<Tensor>{}); }),
                       "Adagrad: got an empty parameter list"));
  EXPECT_TRUE(contains(error_message([&] {
                         optim::SGD({a, Tensor()});
                       }),
                       "SGD: parameter 1 of param group 0 is an undefined tensor"));

  // add_param_group checks against the groups already there.
  optim::SGD opt({a});
  EXPECT_THROW(opt.add_param_group(ParamGroup({b, a})), ValueError);
  EXPECT_EQ(opt.param_groups().size(), 1u);
}

TEST(OptimChecks, StepChecksOptionsAndGradients) {
  const Tensor p = random_tensor({3}, DType::Float32);
  optim::Adam opt({p});
  p.set_grad(random_tensor({3}, DType::Float32));
  opt.param_groups()[0].set_lr(-0.5);
  EXPECT_TRUE(contains(error_message([&] { opt.step(); }),
                       "Adam: invalid learning rate: lr = -0.5 in param group 0"));
  opt.param_groups()[0].set_lr(0.1);
  p.set_grad(random_tensor({3}, DType::Float64));
  EXPECT_THROW(opt.step(), DTypeError);
  EXPECT_TRUE(contains(error_message([&] { opt.step(); }),
                       "Adam: the gradient of parameter 0 of param group 0 has dtype float64, "
                       "the parameter float32"));
}

// ---- the rest of the base ----

TEST(OptimBase, ZeroGrad) {
  const Tensor a = random_tensor({3}, DType::Float32), b = random_tensor({2}, DType::Float32);
  optim::SGD opt({a, b});
  a.set_grad(random_tensor({3}, DType::Float32));
  opt.zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(to_doubles(a.grad()), (std::vector<double>{0, 0, 0}));
  EXPECT_FALSE(b.grad().defined());
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(OptimBase, AddedGroupTakesDefaultsAndItsOwnLr) {
  const Tensor a = random_tensor({3}, DType::Float64), b = random_tensor({4}, DType::Float64);
  optim::SGDOptions defaults;
  defaults.lr = 0.1;
  defaults.momentum = 0.5;
  optim::SGD opt({a}, defaults);
  opt.add_param_group(ParamGroup({b}, {{"lr", 0.01}}));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[1].lr(), 0.01);
  EXPECT_EQ(opt.param_groups()[1].number("momentum"), 0.5);
  const std::vector<double> b0 = to_doubles(b), g = {1, -2, 3, 0.5};
  b.set_grad(test::tensor_of(g, {4}, DType::Float64));
  opt.step();
  const std::vector<double> b1 = to_doubles(b);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_DOUBLE_EQ(b1[i], b0[i] - 0.01 * g[i]);
  // No graph state: parameters stay leaves.
  EXPECT_TRUE(b.is_leaf());
  EXPECT_EQ(b.grad_fn(), nullptr);
}

}  // namespace
}  // namespace rcuda
