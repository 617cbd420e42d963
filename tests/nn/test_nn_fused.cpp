// The nn functions that record one node over a fused primitive (activations, cross_entropy,
// layer_norm, dropout, embedding) against their composed forms (nn_composed.h): values and
// gradients for every option, on fresh random inputs, strided ones and empty ones; and the
// recorded graph: one node whose edges lead straight to the leaves.
#include <cmath>

#include "nn/nn_composed.h"
#include "nn/nn_test_util.h"
#include "rcuda/ops/nn.h"
#include "support/devices.h"

namespace rcuda::test {
namespace {

using F = std::function<Tensor(const TensorList&)>;
const std::vector<std::string> kReductions = {"none", "mean", "sum"};

// Aliases of inputs (same values and strides, no history), those at `wrt` requiring grad.
TensorList fresh_leaves(const TensorList& inputs, const std::vector<size_t>& wrt) {
  TensorList out;
  for (const Tensor& t : inputs) out.push_back(t.defined() ? autograd::detach(t) : t);
  for (size_t i : wrt) out[i].requires_grad_();
  return out;
}

// fused and reference on the same inputs: values within tol, then the gradients of
// sum(out * w), w fixed and random, with respect to the inputs at `wrt`.
void expect_agree(const F& fused, const F& reference, const TensorList& inputs,
                  const std::vector<size_t>& wrt, double tol) {
  const TensorList a = fresh_leaves(inputs, wrt), b = fresh_leaves(inputs, wrt);
  const Tensor out_a = fused(a), out_b = reference(b);
  ASSERT_EQ(out_a.shape(), out_b.shape());
  EXPECT_EQ(out_a.dtype(), out_b.dtype());
  EXPECT_TRUE(all_close(to_doubles(out_a), to_doubles(out_b), tol)) << "values";
  if (wrt.empty()) return;
  const Tensor w = random_tensor(out_a.shape(), out_a.dtype(), 0.5, 1.5);
  TensorList wrt_a, wrt_b;
  for (size_t i : wrt) wrt_a.push_back(a[i]), wrt_b.push_back(b[i]);
  const TensorList ga = autograd::grad({sum(mul(out_a, w))}, wrt_a);
  const TensorList gb = autograd::grad({sum(mul(out_b, w))}, wrt_b);
  for (size_t i = 0; i < ga.size(); ++i) {
    EXPECT_EQ(ga[i].dtype(), inputs[wrt[i]].dtype());
    EXPECT_TRUE(all_close(to_doubles(ga[i]), to_doubles(gb[i]), tol))
        << "gradient of input " << wrt[i];
  }
}

// out was recorded by one node named `name` whose edges (where it has any) reach leaves.
::testing::AssertionResult one_node(const Tensor& out, const std::string& name) {
  const std::shared_ptr<autograd::Node>& node = out.grad_fn();
  if (!node) return ::testing::AssertionFailure() << "no grad_fn";
  if (node->name() != name)
    return ::testing::AssertionFailure() << "grad_fn is " << node->name() << ", not " << name;
  for (const autograd::Edge& edge : node->next_edges())
    if (edge.valid() && std::string(edge.node->name()) != "AccumulateGrad")
      return ::testing::AssertionFailure() << name << " leads to " << edge.node->name();
  return ::testing::AssertionSuccess();
}

// Float64 a little looser than one op (the composed forms round several times), float32 as
// the nn tests; float16/bfloat16 twice the nn tests' bound, as the composed forms round to the
// half type after each op where the fused ones compute in float32.
double fused_tolerance(DType dtype) {
  return dtype == DType::Float64 ? 1e-11 : dtype == DType::Float32 ? 2e-5 : 8 * tolerance(dtype);
}
// Gradients are compared in float32 and float64; the half types' values only.
std::vector<size_t> grads_for(DType dtype, const std::vector<size_t>& wrt) {
  return is_reduced_float(dtype) ? std::vector<size_t>{} : wrt;
}

// ---- activations -------------------------------------------------------------------------

struct Activation {
  std::string name, node;
  std::function<Tensor(const Tensor&)> fused, composed;
};

std::vector<Activation> activations() {
  using T = const Tensor&;
  return {
      {"leaky_relu", "LeakyReluBackward", [](T x) { return nn::leaky_relu(x); },
       [](T x) { return composed::leaky_relu(x, 0.01); }},
      {"leaky_relu 0.2", "LeakyReluBackward", [](T x) { return nn::leaky_relu(x, 0.2); },
       [](T x) { return composed::leaky_relu(x, 0.2); }},
      {"elu", "EluBackward", [](T x) { return nn::elu(x); },
       [](T x) { return composed::elu(x, 1); }},
      {"elu 0.5", "EluBackward", [](T x) { return nn::elu(x, 0.5); },
       [](T x) { return composed::elu(x, 0.5); }},
      {"softplus", "SoftplusBackward", [](T x) { return nn::softplus(x); },
       [](T x) { return composed::softplus(x, 1, 20); }},
      {"softplus 2 1.5", "SoftplusBackward", [](T x) { return nn::softplus(x, 2, 1.5); },
       [](T x) { return composed::softplus(x, 2, 1.5); }},
      {"softplus -1", "SoftplusBackward", [](T x) { return nn::softplus(x, -1, 20); },
       [](T x) { return composed::softplus(x, -1, 20); }},
      {"hardtanh", "HardtanhBackward", [](T x) { return nn::hardtanh(x); },
       [](T x) { return composed::hardtanh(x, -1, 1); }},
      {"hardtanh -0.5 2", "HardtanhBackward", [](T x) { return nn::hardtanh(x, -0.5, 2); },
       [](T x) { return composed::hardtanh(x, -0.5, 2); }},
  };
}

TEST(NnFusedActivation, MatchesTheComposedFormAtRandomPointsKinksAndExtremes) {
  // 0, the hardtanh bounds, softplus's thresholds (0.75 * 2 = 1.5, 20), values far out.
  const std::vector<double> special = {0, -1, 1, -0.5, 2, 0.75, 20, -20, 1000, -1000, 1e-30};
  for (const Activation& a : activations()) {
    for (DType dtype : floating_dtypes()) {
      SCOPED_TRACE(a.name + " " + dtype_name(dtype));
      const F fused = [&](const TensorList& t) { return a.fused(t[0]); };
      const F composed = [&](const TensorList& t) { return a.composed(t[0]); };
      const double tol = fused_tolerance(dtype);
      const std::vector<size_t> wrt = grads_for(dtype, {0});
      expect_agree(fused, composed, {random_tensor({5, 7}, dtype, -6, 6)}, wrt, tol);
      expect_agree(fused, composed, {transposed_copy(random_tensor({4, 6}, dtype, -6, 6))}, wrt,
                   tol);
      // The half types overflow in the composed forms' exp (softplus of 20 is inf there).
      if (!is_reduced_float(dtype))
        expect_agree(fused, composed, {tensor_of(special, {11}, dtype)}, wrt, tol);
      expect_agree(fused, composed, {random_tensor({}, dtype)}, wrt, tol);
      expect_agree(fused, composed, {Tensor::empty({0, 3}, dtype)}, wrt, tol);
    }
    const Tensor x = leaf({3, 4});
    EXPECT_TRUE(one_node(a.fused(x), a.node)) << a.name;
  }
}

// ---- cross_entropy -------------------------------------------------------------------------

// Random classes of input's shape without its class dim; every third is ignore_index, and the
// others are classes other than it (a batch with nothing counted has a NaN "mean" whose
// gradient the composed form makes NaN where the fused one, as torch, gives 0).
Tensor class_targets(const Shape& input, int64_t ignore_index) {
  Shape shape = input;
  shape.erase(shape.begin() + (input.size() == 1 ? 0 : 1));
  const int64_t classes = input.size() == 1 ? input[0] : input[1];
  const bool ignores_a_class = ignore_index >= 0 && ignore_index < classes;
  std::vector<double> v =
      to_doubles(random_tensor(shape, DType::Int64, 0, classes - (ignores_a_class ? 1 : 0)));
  for (size_t i = 0; i < v.size(); ++i) {
    if (ignores_a_class && v[i] >= static_cast<double>(ignore_index)) v[i] += 1;
    if (!shape.empty() && i % 3 == 0) v[i] = static_cast<double>(ignore_index);
  }
  return tensor_of(v, shape, DType::Int64);
}

// Rows of probabilities along the class dim (dim 1, or 0 for [C]).
Tensor probability_targets(const Shape& shape, DType dtype) {
  return ops::to(softmax(random_tensor(shape, DType::Float64, -2, 2), shape.size() == 1 ? 0 : 1),
                 dtype);
}

TEST(NnFusedCrossEntropy, ClassIndicesMatchTheComposedFormForEveryOption) {
  struct Case {
    Shape shape;
    int64_t ignore_index;  // -100: no target; 1: a class, ignored
  };
  const std::vector<Case> cases = {{{5, 4}, -100}, {{6, 4}, 1},       {{4}, -100},
                                   {{4}, 2},       {{2, 3, 2, 2}, 2}, {{2, 3, 4}, -100}};
  for (DType dtype : floating_dtypes()) {
    for (const Case& c : cases) {
      const int64_t classes = c.shape.size() == 1 ? c.shape[0] : c.shape[1];
      const Tensor input = random_tensor(c.shape, dtype, -4, 4);
      const Tensor target = class_targets(c.shape, c.ignore_index);
      for (bool weighted : {false, true}) {
        const Tensor weight = weighted ? random_tensor({classes}, dtype, 0.5, 2) : Tensor();
        for (double smoothing : {0.0, 0.1, 1.0}) {
          for (const std::string& r : kReductions) {
            SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(c.shape) + " " + r +
                         (weighted ? " weighted" : "") + " smoothing " + std::to_string(smoothing));
            const nn::CrossEntropyOptions o{weight, c.ignore_index, r, smoothing};
            expect_agree(
                [&](const TensorList& t) { return nn::cross_entropy(t[0], t[1], o); },
                [&](const TensorList& t) { return composed::cross_entropy(t[0], t[1], o); },
                {input, target}, grads_for(dtype, {0}), fused_tolerance(dtype));
          }
        }
      }
    }
  }
  // A strided input, and an empty batch (its "mean" is NaN, its gradient empty).
  const Tensor strided = transposed_copy(random_tensor({5, 3}, DType::Float64));
  const auto fused = [](const TensorList& t) { return nn::cross_entropy(t[0], t[1]); };
  const auto reference = [](const TensorList& t) {
    return composed::cross_entropy(t[0], t[1], {});
  };
  expect_agree(fused, reference, {strided, class_targets({5, 3}, -100)}, {0}, 1e-11);
  expect_agree(fused, reference,
               {Tensor::empty({0, 3}, DType::Float64), Tensor::empty({0}, DType::Int64)}, {0}, 0);
  const Tensor x = leaf({5, 3});
  EXPECT_TRUE(one_node(nn::cross_entropy(x, class_targets({5, 3}, -100)), "CrossEntropyBackward"));
}

TEST(NnFusedCrossEntropy, ProbabilitiesMatchTheComposedFormForInputAndTarget) {
  for (DType dtype : floating_dtypes()) {
    for (const Shape& shape : {Shape{5, 4}, Shape{4}, Shape{2, 3, 2, 2}}) {
      const int64_t classes = shape.size() == 1 ? shape[0] : shape[1];
      const Tensor input = random_tensor(shape, dtype, -4, 4);
      const Tensor target = probability_targets(shape, dtype);
      for (bool weighted : {false, true}) {
        const Tensor weight = weighted ? random_tensor({classes}, dtype, 0.5, 2) : Tensor();
        for (double smoothing : {0.0, 0.2, 1.0}) {
          for (const std::string& r : kReductions) {
            SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(shape) + " " + r +
                         (weighted ? " weighted" : "") + " smoothing " + std::to_string(smoothing));
            const nn::CrossEntropyOptions o{weight, -100, r, smoothing};
            const F fused = [&](const TensorList& t) { return nn::cross_entropy(t[0], t[1], o); };
            const F reference = [&](const TensorList& t) {
              return composed::cross_entropy(t[0], t[1], o);
            };
            // Gradients for the input, the target, and both.
            for (const std::vector<size_t>& wrt : {std::vector<size_t>{0}, {1}, {0, 1}})
              expect_agree(fused, reference, {input, target}, grads_for(dtype, wrt),
                           fused_tolerance(dtype));
          }
        }
      }
    }
  }
  // float64 probabilities of a float32 input: the loss is float32 (they are converted first),
  // the target's gradient float64.
  const Tensor input = random_tensor({5, 4}, DType::Float32, -4, 4);
  const Tensor target = probability_targets({5, 4}, DType::Float64);
  for (const std::string& r : kReductions) {
    SCOPED_TRACE("float64 target " + r);
    const nn::CrossEntropyOptions o{Tensor(), -100, r, 0.1};
    expect_agree([&](const TensorList& t) { return nn::cross_entropy(t[0], t[1], o); },
                 [&](const TensorList& t) {
                   return composed::cross_entropy(t[0], to(t[1], DType::Float32), o);
                 },
                 {input, target}, {0, 1}, 2e-5);
  }
  // Strided input and target; an empty batch.
  const F fused = [](const TensorList& t) { return nn::cross_entropy(t[0], t[1]); };
  const F reference = [](const TensorList& t) { return composed::cross_entropy(t[0], t[1], {}); };
  expect_agree(fused, reference,
               {transposed_copy(random_tensor({6, 3}, DType::Float64)),
                transposed_copy(probability_targets({6, 3}, DType::Float64))},
               {0, 1}, 1e-11);
  expect_agree(fused, reference,
               {Tensor::empty({0, 3}, DType::Float64), Tensor::empty({0, 3}, DType::Float64)},
               {0, 1}, 0);
  const Tensor x = leaf({5, 4}), t = leaf({5, 4}, 0, 1);
  const Tensor loss = nn::cross_entropy(x, t);
  EXPECT_TRUE(one_node(loss, "CrossEntropyBackward"));
  EXPECT_EQ(loss.grad_fn()->next_edges().size(), 2u);
}

// ---- layer_norm ----------------------------------------------------------------------------

TEST(NnFusedLayerNorm, MatchesTheComposedFormForEveryAffineChoiceAndGradient) {
  struct Case {
    Shape shape, normalized;
    double eps;
  };
  const std::vector<Case> cases = {
      {{4, 6}, {6}, 1e-5}, {{2, 3, 4}, {3, 4}, 1e-5}, {{3, 5}, {5}, 0.1}, {{7}, {7}, 1e-5}};
  for (DType dtype : floating_dtypes()) {
    for (const Case& c : cases) {
      const Tensor x = random_tensor(c.shape, dtype, -3, 3);
      for (bool with_weight : {false, true}) {
        for (bool with_bias : {false, true}) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(c.shape) +
                       (with_weight ? " weight" : "") + (with_bias ? " bias" : ""));
          const Tensor w = with_weight ? random_tensor(c.normalized, dtype) : Tensor();
          const Tensor b = with_bias ? random_tensor(c.normalized, dtype) : Tensor();
          const F fused = [&](const TensorList& t) {
            return nn::layer_norm(t[0], c.normalized, t[1], t[2], c.eps);
          };
          const F reference = [&](const TensorList& t) {
            return composed::layer_norm(t[0], c.normalized, t[1], t[2], c.eps);
          };
          // Every subset of the inputs there are that requires grad.
          std::vector<size_t> present = {0};
          if (with_weight) present.push_back(1);
          if (with_bias) present.push_back(2);
          for (unsigned subset = 1; subset < (1u << present.size()); ++subset) {
            std::vector<size_t> wrt;
            for (size_t i = 0; i < present.size(); ++i)
              if (subset & (1u << i)) wrt.push_back(present[i]);
            expect_agree(fused, reference, {x, w, b}, grads_for(dtype, wrt),
                         fused_tolerance(dtype));
          }
        }
      }
    }
  }
  // A strided input; float64 weight and bias of a float32 input (cast to it); an empty batch.
  const F fused = [](const TensorList& t) { return nn::layer_norm(t[0], {4}, t[1], t[2]); };
  const F reference = [](const TensorList& t) {
    return composed::layer_norm(t[0], {4}, t[1], t[2], 1e-5);
  };
  expect_agree(fused, reference,
               {transposed_copy(random_tensor({6, 4}, DType::Float64)),
                random_tensor({4}, DType::Float64), random_tensor({4}, DType::Float64)},
               {0, 1, 2}, 1e-11);
  expect_agree(fused, reference,
               {random_tensor({6, 4}, DType::Float32), random_tensor({4}, DType::Float64),
                random_tensor({4}, DType::Float64)},
               {0, 1, 2}, 2e-5);
  expect_agree(fused, reference,
               {Tensor::empty({0, 4}, DType::Float64), random_tensor({4}, DType::Float64),
                random_tensor({4}, DType::Float64)},
               {0, 1, 2}, 0);
  const Tensor x = leaf({4, 6}), w = leaf({6}), b = leaf({6});
  const Tensor y = nn::layer_norm(x, {6}, w, b);
  EXPECT_TRUE(one_node(y, "LayerNormBackward"));
  EXPECT_EQ(y.grad_fn()->next_edges().size(), 3u);
}

// ---- dropout -------------------------------------------------------------------------------

// The composed form rounds the scale 1 / (1 - p) to x's dtype before multiplying: one rounding
// more than the fused pass.
double dropout_tolerance(DType dtype) {
  return dtype == DType::Float64 ? 1e-15 : dtype == DType::Float32 ? 1e-6 : 2 * tolerance(dtype);
}

TEST(NnFusedDropout, ScalesByTheMaskOfItsPhiloxDrawForwardAndBackward) {
  for (DType dtype : floating_dtypes()) {
    for (double p : {0.2, 0.5, 0.9}) {
      for (const Tensor& x :
           {random_tensor({40, 50}, dtype), transposed_copy(random_tensor({30, 20}, dtype))}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " p " + std::to_string(p));
        // The same seed draws the same mask for any tensor of x's shape (Note [Dropout mask]).
        manual_seed(11);
        const Tensor mask = ops::dropout(ops::ones(x.shape(), {dtype, x.device()}), p).second;
        expect_agree(
            [&](const TensorList& t) {
              manual_seed(11);
              return nn::dropout(t[0], p);
            },
            [&](const TensorList& t) { return composed::dropout(t[0], mask, p); }, {x},
            grads_for(dtype, {0}), dropout_tolerance(dtype));
      }
    }
  }
  EXPECT_TRUE(one_node(nn::dropout(leaf({10}), 0.5), "DropoutBackward"));
}

// ---- embedding -----------------------------------------------------------------------------

TEST(NnFusedEmbedding, MatchesTheComposedFormWithAndWithoutPadding) {
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16}) {
    for (DType index_dtype : {DType::Int64, DType::Int32}) {
      const Tensor index = tensor_of({1, 2, 9, 0, 2, 2, 9, 4}, {2, 4}, index_dtype);
      for (const Tensor& weight :
           {random_tensor({10, 3}, dtype), transposed_copy(random_tensor({10, 3}, dtype))}) {
        for (std::optional<int64_t> padding :
             {std::optional<int64_t>(), std::optional<int64_t>(2), std::optional<int64_t>(-1)}) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + dtype_name(index_dtype) +
                       " padding " + (padding ? std::to_string(*padding) : "none"));
          const std::optional<int64_t> row =
              padding && *padding < 0 ? std::optional<int64_t>(*padding + 10) : padding;
          // Sums of a few equal-dtype rows, added in another order.
          expect_agree([&](const TensorList& t) { return nn::embedding(t[0], t[1], padding); },
                       [&](const TensorList& t) { return composed::embedding(t[0], t[1], row); },
                       {index, weight}, {1}, dtype == DType::Float64 ? 1e-15 : tolerance(dtype));
        }
      }
    }
  }
  const Tensor w = leaf({5, 3});
  EXPECT_TRUE(
      one_node(nn::embedding(tensor_of({1, 1, 4}, {3}, DType::Int64), w, 1), "EmbeddingBackward"));
  // An empty lookup: no rows, a zero gradient.
  const Tensor empty = nn::embedding(Tensor::empty({0}, DType::Int64), w);
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
  EXPECT_TRUE(
      all_close(to_doubles(autograd::grad({sum(empty)}, {w})[0]), std::vector<double>(15, 0.0), 0));
}

// ---- on the GPU ----------------------------------------------------------------------------

// Nothing on the fused paths reads a value back: an out-of-range class reaches the GPU kernel,
// which writes NaN and reports it; the IndexError comes at the next synchronisation (Note
// [Deferred device errors]; a check before the launch would have synchronised).
TEST(NnFusedOnCuda, AnOutOfRangeClassGivesNaNForwardAndBackward) {
  RCUDA_REQUIRE_CUDA();
  const Tensor logits = on_cuda(random_tensor({3, 5}, DType::Float32)).requires_grad_();
  const Tensor bad = on_cuda(tensor_of({1, 9, 2}, {3}, DType::Int64));
  const Tensor loss = nn::cross_entropy(logits, bad, {Tensor(), -100, "none"});
  EXPECT_THROW(cuda::synchronize(0), IndexError);
  const std::vector<double> losses = values(loss);
  EXPECT_FALSE(std::isnan(losses[0]));
  EXPECT_TRUE(std::isnan(losses[1]));
  const std::vector<double> grad = values(autograd::grad({sum(loss)}, {logits})[0]);
  EXPECT_FALSE(std::isnan(grad[0]));
  EXPECT_TRUE(std::isnan(grad[5]));
  const Tensor mean = nn::cross_entropy(logits, bad);
  EXPECT_THROW(cuda::synchronize(0), IndexError);
  EXPECT_TRUE(std::isnan(values(mean)[0]));
}

}  // namespace
}  // namespace rcuda::test
