// Gradients of the recurrent layers (rcuda::nn::rnn, one RnnBackward node per call): input, hx,
// cx and every weight against central differences of the double loops of
// tests/support/rnn_reference.h, in float32 (oneDNN), float64 (the CPU's loops) and the half
// types, from gradients of output, h_n and c_n together or alone; float64 gradchecks of the whole
// call; dropout between layers (p = 0, p = 1, seeds, eval mode, its gradient by composition).
#include <string>

#include "autograd/gradcheck.h"
#include "ops/rnn_test_util.h"

namespace rcuda::test {
namespace {

double grad_tolerance(DType dtype) {
  return dtype == DType::Float64 ? 1e-6 : dtype == DType::Float32 ? 1e-4 : 8 * tolerance(dtype);
}

std::vector<double> uniform_weights(int64_t n) {
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<double> w(static_cast<size_t>(n));
  for (double& x : w) x = u(rng());
  return w;
}

// Which results the loss reads.
struct Reads {
  bool output = true, h_n = true, c_n = true;
};

// The loss weights of the case (time-major), and the loss over nn::rnn's results.
RnnLossWeights loss_weights(const RnnCase& c, const Reads& reads) {
  const RnnSpec& s = c.spec;
  RnnLossWeights lw;
  if (reads.output) lw.output = uniform_weights(s.T * s.N * s.directions * s.H);
  if (reads.h_n) lw.h_n = uniform_weights(s.layers * s.directions * s.N * s.H);
  if (reads.c_n && s.mode == RnnMode::Lstm)
    lw.c_n = uniform_weights(s.layers * s.directions * s.N * s.H);
  return lw;
}

// sum(result * weights), the weights laid out as the result is.
Tensor weighted(const Tensor& result, const std::vector<double>& w, const RnnCase& c,
                bool is_output) {
  std::vector<double> values = w;
  if (is_output && c.layout == RnnLayout::BatchFirst)
    values = swap01(w, c.spec.T, c.spec.N, c.spec.directions * c.spec.H);
  return sum(mul(result, tensor_of(values, result.shape(), result.dtype())));
}

// Only the results the weights name take part, so the others send the node no gradient.
Tensor loss_of(const nn::RnnResult& r, const RnnLossWeights& lw, const RnnCase& c) {
  Tensor loss;
  auto add_term = [&loss](const Tensor& term) { loss = loss.defined() ? add(loss, term) : term; };
  if (!lw.output.empty()) add_term(weighted(r.output, lw.output, c, true));
  if (!lw.h_n.empty()) add_term(weighted(r.h_n, lw.h_n, c, false));
  if (!lw.c_n.empty()) add_term(weighted(r.c_n, lw.c_n, c, false));
  return loss;
}

// The case's defined tensors as gradcheck inputs (x, then hx and cx when given, then the
// weights), and the call that rebuilds nn::rnn's arguments from them.
struct GradcheckInputs {
  TensorList inputs;
  bool has_hx = false, has_cx = false;
  nn::RnnResult call(const TensorList& t, const nn::RnnOptions& o) const {
    size_t k = 1;
    const Tensor hx = has_hx ? t[k++] : Tensor();
    const Tensor cx = has_cx ? t[k++] : Tensor();
    const std::vector<Tensor> w(t.begin() + static_cast<std::ptrdiff_t>(k), t.end());
    return nn::rnn(t[0], hx, cx, w, o);
  }
};
GradcheckInputs gradcheck_inputs(const RnnInputs& in) {
  GradcheckInputs g;
  g.inputs = {in.x};
  g.has_hx = in.hx.defined();
  g.has_cx = in.cx.defined();
  if (g.has_hx) g.inputs.push_back(in.hx);
  if (g.has_cx) g.inputs.push_back(in.cx);
  g.inputs.insert(g.inputs.end(), in.w.begin(), in.w.end());
  for (const Tensor& t : g.inputs) t.requires_grad_();
  return g;
}

void expect_grads_match(const RnnCase& c, DType dtype, const Reads& reads,
                        const std::string& what = "") {
  RnnInputs in = make_rnn_inputs(c, dtype);
  TensorList wrt = {in.x};
  if (in.hx.defined()) wrt.push_back(in.hx);
  if (in.cx.defined()) wrt.push_back(in.cx);
  wrt.insert(wrt.end(), in.w.begin(), in.w.end());
  for (const Tensor& t : wrt) t.requires_grad_();
  const RnnLossWeights lw = loss_weights(c, reads);
  const nn::RnnResult r = nn::rnn(in.x, in.hx, in.cx, in.w, rnn_options(c));
  const TensorList g = autograd::grad({loss_of(r, lw, c)}, wrt, {}, false, true);
  const RnnReferenceGrads e = rnn_reference_grads(c.spec, in.ref, lw);
  const double tol = grad_tolerance(dtype);
  const std::string where = c.str() + " " + dtype_name(dtype) + " " + what;
  auto check = [&](const Tensor& grad, const std::vector<double>& expected, const char* name) {
    ASSERT_TRUE(grad.defined()) << where << " " << name;
    EXPECT_EQ(grad.dtype(), dtype) << where << " " << name;
    EXPECT_TRUE(close_scaled(to_doubles(grad), expected, tol)) << where << " " << name;
  };
  size_t k = 0;
  EXPECT_TRUE(close_scaled(time_major_values(g[k++], c), e.x, tol)) << where << " input";
  if (in.hx.defined()) check(g[k++], e.h0, "hx");
  if (in.cx.defined()) check(g[k++], e.c0, "cx");
  for (size_t i = 0; i < in.w.size(); ++i)
    check(g[k++], e.w[i], ("weight " + std::to_string(i)).c_str());
}

TEST(RnnGrad, MatchFiniteDifferencesInFloat32AndFloat64) {
  for (DType dtype : {DType::Float32, DType::Float64})
    for (const RnnCase& c : rnn_cases()) expect_grads_match(c, dtype, {});
}

TEST(RnnGrad, HalfTypesThroughFloat32) {
  for (DType dtype : {DType::Float16, DType::BFloat16})
    for (const RnnCase& c : rnn_cases()) expect_grads_match(c, dtype, {});
}

// Gradients that reach the node through one of its outputs only.
TEST(RnnGrad, FromOneResultAlone) {
  for (DType dtype : {DType::Float32, DType::Float64})
    for (const RnnCase& c : rnn_cases()) {
      expect_grads_match(c, dtype, {true, false, false}, "output only");
      expect_grads_match(c, dtype, {false, true, false}, "h_n only");
      if (c.spec.mode == RnnMode::Lstm)
        expect_grads_match(c, dtype, {false, false, true}, "c_n only");
    }
}

// An input that needs no gradient gets none, and the others are unchanged.
TEST(RnnGrad, OnlyWhatRequiresGrad) {
  const RnnCase c{spec(RnnMode::Gru, 2, 2, true, 3, 2, 3, 4), true};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    RnnInputs in = make_rnn_inputs(c, dtype);
    for (const Tensor& w : in.w) w.requires_grad_();
    const nn::RnnResult r = nn::rnn(in.x, in.hx, in.cx, in.w, rnn_options(c));
    const RnnLossWeights lw = loss_weights(c, {});
    autograd::backward(loss_of(r, lw, c));
    EXPECT_FALSE(in.x.grad().defined());
    EXPECT_FALSE(in.hx.grad().defined());
    const RnnReferenceGrads e = rnn_reference_grads(c.spec, in.ref, lw);
    for (size_t i = 0; i < in.w.size(); ++i)
      EXPECT_TRUE(close_scaled(to_doubles(in.w[i].grad()), e.w[i], grad_tolerance(dtype)))
          << dtype_name(dtype) << " weight " << i;
  }
}

// The whole call (output, h_n and c_n joined) against central differences of itself.
TEST(RnnGrad, Float64Gradcheck) {
  for (const RnnCase& c : rnn_cases()) {
    const GradcheckInputs g = gradcheck_inputs(make_rnn_inputs(c, DType::Float64));
    const nn::RnnOptions o = rnn_options(c);
    auto f = [&](const TensorList& t) {
      const nn::RnnResult r = g.call(t, o);
      TensorList parts = {reshape(r.output, {-1}), reshape(r.h_n, {-1})};
      if (r.c_n.defined()) parts.push_back(reshape(r.c_n, {-1}));
      return cat(parts, 0);
    };
    EXPECT_TRUE(gradcheck(f, g.inputs, 1e-6, 1e-6)) << c.str();
  }
}

// T = 0: h_n and c_n are hx and cx, so their gradients pass straight through.
TEST(RnnGrad, EmptySequence) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const RnnCase c{spec(RnnMode::Lstm, 2, 1, true, 0, 2, 3, 2), true};
    RnnInputs in = make_rnn_inputs(c, dtype);
    for (const Tensor& t : {in.x, in.hx, in.cx, in.w[0]}) t.requires_grad_();
    const nn::RnnResult r = nn::rnn(in.x, in.hx, in.cx, in.w, rnn_options(c));
    const RnnLossWeights lw = loss_weights(c, {});
    const TensorList g = autograd::grad({loss_of(r, lw, c)}, {in.x, in.hx, in.cx, in.w[0]});
    EXPECT_EQ(g[0].shape(), (Shape{0, 2, 3}));
    // The loss weights as the dtype holds them.
    EXPECT_TRUE(all_close(to_doubles(g[1]), lw.h_n, tolerance(dtype)));
    EXPECT_TRUE(all_close(to_doubles(g[2]), lw.c_n, tolerance(dtype)));
    EXPECT_EQ(to_doubles(g[3]), std::vector<double>(static_cast<size_t>(in.w[0].numel()), 0.0));
  }
}

TEST(RnnGrad, InPlaceChangeOfASavedInputIsRefused) {
  const RnnCase c{spec(RnnMode::RnnTanh, 1, 1, true, 2, 2, 2, 2), true};
  RnnInputs in = make_rnn_inputs(c, DType::Float32);
  in.w[0].requires_grad_();
  const nn::RnnResult r = nn::rnn(in.x, in.hx, in.cx, in.w, rnn_options(c));
  ops::fill_(in.x, 1.0);
  const std::string m = error_message([&] { autograd::backward(sum(r.output)); });
  EXPECT_NE(m.find("RnnTanhBackward saved for the gradient"), std::string::npos) << m;
}

// ---- dropout between layers (Note [Dropout between recurrent layers]) ----

RnnCase dropout_case(RnnMode mode) { return {spec(mode, 3, 2, true, 3, 2, 3, 4), true}; }

TEST(RnnDropout, ZeroIsNoDropoutAndEvalIgnoresIt) {
  for (RnnMode mode : {RnnMode::Lstm, RnnMode::Gru, RnnMode::RnnTanh, RnnMode::RnnRelu}) {
    const RnnCase c = dropout_case(mode);
    const RnnInputs in = make_rnn_inputs(c, DType::Float64);
    const nn::RnnResult plain = nn::rnn(in.x, in.hx, in.cx, in.w, rnn_options(c));
    const RnnReferenceResult e = rnn_reference(c.spec, in.ref.x, in.ref.h0, in.ref.c0, in.ref.w);
    EXPECT_TRUE(close_scaled(to_doubles(plain.output), e.output, 1e-12)) << rnn_mode_name(mode);
    nn::RnnOptions o = rnn_options(c);
    o.dropout = 0;
    EXPECT_EQ(to_doubles(nn::rnn(in.x, in.hx, in.cx, in.w, o).output), to_doubles(plain.output));
    o.dropout = 0.7;
    o.training = false;
    const nn::RnnResult eval = nn::rnn(in.x, in.hx, in.cx, in.w, o);
    EXPECT_EQ(to_doubles(eval.output), to_doubles(plain.output)) << rnn_mode_name(mode);
    EXPECT_EQ(to_doubles(eval.h_n), to_doubles(plain.h_n)) << rnn_mode_name(mode);
  }
}

// p = 1 zeroes every layer's output before the next layer: the reference with zero inputs there.
TEST(RnnDropout, OneZeroesBetweenLayers) {
  for (RnnMode mode : {RnnMode::Lstm, RnnMode::Gru, RnnMode::RnnTanh, RnnMode::RnnRelu})
    for (DType dtype : {DType::Float32, DType::Float64}) {
      const RnnCase c = dropout_case(mode);
      const RnnInputs in = make_rnn_inputs(c, dtype);
      nn::RnnOptions o = rnn_options(c);
      o.dropout = 1;
      const nn::RnnResult r = nn::rnn(in.x, in.hx, in.cx, in.w, o);
      const RnnReferenceResult e =
          rnn_reference(c.spec, in.ref.x, in.ref.h0, in.ref.c0, in.ref.w, 0.0);
      const double tol = dtype == DType::Float64 ? 1e-12 : 1e-5;
      EXPECT_TRUE(close_scaled(to_doubles(r.output), e.output, tol)) << rnn_mode_name(mode);
      EXPECT_TRUE(close_scaled(to_doubles(r.h_n), e.h_n, tol)) << rnn_mode_name(mode);
      if (mode == RnnMode::Lstm) {
        EXPECT_TRUE(close_scaled(to_doubles(r.c_n), e.c_n, tol));
      }
    }
}

TEST(RnnDropout, TheSameSeedRepeatsTheMasks) {
  for (RnnMode mode : {RnnMode::Lstm, RnnMode::Gru}) {
    const RnnCase c = dropout_case(mode);
    const RnnInputs in = make_rnn_inputs(c, DType::Float32);
    nn::RnnOptions o = rnn_options(c);
    o.dropout = 0.5;
    auto run = [&](uint64_t seed) {
      ops::manual_seed(seed);
      return to_doubles(nn::rnn(in.x, in.hx, in.cx, in.w, o).output);
    };
    const uint64_t seed = test_seed();
    const std::vector<double> a = run(seed), b = run(seed), other = run(seed + 1);
    EXPECT_EQ(a, b) << rnn_mode_name(mode);
    EXPECT_NE(a, other) << rnn_mode_name(mode);
    o.dropout = 0;
    EXPECT_NE(a, run(seed)) << rnn_mode_name(mode);
  }
}

// Its gradient, by composition through the dropout nodes: float64 central differences of the
// call under a fixed seed.
TEST(RnnDropout, GradcheckUnderAFixedSeed) {
  for (RnnMode mode : {RnnMode::Lstm, RnnMode::Gru, RnnMode::RnnRelu}) {
    const RnnCase c = dropout_case(mode);
    const GradcheckInputs g = gradcheck_inputs(make_rnn_inputs(c, DType::Float64));
    nn::RnnOptions o = rnn_options(c);
    o.dropout = 0.4;
    const uint64_t seed = test_seed();
    auto f = [&](const TensorList& t) {
      ops::manual_seed(seed);
      const nn::RnnResult r = g.call(t, o);
      return cat({reshape(r.output, {-1}), reshape(r.h_n, {-1})}, 0);
    };
    EXPECT_TRUE(gradcheck(f, g.inputs, 1e-6, 1e-6)) << rnn_mode_name(mode);
  }
}

}  // namespace
}  // namespace rcuda::test
