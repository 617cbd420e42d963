// Inputs and comparisons shared by the recurrent layers' tests (tests/ops/test_rnn.cpp,
// tests/autograd/test_rnn_grad.cpp): fresh random tensors for an RnnSpec in the caller's layout,
// their values for the double-loop reference (tests/support/rnn_reference.h), and bounds scaled
// by the reference's magnitude.
#pragma once

#include <string>
#include <vector>

#include "rcuda/nn/rnn.h"
#include "rcuda/ops/rnn.h"
#include "support/reference.h"
#include "support/rnn_reference.h"

namespace rcuda::test {

using RnnMode = Backend::RnnMode;

using ops::rnn_mode_name;

// How the caller hands the sequence over.
enum class RnnLayout { TimeMajor, BatchFirst, Unbatched };

struct RnnCase {
  RnnSpec spec;
  bool given_states = true;  // hx (and cx) given, else left undefined (zeros)
  RnnLayout layout = RnnLayout::TimeMajor;
  std::string str() const {
    const char* layouts[] = {"time-major", "batch_first", "unbatched"};
    return std::string(rnn_mode_name(spec.mode)) + " L" + std::to_string(spec.layers) + " D" +
           std::to_string(spec.directions) + (spec.has_biases ? "" : " no biases") + " T" +
           std::to_string(spec.T) + " N" + std::to_string(spec.N) + " I" + std::to_string(spec.I) +
           " H" + std::to_string(spec.H) + (given_states ? " given states" : " zero states") + " " +
           layouts[static_cast<int>(layout)];
  }
};

inline RnnSpec spec(RnnMode mode, int64_t layers, int64_t directions, bool biases, int64_t T,
                    int64_t N, int64_t I, int64_t H) {
  RnnSpec s;
  s.mode = mode;
  s.layers = layers;
  s.directions = directions;
  s.has_biases = biases;
  s.T = T, s.N = N, s.I = I, s.H = H;
  return s;
}

// The configurations every value and gradient test runs: each mode with 1-3 layers, one or two
// directions, with and without biases, T = 1 and N = 1, odd sizes, given and zero states.
inline std::vector<RnnCase> rnn_cases() {
  using M = RnnMode;
  return {
      {spec(M::Lstm, 1, 1, true, 3, 2, 3, 4), true},
      {spec(M::Lstm, 2, 2, true, 4, 3, 5, 3), false},
      {spec(M::Lstm, 3, 1, false, 2, 1, 2, 5), true},
      {spec(M::Lstm, 1, 2, false, 1, 2, 1, 2), true, RnnLayout::BatchFirst},
      {spec(M::Gru, 1, 2, true, 1, 2, 4, 3), true},
      {spec(M::Gru, 2, 1, false, 5, 2, 3, 2), false},
      {spec(M::Gru, 3, 2, true, 3, 1, 1, 4), true},
      {spec(M::Gru, 2, 2, true, 3, 1, 2, 3), true, RnnLayout::Unbatched},
      {spec(M::RnnTanh, 2, 2, true, 3, 2, 3, 5), true},
      {spec(M::RnnTanh, 1, 1, false, 1, 1, 1, 1), false},
      {spec(M::RnnTanh, 3, 1, true, 2, 3, 2, 2), true, RnnLayout::BatchFirst},
      {spec(M::RnnRelu, 2, 1, true, 4, 3, 2, 3), true},
      {spec(M::RnnRelu, 1, 2, false, 3, 2, 5, 2), false},
      {spec(M::RnnRelu, 2, 2, true, 2, 1, 3, 3), false, RnnLayout::Unbatched},
      {spec(M::Lstm, 2, 2, true, 2, 1, 3, 2), true, RnnLayout::Unbatched},
      {spec(M::Gru, 1, 1, true, 4, 2, 3, 3), false, RnnLayout::BatchFirst},
  };
}

// Row-major [A, B, C] values as [B, A, C].
inline std::vector<double> swap01(const std::vector<double>& v, int64_t a, int64_t b, int64_t c) {
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < c; ++k) out[(j * a + i) * c + k] = v[(i * b + j) * c + k];
  return out;
}

// A case's tensors (in its layout and dtype) and the same values for the reference.
struct RnnInputs {
  Tensor x, hx, cx;
  std::vector<Tensor> w;
  RnnReferenceInputs ref;  // time-major, the tensors' values exactly
};

inline RnnInputs make_rnn_inputs(const RnnCase& c, DType dtype) {
  const RnnSpec& s = c.spec;
  RnnInputs in;
  const Tensor x = random_tensor({s.T, s.N, s.I}, dtype, -1, 1);
  in.ref.x = to_doubles(x);
  const bool lstm = s.mode == RnnMode::Lstm;
  Tensor hx, cx;
  if (c.given_states) {
    hx = random_tensor(s.state_shape(), dtype, -1, 1);
    in.ref.h0 = to_doubles(hx);
    if (lstm) {
      cx = random_tensor(s.state_shape(), dtype, -1, 1);
      in.ref.c0 = to_doubles(cx);
    }
  }
  // Weights of about PyTorch's scale (1 / sqrt(H)), a little wider so gates saturate less.
  const double k = 1.5 / std::sqrt(static_cast<double>(s.H));
  for (const Shape& shape : s.weight_shapes()) {
    in.w.push_back(random_tensor(shape, dtype, -k, k));
    in.ref.w.push_back(to_doubles(in.w.back()));
  }
  switch (c.layout) {
    case RnnLayout::TimeMajor:
      in.x = x;
      break;
    case RnnLayout::BatchFirst:
      in.x = tensor_of(swap01(in.ref.x, s.T, s.N, s.I), {s.N, s.T, s.I}, dtype);
      break;
    case RnnLayout::Unbatched:
      in.x = tensor_of(in.ref.x, {s.T, s.I}, dtype);
      break;
  }
  const bool unbatched = c.layout == RnnLayout::Unbatched;
  const Shape state2 = {s.layers * s.directions, s.H};
  if (hx.defined()) in.hx = unbatched ? tensor_of(in.ref.h0, state2, dtype) : hx;
  if (cx.defined()) in.cx = unbatched ? tensor_of(in.ref.c0, state2, dtype) : cx;
  return in;
}

inline nn::RnnOptions rnn_options(const RnnCase& c) {
  nn::RnnOptions o;
  o.mode = c.spec.mode;
  o.num_layers = c.spec.layers;
  o.bidirectional = c.spec.directions == 2;
  o.batch_first = c.layout == RnnLayout::BatchFirst;
  return o;
}

// A result's values in the reference's time-major order.
inline std::vector<double> time_major_values(const Tensor& t, const RnnCase& c) {
  const std::vector<double> v = to_doubles(t);
  if (c.layout != RnnLayout::BatchFirst) return v;
  return swap01(v, c.spec.N, c.spec.T, t.size(2));
}

inline double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// |a - e| <= tol * max(1, max |e|): bounds scaled by the reference's magnitude.
inline ::testing::AssertionResult close_scaled(const std::vector<double>& actual,
                                               const std::vector<double>& expected, double tol) {
  return all_close(actual, expected, tol * std::max(1.0, max_abs(expected)));
}

}  // namespace rcuda::test
