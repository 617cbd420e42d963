// Each optimizer and option combination against the double-precision references of
// optim_reference.h (torch's algorithms), over several steps on fresh random parameters and
// gradients: every dtype, empty and 0-dim parameters, non-contiguous parameters, several groups
// with different learning rates, parameters without gradients, lr changed between steps.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "optim/optim_reference.h"

namespace rcuda {
namespace {

using optim::OptionMap;
using optim::ParamGroup;
using test::expect_matches_reference;
using test::MakeOptimizer;
using test::OptimizerRun;
using test::ReferenceStep;

const std::vector<Shape> kShapes = {{3, 4}, {5}, {}, {0}, {2, 3, 5}, {1, 7}};

struct Case {
  std::string label;
  OptionMap options;
};

template <typename Opt>
MakeOptimizer maker() {
  return [](std::vector<ParamGroup> groups) -> std::unique_ptr<optim::Optimizer> {
    return std::make_unique<Opt>(std::move(groups));
  };
}

// One group of kShapes with `options`, for every case and the given dtypes.
void run_cases(const std::vector<Case>& cases, const MakeOptimizer& make,
               const ReferenceStep& reference, const std::vector<DType>& dtypes) {
  for (DType dtype : dtypes) {
    for (const Case& c : cases) {
      OptimizerRun run;
      run.dtype = dtype;
      run.shapes = {kShapes};
      run.options = {c.options};
      if (is_reduced_float(dtype)) {
        run.steps = 3;
        run.grad_low = 0.25;  // keeps second moments of the half types out of subnormals
      }
      expect_matches_reference(c.label, run, make, reference);
    }
  }
}

const std::vector<DType> kFullPrecision = {DType::Float64, DType::Float32};
const std::vector<DType> kHalfTypes = {DType::Float16, DType::BFloat16};

// Several groups with their own lr, gradients missing at some steps, the first group's lr
// changed before the third step, and transposed (non-contiguous) parameters.
void run_groups(const MakeOptimizer& make, const ReferenceStep& reference,
                const OptionMap& extra = {}) {
  for (DType dtype : kFullPrecision) {
    OptimizerRun run;
    run.dtype = dtype;
    run.steps = 6;
    run.shapes = {{{4, 3}, {6}}, {{2, 5}, {}, {3, 3}}};
    OptionMap first = extra, second = extra;
    first["lr"] = 0.1;
    second["lr"] = 0.01;
    run.options = {first, second};
    run.has_grad = [](int step, size_t group, size_t index) {
      return (step + static_cast<int>(group + index)) % 3 != 1;
    };
    run.before_step = [](int step, optim::Optimizer& opt) {
      if (step == 2) opt.param_groups()[0].set_lr(0.02);
    };
    run.strided_params = true;
    expect_matches_reference("groups", run, make, reference);
  }
}

TEST(OptimSGD, MatchesReference) {
  const std::vector<Case> cases = {
      {"plain", {{"lr", 0.1}}},
      {"momentum", {{"lr", 0.1}, {"momentum", 0.9}}},
      {"dampening", {{"lr", 0.1}, {"momentum", 0.8}, {"dampening", 0.3}}},
      {"nesterov", {{"lr", 0.1}, {"momentum", 0.9}, {"nesterov", true}}},
      {"weight_decay", {{"lr", 0.1}, {"weight_decay", 0.2}}},
      {"maximize", {{"lr", 0.1}, {"maximize", true}}},
      {"all",
       {{"lr", 0.05},
        {"momentum", 0.7},
        {"nesterov", true},
        {"weight_decay", 0.1},
        {"maximize", true}}},
  };
  run_cases(cases, maker<optim::SGD>(), test::reference_sgd, kFullPrecision);
  run_cases({cases[1], cases[6]}, maker<optim::SGD>(), test::reference_sgd, kHalfTypes);
}

TEST(OptimSGD, Groups) {
  run_groups(maker<optim::SGD>(), test::reference_sgd, {{"momentum", 0.9}});
}

ReferenceStep adam_reference(bool decoupled) {
  return [decoupled](test::ReferenceParam& p, const std::vector<double>& g, const OptionMap& o) {
    test::reference_adam(p, g, o, decoupled);
  };
}

const std::vector<Case> kAdamCases = {
    {"defaults", {{"lr", 0.05}}},
    {"amsgrad", {{"lr", 0.05}, {"amsgrad", true}}},
    {"weight_decay", {{"lr", 0.05}, {"weight_decay", 0.3}}},
    {"maximize", {{"lr", 0.05}, {"maximize", true}}},
    {"betas_eps", {{"lr", 0.05}, {"betas", std::vector<double>{0.5, 0.9}}, {"eps", 1e-3}}},
    {"all", {{"lr", 0.05}, {"amsgrad", true}, {"maximize", true}, {"weight_decay", 0.1}}},
};

TEST(OptimAdam, MatchesReference) {
  run_cases(kAdamCases, maker<optim::Adam>(), adam_reference(false), kFullPrecision);
  run_cases({kAdamCases[0], kAdamCases[5]}, maker<optim::Adam>(), adam_reference(false),
            kHalfTypes);
}

TEST(OptimAdam, Groups) {
  run_groups(maker<optim::Adam>(), adam_reference(false), {{"amsgrad", true}});
}

TEST(OptimAdamW, MatchesReference) {
  run_cases(kAdamCases, maker<optim::AdamW>(), adam_reference(true), kFullPrecision);
  run_cases({kAdamCases[2]}, maker<optim::AdamW>(), adam_reference(true), kHalfTypes);
}

TEST(OptimAdamW, DefaultWeightDecayIsDecoupled) {
  // AdamW's default weight_decay is 1e-2 (Adam's 0); a group without it takes the default.
  run_cases({{"defaults", {{"lr", 0.05}}}}, maker<optim::AdamW>(), adam_reference(true),
            {DType::Float64});
  optim::AdamW opt({test::random_tensor({2}, DType::Float32)});
  EXPECT_EQ(opt.param_groups()[0].number("weight_decay"), 1e-2);
  EXPECT_EQ(opt.name(), "AdamW");
}

TEST(OptimAdamW, Groups) { run_groups(maker<optim::AdamW>(), adam_reference(true)); }

TEST(OptimRMSprop, MatchesReference) {
  const std::vector<Case> cases = {
      {"defaults", {}},
      {"momentum", {{"momentum", 0.9}}},
      {"centered", {{"centered", true}}},
      {"centered_momentum", {{"centered", true}, {"momentum", 0.5}}},
      // alpha <= 0.5 takes torch.lerp's other branch for the centered average.
      {"small_alpha", {{"centered", true}, {"alpha", 0.3}, {"eps", 1e-4}}},
      {"weight_decay_maximize", {{"weight_decay", 0.2}, {"maximize", true}}},
  };
  run_cases(cases, maker<optim::RMSprop>(), test::reference_rmsprop, kFullPrecision);
  run_cases({cases[3]}, maker<optim::RMSprop>(), test::reference_rmsprop, kHalfTypes);
}

TEST(OptimRMSprop, Groups) {
  run_groups(maker<optim::RMSprop>(), test::reference_rmsprop,
             {{"centered", true}, {"momentum", 0.9}});
}

TEST(OptimAdagrad, MatchesReference) {
  const std::vector<Case> cases = {
      {"defaults", {{"lr", 0.1}}},
      {"lr_decay", {{"lr", 0.1}, {"lr_decay", 0.2}}},
      {"weight_decay", {{"lr", 0.1}, {"weight_decay", 0.2}}},
      {"initial_accumulator", {{"lr", 0.1}, {"initial_accumulator_value", 0.5}}},
      {"maximize_eps", {{"lr", 0.1}, {"maximize", true}, {"eps", 1e-3}}},
  };
  run_cases(cases, maker<optim::Adagrad>(), test::reference_adagrad, kFullPrecision);
  run_cases({cases[1]}, maker<optim::Adagrad>(), test::reference_adagrad, kHalfTypes);
}

TEST(OptimAdagrad, Groups) {
  run_groups(maker<optim::Adagrad>(), test::reference_adagrad, {{"lr_decay", 0.1}});
}

}  // namespace
}  // namespace rcuda
