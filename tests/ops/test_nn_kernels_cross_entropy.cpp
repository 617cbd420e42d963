// Tests for ops::cross_entropy_forward / cross_entropy_backward on the CPU backend: a double
// reference written as torch composes the loss (log_softmax, nll_loss, the label-smoothing
// term, the weighted mean) for every combination of weight, reduction, ignore_index, label
// smoothing and target kind, on 1-D, 2-D and 4-D inputs of every floating dtype; the backward
// against float64 central differences of that reference, and the other dtypes against float64.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "rcuda/ops/nn.h"
#include "support/reference.h"

namespace rcuda::test {
namespace {

constexpr int64_t kNoIgnore = -100;

double stored(double v, DType dtype) {
  char buf[8];
  write_element(buf, dtype, v);
  return read_element(buf, dtype);
}

struct Config {
  bool weighted;
  std::string reduction;
  bool with_ignored;  // some targets equal ignore_index
  double smoothing;
  bool probabilities;
};

std::vector<Config> every_config() {
  std::vector<Config> configs;
  for (bool probabilities : {false, true})
    for (bool weighted : {false, true})
      for (const char* reduction : {"none", "mean", "sum"})
        for (bool with_ignored : {false, true})
          for (double smoothing : {0.0, 0.2, 1.0}) {
            if (probabilities && with_ignored) continue;  // ignore_index applies to indices
            configs.push_back({weighted, reduction, with_ignored, smoothing, probabilities});
          }
  return configs;
}

std::string describe(const Config& c) {
  return std::string(c.probabilities ? "probabilities" : "indices") +
         (c.weighted ? " weighted" : "") + " " + c.reduction + (c.with_ignored ? " ignored" : "") +
         " smoothing " + std::to_string(c.smoothing);
}

// The problem in [rows, classes] form, read back by hand.
struct Values {
  int64_t rows, classes;
  std::vector<double> z, target, weight;  // target: indices or [rows, classes] probabilities
};

// torch's cross_entropy in double: log_softmax, nll_loss (weighted mean over the weights of the
// non-ignored targets), and for label smoothing the smooth term it adds with the same divisor.
std::vector<double> reference_loss(const Values& v, const Config& c, int64_t ignore_index) {
  const int64_t R = v.rows, C = v.classes;
  auto w = [&](int64_t k) { return v.weight.empty() ? 1.0 : v.weight[k]; };
  std::vector<double> logp(v.z.size());
  for (int64_t r = 0; r < R; ++r) {
    double max = -INFINITY, sum = 0;
    for (int64_t k = 0; k < C; ++k) max = std::max(max, v.z[r * C + k]);
    for (int64_t k = 0; k < C; ++k) sum += std::exp(v.z[r * C + k] - max);
    for (int64_t k = 0; k < C; ++k) logp[r * C + k] = v.z[r * C + k] - max - std::log(sum);
  }
  std::vector<double> per_row(R, 0.0);
  if (c.probabilities) {
    for (int64_t r = 0; r < R; ++r)
      for (int64_t k = 0; k < C; ++k) {
        const double t = v.target[r * C + k] * (1 - c.smoothing) + c.smoothing / C;
        per_row[r] -= logp[r * C + k] * t * w(k);
      }
    if (c.reduction == "none") return per_row;
    double total = 0;
    for (double l : per_row) total += l;
    return {c.reduction == "sum" ? total : total / R};
  }
  std::vector<double> nll(R, 0.0), smooth(R, 0.0);
  double weight_sum = 0;
  for (int64_t r = 0; r < R; ++r) {
    const int64_t t = static_cast<int64_t>(v.target[r]);
    if (t == ignore_index) continue;
    nll[r] = -w(t) * logp[r * C + t];
    for (int64_t k = 0; k < C; ++k) smooth[r] -= logp[r * C + k] * w(k);
    weight_sum += w(t);
  }
  if (c.reduction == "none") {
    for (int64_t r = 0; r < R; ++r)
      per_row[r] = (1 - c.smoothing) * nll[r] + smooth[r] * (c.smoothing / C);
    return per_row;
  }
  double nll_total = 0, smooth_total = 0;
  for (int64_t r = 0; r < R; ++r) {
    nll_total += nll[r];
    smooth_total += smooth[r];
  }
  if (c.reduction == "mean") {
    nll_total /= weight_sum;
    smooth_total /= weight_sum;
  }
  return {(1 - c.smoothing) * nll_total + smooth_total * (c.smoothing / C)};
}

// Input of `shape` (class dim 1, or 0 for 1-D), its target and options for one config.
struct Case {
  Tensor input, target;
  ops::CrossEntropyOptions options;
  Values values;
};

Case make_case(const Shape& shape, DType dtype, const Config& c, int64_t ignore_index) {
  Case k;
  k.input = random_tensor(shape, dtype, -3, 3);
  const int64_t class_dim = shape.size() == 1 ? 0 : 1;
  const int64_t C = shape[class_dim];
  Shape loss_shape;
  for (size_t d = 0; d < shape.size(); ++d)
    if (static_cast<int64_t>(d) != class_dim) loss_shape.push_back(shape[d]);
  const int64_t R = numel(loss_shape);
  k.values.rows = R;
  k.values.classes = C;
  // Logits and probabilities in [rows, classes] order: move the class dim last by hand.
  const std::vector<double> z = to_doubles(k.input);
  const int64_t inner = R == 0 || shape.size() <= 2 ? 1 : R / shape[0];
  auto flat_index = [&](int64_t r, int64_t cls) {  // (n, spatial) row r, class cls -> input
    const int64_t n = r / inner, s = r % inner;
    return (n * C + cls) * inner + s;
  };
  k.values.z.resize(R * C);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t cls = 0; cls < C; ++cls) k.values.z[r * C + cls] = z[flat_index(r, cls)];
  if (c.probabilities) {
    const Tensor raw = random_tensor(shape, dtype, 0, 1);
    const std::vector<double> p = to_doubles(raw);
    std::vector<double> normalised(p.size());
    for (int64_t r = 0; r < R; ++r) {
      double total = 0;
      for (int64_t cls = 0; cls < C; ++cls) total += p[flat_index(r, cls)];
      for (int64_t cls = 0; cls < C; ++cls)
        normalised[flat_index(r, cls)] = stored(p[flat_index(r, cls)] / total, dtype);
    }
    k.target = tensor_of(normalised, shape, dtype);
    k.values.target.resize(R * C);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t cls = 0; cls < C; ++cls)
        k.values.target[r * C + cls] = normalised[flat_index(r, cls)];
  } else {
    std::vector<double> t(R);
    for (int64_t r = 0; r < R; ++r) {
      t[r] =
          std::floor(to_doubles(random_tensor({}, DType::Float64, 0, static_cast<double>(C)))[0]);
      // Exactly the rows r % 3 == 1 are ignored, or none.
      if (t[r] == static_cast<double>(ignore_index))
        t[r] = static_cast<double>((ignore_index + 1) % C);
      if (c.with_ignored && r % 3 == 1) t[r] = static_cast<double>(ignore_index);
    }
    k.target = tensor_of(t, loss_shape, DType::Int64);
    k.values.target = t;
  }
  if (c.weighted) {
    const Tensor w = random_tensor({C}, dtype, 0.2, 2);
    k.options.weight = w;
    k.values.weight = to_doubles(w);
  }
  k.options.reduction = c.reduction;
  k.options.ignore_index = ignore_index;
  k.options.label_smoothing = c.smoothing;
  return k;
}

std::vector<double> rounded(std::vector<double> v, DType dtype) {
  for (double& x : v) x = stored(x, dtype);
  return v;
}

TEST(NnCrossEntropy, ForwardMatchesTorchsCompositionForEveryOption) {
  for (const Config& c : every_config()) {
    for (DType dtype : floating_dtypes()) {
      for (const Shape& shape : {Shape{7}, Shape{9, 5}, Shape{3, 4, 2, 3}}) {
        // ignore_index both as a valid class (1) and as torch's default (-100).
        for (int64_t ignore_index : {int64_t{1}, kNoIgnore}) {
          SCOPED_TRACE(describe(c) + " " + dtype_name(dtype) + " " + shape_str(shape) +
                       " ignore_index " + std::to_string(ignore_index));
          if (shape.size() == 1 && c.with_ignored) continue;  // a single row: all ignored
          const Case k = make_case(shape, dtype, c, ignore_index);
          const ops::CrossEntropyForward f =
              ops::cross_entropy_forward(k.input, k.target, k.options);
          EXPECT_EQ(f.loss.dtype(), dtype);
          const std::vector<double> expected = reference_loss(k.values, c, ignore_index);
          if (c.reduction == "none") {
            Shape loss_shape = shape;
            loss_shape.erase(loss_shape.begin() + (shape.size() == 1 ? 0 : 1));
            EXPECT_EQ(f.loss.shape(), loss_shape);
          } else {
            EXPECT_EQ(f.loss.dim(), 0);
          }
          EXPECT_TRUE(all_close(to_doubles(f.loss), rounded(expected, dtype),
                                std::max(tolerance(dtype), 2e-6)));
        }
      }
    }
  }
}

TEST(NnCrossEntropy, BackwardMatchesCentralDifferences) {
  for (const Config& c : every_config()) {
    for (const Shape& shape : {Shape{6}, Shape{5, 4}, Shape{2, 3, 2, 2}}) {
      SCOPED_TRACE(describe(c) + " " + shape_str(shape));
      if (shape.size() == 1 && c.with_ignored) continue;
      const int64_t ignore_index = 2;
      Case k = make_case(shape, DType::Float64, c, ignore_index);
      const ops::CrossEntropyForward f = ops::cross_entropy_forward(k.input, k.target, k.options);
      const Tensor g = random_tensor(f.loss.shape(), DType::Float64, 0.5, 2);
      const std::vector<double> gv = to_doubles(g);
      const Tensor grad = ops::cross_entropy_backward(g, k.input, k.target, f, k.options);
      ASSERT_EQ(grad.shape(), k.input.shape());
      // sum(g * reference loss) differentiated by central differences in [rows, classes] order.
      const int64_t R = k.values.rows, C = k.values.classes;
      std::vector<double> expected(R * C);
      for (int64_t i = 0; i < R * C; ++i) {
        Values plus = k.values, minus = k.values;
        const double h = 1e-6;
        plus.z[i] += h;
        minus.z[i] -= h;
        const std::vector<double> lp = reference_loss(plus, c, ignore_index),
                                  lm = reference_loss(minus, c, ignore_index);
        double d = 0;
        for (size_t j = 0; j < lp.size(); ++j) d += gv[j] * (lp[j] - lm[j]) / (2 * h);
        expected[i] = d;
      }
      // The gradient in input's layout, read back into [rows, classes] order.
      const std::vector<double> got_input_order = to_doubles(grad);
      std::vector<double> got(R * C);
      const int64_t inner = shape.size() <= 2 ? 1 : R / shape[0];
      for (int64_t r = 0; r < R; ++r)
        for (int64_t cls = 0; cls < C; ++cls)
          got[r * C + cls] = got_input_order[((r / inner) * C + cls) * inner + r % inner];
      EXPECT_TRUE(all_close(got, expected, 1e-7));
    }
  }
}

TEST(NnCrossEntropy, BackwardOfEveryDtypeMatchesFloat64) {
  for (const Config& c : every_config()) {
    for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
      SCOPED_TRACE(describe(c) + " " + dtype_name(dtype));
      const Case k = make_case({11, 7}, dtype, c, 3);
      const ops::CrossEntropyForward f = ops::cross_entropy_forward(k.input, k.target, k.options);
      const Tensor g = random_tensor(f.loss.shape(), dtype, 0.5, 2);
      const Tensor grad = ops::cross_entropy_backward(g, k.input, k.target, f, k.options);
      EXPECT_EQ(grad.dtype(), dtype);
      ops::CrossEntropyOptions options64 = k.options;
      if (options64.weight.defined()) options64.weight = ops::to(options64.weight, DType::Float64);
      const Tensor input64 = ops::to(k.input, DType::Float64);
      const Tensor target64 = c.probabilities ? ops::to(k.target, DType::Float64) : k.target;
      const ops::CrossEntropyForward f64 = ops::cross_entropy_forward(input64, target64, options64);
      const Tensor grad64 = ops::cross_entropy_backward(ops::to(g, DType::Float64), input64,
                                                        target64, f64, options64);
      // float32 statistics (logsumexp, divisor) on the way: a few float32 ulps, then dtype.
      EXPECT_TRUE(all_close(to_doubles(grad), rounded(to_doubles(grad64), dtype),
                            std::max(tolerance(dtype), 1e-6)));
    }
  }
}

TEST(NnCrossEntropy, NonContiguousInputsAndLargeRows) {
  const Config c{true, "mean", true, 0.1, false};
  Case k = make_case({40, 1000}, DType::Float32, c, 5);  // past the OpenMP grain
  const Tensor transposed = ops::contiguous(k.input.t()).t();
  ASSERT_FALSE(transposed.is_contiguous());
  EXPECT_TRUE(all_close(to_doubles(ops::cross_entropy(transposed, k.target, k.options)),
                        rounded(reference_loss(k.values, c, 5), DType::Float32), 2e-6));
  const Tensor strided_target =
      ops::contiguous(k.target.unsqueeze(1).expand({40, 2})).slice(1, 0, 1).squeeze(1);
  EXPECT_TRUE(all_close(to_doubles(ops::cross_entropy(k.input, strided_target, k.options)),
                        rounded(reference_loss(k.values, c, 5), DType::Float32), 2e-6));
  // int32 class indices are accepted (converted to int64).
  EXPECT_TRUE(
      all_close(to_doubles(ops::cross_entropy(k.input, ops::to(k.target, DType::Int32), k.options)),
                rounded(reference_loss(k.values, c, 5), DType::Float32), 2e-6));
}

TEST(NnCrossEntropy, EmptyAndAllIgnored) {
  const Tensor input = random_tensor({0, 4}, DType::Float32);
  const Tensor target = Tensor::empty({0}, DType::Int64);
  ops::CrossEntropyOptions options;
  EXPECT_TRUE(std::isnan(to_doubles(ops::cross_entropy(input, target, options))[0]));
  options.reduction = "sum";
  EXPECT_EQ(to_doubles(ops::cross_entropy(input, target, options))[0], 0.0);
  options.reduction = "none";
  const ops::CrossEntropyForward f = ops::cross_entropy_forward(input, target, options);
  EXPECT_EQ(f.loss.shape(), (Shape{0}));
  EXPECT_EQ(ops::cross_entropy_backward(f.loss, input, target, f, options).shape(), (Shape{0, 4}));
  // Every target ignored: the weighted mean is 0 / 0, NaN as in torch; the gradient is 0.
  const Tensor logits = random_tensor({3, 4}, DType::Float32);
  const Tensor ignored = tensor_of({-100, -100, -100}, {3}, DType::Int64);
  const ops::CrossEntropyForward fi = ops::cross_entropy_forward(logits, ignored);
  EXPECT_TRUE(std::isnan(to_doubles(fi.loss)[0]));
  options.reduction = "sum";
  const ops::CrossEntropyForward fs = ops::cross_entropy_forward(logits, ignored, options);
  EXPECT_EQ(to_doubles(fs.loss)[0], 0.0);
  const Tensor gs = ops::cross_entropy_backward(ops::ones({}), logits, ignored, fs, options);
  EXPECT_EQ(to_doubles(gs), std::vector<double>(12, 0.0));
}

TEST(NnCrossEntropy, ArgumentChecksAndOutOfRangeTargets) {
  const Tensor logits = random_tensor({3, 5}, DType::Float32);
  const Tensor target = tensor_of({0, 7, 2}, {3}, DType::Int64);
  const std::string message = error_message([&] { ops::cross_entropy(logits, target); });
  EXPECT_NE(message.find("cross_entropy"), std::string::npos) << message;
  EXPECT_NE(message.find("7"), std::string::npos) << message;
  EXPECT_THROW(ops::cross_entropy(logits, target), IndexError);
  EXPECT_THROW(ops::cross_entropy(logits, tensor_of({0, -1, 2}, {3}, DType::Int64)), IndexError);
  const Tensor good = tensor_of({0, 4, 2}, {3}, DType::Int64);
  ops::CrossEntropyOptions options;
  options.reduction = "average";
  EXPECT_THROW(ops::cross_entropy(logits, good, options), ValueError);
  options = {};
  options.label_smoothing = 1.5;
  EXPECT_THROW(ops::cross_entropy(logits, good, options), ValueError);
  options = {};
  options.weight = random_tensor({4}, DType::Float32);
  EXPECT_THROW(ops::cross_entropy(logits, good, options), ShapeError);
  EXPECT_THROW(ops::cross_entropy(logits, tensor_of({0, 1}, {2}, DType::Int64)), ShapeError);
  EXPECT_THROW(ops::cross_entropy(logits, random_tensor({3, 4}, DType::Float32)), ShapeError);
  EXPECT_THROW(ops::cross_entropy(logits, random_tensor({3}, DType::Bool)), DTypeError);
  EXPECT_THROW(ops::cross_entropy(random_tensor({3, 5}, DType::Int64), good), DTypeError);
  const ops::CrossEntropyForward f = ops::cross_entropy_forward(logits, good);
  EXPECT_THROW(ops::cross_entropy_backward(ops::ones({3}), logits, good, f), ShapeError);
}

}  // namespace
}  // namespace rcuda::test
