// nll_loss and cross_entropy against double-precision loops: class indices with weights,
// ignore_index, label smoothing and every reduction, class-probability targets; gradients and
// errors.
#include <cmath>

#include "nn/nn_test_util.h"

namespace rcuda::test {
namespace {

const std::vector<std::string> kReductions = {"none", "mean", "sum"};

// Input [N, C, d...] (or [C]) seen as N x C x S, S = prod(d...).
struct Layout {
  int64_t n, c, s;
};
Layout layout_of(const Shape& shape) {
  if (shape.size() == 1) return {1, shape[0], 1};
  int64_t s = 1;
  for (size_t d = 2; d < shape.size(); ++d) s *= shape[d];
  return {shape[0], shape[1], s};
}
size_t at(const Layout& l, int64_t n, int64_t c, int64_t s) {
  return static_cast<size_t>((n * l.c + c) * l.s + s);
}

std::vector<double> log_softmax_reference(const std::vector<double>& x, const Layout& l) {
  std::vector<double> out(x.size());
  for (int64_t n = 0; n < l.n; ++n)
    for (int64_t s = 0; s < l.s; ++s) {
      double top = -INFINITY, total = 0;
      for (int64_t c = 0; c < l.c; ++c) top = std::fmax(top, x[at(l, n, c, s)]);
      for (int64_t c = 0; c < l.c; ++c) total += std::exp(x[at(l, n, c, s)] - top);
      for (int64_t c = 0; c < l.c; ++c)
        out[at(l, n, c, s)] = x[at(l, n, c, s)] - top - std::log(total);
    }
  return out;
}

struct Options {
  std::vector<double> weight;  // empty: all 1
  int64_t ignore_index = -100;
  std::string reduction = "mean";
  double label_smoothing = 0;
};

double weight_of(const Options& o, int64_t c) { return o.weight.empty() ? 1.0 : o.weight[c]; }

std::vector<double> reduce_by_weights(const std::vector<double>& losses,
                                      const std::vector<double>& counted, const std::string& r) {
  if (r != "mean") return reduce_reference(losses, r);
  double total = 0, weights = 0;
  for (size_t i = 0; i < losses.size(); ++i) total += losses[i], weights += counted[i];
  return {total / weights};
}

// cross_entropy of class indices on log-probabilities logp (nll_loss when label_smoothing 0).
std::vector<double> class_reference(const std::vector<double>& logp, const Layout& l,
                                    const std::vector<double>& target, const Options& o) {
  std::vector<double> nll, smooth, counted;
  for (int64_t n = 0; n < l.n; ++n)
    for (int64_t s = 0; s < l.s; ++s) {
      const int64_t t = static_cast<int64_t>(target[static_cast<size_t>(n * l.s + s)]);
      const bool ignored = t == o.ignore_index;
      const double w = ignored ? 0.0 : weight_of(o, t);
      double sm = 0;
      for (int64_t c = 0; c < l.c; ++c) sm -= weight_of(o, c) * logp[at(l, n, c, s)];
      nll.push_back(ignored ? 0.0 : -w * logp[at(l, n, t, s)]);
      smooth.push_back(ignored ? 0.0 : sm);
      counted.push_back(w);
    }
  const std::vector<double> a = reduce_by_weights(nll, counted, o.reduction);
  const std::vector<double> b = reduce_by_weights(smooth, counted, o.reduction);
  std::vector<double> out;
  for (size_t i = 0; i < a.size(); ++i)
    out.push_back((1 - o.label_smoothing) * a[i] + o.label_smoothing / l.c * b[i]);
  return out;
}

std::vector<double> probability_reference(const std::vector<double>& logp, const Layout& l,
                                          const std::vector<double>& target, const Options& o) {
  std::vector<double> losses;
  for (int64_t n = 0; n < l.n; ++n)
    for (int64_t s = 0; s < l.s; ++s) {
      double loss = 0;
      for (int64_t c = 0; c < l.c; ++c) {
        const double t = target[at(l, n, c, s)] * (1 - o.label_smoothing) + o.label_smoothing / l.c;
        loss -= weight_of(o, c) * t * logp[at(l, n, c, s)];
      }
      losses.push_back(loss);
    }
  return reduce_reference(losses, o.reduction);
}

Tensor random_targets(const Shape& shape, int64_t classes) {
  return random_tensor(shape, DType::Int64, 0, static_cast<double>(classes));
}

Shape target_shape(const Shape& input) {
  if (input.size() == 1) return {};
  Shape t = input;
  t.erase(t.begin() + 1);
  return t;
}

// Some targets replaced by ignore_index (when that is not a class, it is simply written).
Tensor with_ignored(const Tensor& target, int64_t ignore_index) {
  std::vector<double> v = to_doubles(target);
  for (size_t i = 0; i < v.size(); i += 3) v[i] = static_cast<double>(ignore_index);
  return tensor_of(v, target.shape(), DType::Int64);
}

struct Case {
  Shape shape;
  bool weighted;
  int64_t ignore_index;  // -100: none of the targets; 1: a class that is ignored
};
const std::vector<Case> kCases = {{{5, 4}, false, -100},    {{5, 4}, true, -100},
                                  {{6, 4}, true, 1},        {{4}, true, -100},
                                  {{2, 3, 2, 2}, false, 2}, {{2, 3, 4}, true, -100}};

// The case's target: random classes, every third set to ignore_index; a 0-dim target (input
// [C]) stays a class.
Tensor case_target(const Case& c) {
  if (c.shape.size() == 1) return random_targets({}, c.shape[0]);
  return with_ignored(random_targets(target_shape(c.shape), c.shape[1]), c.ignore_index);
}

TEST(NnNllLoss, WeightsIgnoreIndexAndEveryReduction) {
  for (DType dtype : floating_dtypes()) {
    for (const Case& c : kCases) {
      const Layout l = layout_of(c.shape);
      const Tensor input = random_tensor(c.shape, dtype, -4, 0);
      const Tensor target = case_target(c);
      const Tensor weight = c.weighted ? random_tensor({l.c}, dtype, 0.5, 2) : Tensor();
      for (const std::string& reduction : kReductions) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(c.shape) + " " + reduction);
        Options o{c.weighted ? to_doubles(weight) : std::vector<double>{}, c.ignore_index,
                  reduction};
        const Tensor out = nn::nll_loss(input, target, {weight, c.ignore_index, reduction});
        EXPECT_EQ(out.shape(), reduction == "none" ? target.shape() : Shape{});
        EXPECT_TRUE(all_close(to_doubles(out),
                              class_reference(to_doubles(input), l, to_doubles(target), o),
                              loss_tolerance(dtype)));
      }
    }
  }
  // All targets ignored: "mean" is 0 / 0.
  const Tensor input = random_tensor({2, 3}, DType::Float32);
  EXPECT_TRUE(
      std::isnan(to_doubles(nn::nll_loss(input, tensor_of({-100, -100}, {2}, DType::Int64)))[0]));
  EXPECT_TRUE(std::isnan(to_doubles(
      nn::nll_loss(Tensor::empty({0, 3}, DType::Float32), Tensor::empty({0}, DType::Int64)))[0]));
  // A non-contiguous input.
  const Tensor strided = transposed_copy(random_tensor({5, 3}, DType::Float64));
  const Tensor target = random_targets({5}, 3);
  EXPECT_TRUE(all_close(to_doubles(nn::nll_loss(strided, target)),
                        class_reference(to_doubles(strided), {5, 3, 1}, to_doubles(target), {}),
                        1e-12));
}

TEST(NnCrossEntropy, ClassIndicesWithLabelSmoothing) {
  for (DType dtype : floating_dtypes()) {
    for (const Case& c : kCases) {
      const Layout l = layout_of(c.shape);
      const Tensor input = random_tensor(c.shape, dtype, -4, 4);
      const Tensor target = case_target(c);
      const Tensor weight = c.weighted ? random_tensor({l.c}, dtype, 0.5, 2) : Tensor();
      const std::vector<double> logp = log_softmax_reference(to_doubles(input), l);
      for (double smoothing : {0.0, 0.1, 1.0}) {
        for (const std::string& reduction : kReductions) {
          SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(c.shape) + " " + reduction +
                       " smoothing " + std::to_string(smoothing));
          Options o{c.weighted ? to_doubles(weight) : std::vector<double>{}, c.ignore_index,
                    reduction, smoothing};
          const Tensor out =
              nn::cross_entropy(input, target, {weight, c.ignore_index, reduction, smoothing});
          EXPECT_EQ(out.dtype(), dtype);
          EXPECT_TRUE(all_close(to_doubles(out), class_reference(logp, l, to_doubles(target), o),
                                loss_tolerance(dtype)));
        }
      }
    }
  }
}

TEST(NnCrossEntropy, ClassProbabilities) {
  for (DType dtype : floating_dtypes()) {
    for (const Shape& shape : {Shape{5, 4}, Shape{4}, Shape{2, 3, 2, 2}}) {
      const Layout l = layout_of(shape);
      const Tensor input = random_tensor(shape, dtype, -4, 4);
      // Rows of probabilities along the class dim.
      std::vector<double> p = to_doubles(random_tensor(shape, DType::Float64, 0, 1));
      for (int64_t n = 0; n < l.n; ++n)
        for (int64_t s = 0; s < l.s; ++s) {
          double total = 0;
          for (int64_t c = 0; c < l.c; ++c) total += p[at(l, n, c, s)];
          for (int64_t c = 0; c < l.c; ++c) p[at(l, n, c, s)] /= total;
        }
      const Tensor target = tensor_of(p, shape, dtype);
      const std::vector<double> logp = log_softmax_reference(to_doubles(input), l);
      for (bool weighted : {false, true}) {
        const Tensor weight = weighted ? random_tensor({l.c}, dtype, 0.5, 2) : Tensor();
        for (double smoothing : {0.0, 0.2}) {
          for (const std::string& reduction : kReductions) {
            SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_str(shape) + " " + reduction);
            Options o{weighted ? to_doubles(weight) : std::vector<double>{}, -100, reduction,
                      smoothing};
            const Tensor out =
                nn::cross_entropy(input, target, {weight, -100, reduction, smoothing});
            EXPECT_EQ(out.shape(), reduction == "none" ? target_shape(shape) : Shape{});
            EXPECT_TRUE(all_close(to_doubles(out), probability_reference(logp, l, p, o),
                                  loss_tolerance(dtype)));
          }
        }
      }
    }
  }
  EXPECT_TRUE(std::isnan(to_doubles(nn::cross_entropy(Tensor::empty({0, 3}, DType::Float32),
                                                      Tensor::empty({0, 3}, DType::Float32)))[0]));
}

TEST(NnCrossEntropy, ErrorsNameTheFunctionArgumentAndValues) {
  const Tensor input = random_tensor({5, 4}, DType::Float32);
  const Tensor target = random_targets({5}, 4);
  auto with_target = [](std::vector<double> v) { return tensor_of(v, {5}, DType::Int64); };
  for (const char* op : {"nll_loss", "cross_entropy"}) {
    SCOPED_TRACE(op);
    auto call = [&](const Tensor& x, const Tensor& t, const Tensor& w = Tensor(),
                    int64_t ignore = -100, const std::string& reduction = "mean") {
      if (std::string(op) == "nll_loss") return nn::nll_loss(x, t, {w, ignore, reduction});
      return nn::cross_entropy(x, t, {w, ignore, reduction});
    };
    EXPECT_THROW(call(input, with_target({0, 1, 4, 2, 3})), IndexError);
    EXPECT_TRUE(mentions(error_message([&] {
                           call(input, with_target({0, 1, 4, 2, 3}));
                         }),
                         {op, "target", "4", "4 classes"}));
    EXPECT_TRUE(mentions(error_message([&] {
                           call(input, with_target({0, -3, 1, 2, 3}));
                         }),
                         {op, "target", "-3"}));
    EXPECT_NO_THROW(call(input, with_target({0, -100, 1, 2, 3})));
    EXPECT_NO_THROW(call(input, with_target({0, 7, 1, 2, 3}), Tensor(), 7));
    EXPECT_THROW(call(input, tensor_of({0, 1, 2, 3, 0}, {5}, DType::Int32)), DTypeError);
    EXPECT_TRUE(mentions(error_message([&] {
                           call(input, tensor_of({0, 1, 2, 3, 0}, {5}, DType::Int32));
                         }),
                         {op, "int64", "int32"}));
    EXPECT_THROW(call(input, random_targets({4}, 4)), ShapeError);
    EXPECT_TRUE(mentions(error_message([&] { call(input, random_targets({4}, 4)); }),
                         {op, "[4]", "[5, 4]", "[5]"}));
    EXPECT_THROW(call(input, target, random_tensor({3}, DType::Float32)), ShapeError);
    EXPECT_TRUE(
        mentions(error_message([&] { call(input, target, random_tensor({3}, DType::Float32)); }),
                 {op, "weight", "[4]", "[3]"}));
    EXPECT_THROW(call(random_tensor({}, DType::Float32), tensor_of({0}, {}, DType::Int64)),
                 ShapeError);
    EXPECT_THROW(call(tensor_of({1, 2}, {1, 2}, DType::Int64), tensor_of({0}, {1}, DType::Int64)),
                 DTypeError);
    EXPECT_THROW(call(input, target, Tensor(), -100, "avg"), ValueError);
  }
  EXPECT_THROW(nn::cross_entropy(input, target, {Tensor(), -100, "mean", 1.5}), ValueError);
  EXPECT_TRUE(mentions(error_message([&] {
                         nn::cross_entropy(input, target, {Tensor(), -100, "mean", 1.5});
                       }),
                       {"cross_entropy", "label_smoothing", "1.5"}));
  EXPECT_THROW(nn::cross_entropy(input, random_tensor({5}, DType::Float32)), ShapeError);
  EXPECT_TRUE(
      mentions(error_message([&] { nn::cross_entropy(input, random_tensor({5}, DType::Float32)); }),
               {"cross_entropy", "probabilities", "[5, 4]", "[5]"}));
  EXPECT_THROW(nn::cross_entropy(input, random_tensor({5, 4}, DType::Float32, 0, 1), {Tensor(), 0}),
               ValueError);
  EXPECT_TRUE(mentions(
      error_message([&] {
        nn::cross_entropy(input, random_tensor({5, 4}, DType::Float32, 0, 1), {Tensor(), 0});
      }),
      {"cross_entropy", "ignore_index", "0"}));
}

// ---- gradients ---------------------------------------------------------------------------

TEST(NnNllLossGrad, Input) {
  for (const Case& c : kCases) {
    const Tensor target = case_target(c);
    const int64_t classes = c.shape.size() == 1 ? c.shape[0] : c.shape[1];
    const Tensor weight = c.weighted ? random_tensor({classes}, DType::Float64, 0.5, 2) : Tensor();
    for (const std::string& reduction : kReductions) {
      SCOPED_TRACE(shape_str(c.shape) + " " + reduction);
      EXPECT_TRUE(gradcheck(
          [&](const TensorList& t) {
            return nn::nll_loss(t[0], target, {weight, c.ignore_index, reduction});
          },
          {leaf(c.shape, -4, 0)}));
    }
  }
}

TEST(NnCrossEntropyGrad, ClassIndices) {
  for (const Case& c : kCases) {
    const Tensor target = case_target(c);
    const int64_t classes = c.shape.size() == 1 ? c.shape[0] : c.shape[1];
    const Tensor weight = c.weighted ? random_tensor({classes}, DType::Float64, 0.5, 2) : Tensor();
    for (double smoothing : {0.0, 0.3}) {
      for (const std::string& reduction : kReductions) {
        SCOPED_TRACE(shape_str(c.shape) + " " + reduction);
        EXPECT_TRUE(gradcheck(
            [&](const TensorList& t) {
              return nn::cross_entropy(t[0], target,
                                       {weight, c.ignore_index, reduction, smoothing});
            },
            {leaf(c.shape)}));
      }
    }
  }
  const Tensor target = random_targets({5}, 3);
  EXPECT_TRUE(gradcheck([&](const TensorList& t) { return nn::cross_entropy(t[0], target); },
                        {leaf_transposed({5, 3})}));
}

TEST(NnCrossEntropyGrad, ClassProbabilitiesInputAndTarget) {
  for (const Shape& shape : {Shape{5, 4}, Shape{4}, Shape{2, 3, 2}}) {
    const int64_t classes = shape.size() == 1 ? shape[0] : shape[1];
    const Tensor weight = random_tensor({classes}, DType::Float64, 0.5, 2);
    for (const std::string& reduction : kReductions) {
      SCOPED_TRACE(shape_str(shape) + " " + reduction);
      EXPECT_TRUE(gradcheck(
          [&](const TensorList& t) {
            return nn::cross_entropy(t[0], t[1], {weight, -100, reduction, 0.1});
          },
          {leaf(shape), leaf(shape, 0, 1)}));
    }
  }
}

}  // namespace
}  // namespace rcuda::test
