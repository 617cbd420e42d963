// Plain double-precision loops for the recurrent layers (Note [Recurrent primitives] in
// rcuda/backend/backend.h), the references of tests/ops/test_rnn.cpp and
// tests/autograd/test_rnn_grad.cpp, for any backend. Written from PyTorch's documented
// equations for nn.LSTM, nn.GRU and nn.RNN, one (layer, direction, step, batch row, unit) at a
// time, with no state kept between calls; gradients by central differences of the same loops.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "rcuda/backend/backend.h"

namespace rcuda::test {

struct RnnSpec {
  Backend::RnnMode mode = Backend::RnnMode::Lstm;
  int64_t layers = 1, directions = 1;
  bool has_biases = true;
  int64_t T = 1, N = 1, I = 1, H = 1;
  int64_t gates() const {
    return mode == Backend::RnnMode::Lstm ? 4 : mode == Backend::RnnMode::Gru ? 3 : 1;
  }
  int64_t per_block() const { return has_biases ? 4 : 2; }
  // The contract's weight shapes, in order.
  std::vector<Shape> weight_shapes() const {
    std::vector<Shape> shapes;
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t d = 0; d < directions; ++d) {
        shapes.push_back({gates() * H, l == 0 ? I : directions * H});
        shapes.push_back({gates() * H, H});
        if (has_biases) {
          shapes.push_back({gates() * H});
          shapes.push_back({gates() * H});
        }
      }
    return shapes;
  }
  Shape state_shape() const { return {layers * directions, N, H}; }
  Shape output_shape() const { return {T, N, directions * H}; }
};

struct RnnReferenceResult {
  std::vector<double> output, h_n, c_n;  // [T, N, D*H], [L*D, N, H], [L*D, N, H] (LSTM)
};

// x [T, N, I], h0 and c0 [L*D, N, H] (empty: zeros), weights row-major in the contract's order.
// between_layers scales every layer's output before the next layer reads it (0: dropout with
// p = 1; 1: none).
inline RnnReferenceResult rnn_reference(const RnnSpec& s, const std::vector<double>& x,
                                        const std::vector<double>& h0,
                                        const std::vector<double>& c0,
                                        const std::vector<std::vector<double>>& w,
                                        double between_layers = 1.0) {
  using Mode = Backend::RnnMode;
  const int64_t H = s.H, D = s.directions, N = s.N, T = s.T;
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  RnnReferenceResult r;
  r.h_n.assign(static_cast<size_t>(s.layers * D * N * H), 0.0);
  if (s.mode == Mode::Lstm) r.c_n.assign(r.h_n.size(), 0.0);
  std::vector<double> in = x;
  int64_t in_size = s.I;
  for (int64_t l = 0; l < s.layers; ++l) {
    std::vector<double> out(static_cast<size_t>(T * N * D * H), 0.0);
    for (int64_t d = 0; d < D; ++d) {
      const int64_t block = l * D + d;
      const std::vector<double>& w_ih = w[block * s.per_block()];
      const std::vector<double>& w_hh = w[block * s.per_block() + 1];
      auto b_ih = [&](int64_t row) { return s.has_biases ? w[block * 4 + 2][row] : 0.0; };
      auto b_hh = [&](int64_t row) { return s.has_biases ? w[block * 4 + 3][row] : 0.0; };
      for (int64_t n = 0; n < N; ++n) {
        std::vector<double> h(H), c(H);
        for (int64_t j = 0; j < H; ++j) {
          const size_t at = static_cast<size_t>((block * N + n) * H + j);
          h[j] = h0.empty() ? 0.0 : h0[at];
          c[j] = c0.empty() ? 0.0 : c0[at];
        }
        for (int64_t step = 0; step < T; ++step) {
          const int64_t t = d == 0 ? step : T - 1 - step;
          // W_ih x + b_ih and W_hh h + b_hh of the gate g, unit j.
          auto wx = [&](int64_t g, int64_t j) {
            const int64_t row = g * H + j;
            double v = b_ih(row);
            for (int64_t k = 0; k < in_size; ++k)
              v += w_ih[row * in_size + k] * in[(t * N + n) * in_size + k];
            return v;
          };
          auto wh = [&](int64_t g, int64_t j) {
            const int64_t row = g * H + j;
            double v = b_hh(row);
            for (int64_t k = 0; k < H; ++k) v += w_hh[row * H + k] * h[k];
            return v;
          };
          std::vector<double> h_new(H), c_new(H);
          for (int64_t j = 0; j < H; ++j) {
            switch (s.mode) {
              case Mode::Lstm: {
                const double i = sig(wx(0, j) + wh(0, j)), f = sig(wx(1, j) + wh(1, j));
                const double g = std::tanh(wx(2, j) + wh(2, j)), o = sig(wx(3, j) + wh(3, j));
                c_new[j] = f * c[j] + i * g;
                h_new[j] = o * std::tanh(c_new[j]);
                break;
              }
              case Mode::Gru: {
                const double rr = sig(wx(0, j) + wh(0, j)), z = sig(wx(1, j) + wh(1, j));
                const double cand = std::tanh(wx(2, j) + rr * wh(2, j));
                h_new[j] = (1 - z) * cand + z * h[j];
                break;
              }
              case Mode::RnnTanh:
                h_new[j] = std::tanh(wx(0, j) + wh(0, j));
                break;
              case Mode::RnnRelu:
                h_new[j] = std::max(0.0, wx(0, j) + wh(0, j));
                break;
            }
          }
          h = h_new;
          if (s.mode == Mode::Lstm) c = c_new;
          for (int64_t j = 0; j < H; ++j) out[(t * N + n) * D * H + d * H + j] = h[j];
        }
        for (int64_t j = 0; j < H; ++j) {
          const size_t at = static_cast<size_t>((block * N + n) * H + j);
          r.h_n[at] = h[j];
          if (s.mode == Mode::Lstm) r.c_n[at] = c[j];
        }
      }
    }
    if (l == s.layers - 1) {
      r.output = out;
    } else {
      for (double& v : out) v *= between_layers;
      in = out;
      in_size = D * H;
    }
  }
  return r;
}

// Weights of the scalar whose gradients the tests compare: sum(output * wo) + sum(h_n * wh) +
// sum(c_n * wc), any of them empty (that result does not count).
struct RnnLossWeights {
  std::vector<double> output, h_n, c_n;
};

inline double rnn_reference_loss(const RnnReferenceResult& r, const RnnLossWeights& lw) {
  double s = 0;
  auto add = [&s](const std::vector<double>& v, const std::vector<double>& w) {
    for (size_t i = 0; i < w.size(); ++i) s += v[i] * w[i];
  };
  add(r.output, lw.output);
  add(r.h_n, lw.h_n);
  add(r.c_n, lw.c_n);
  return s;
}

// The reference's inputs as one list: x, h0, c0, then the weights.
struct RnnReferenceInputs {
  std::vector<double> x, h0, c0;
  std::vector<std::vector<double>> w;
};

struct RnnReferenceGrads {
  std::vector<double> x, h0, c0;
  std::vector<std::vector<double>> w;
};

// Central differences (step eps) of the loss with respect to every input element; h0 and c0
// that are empty (zeros) get no gradient.
inline RnnReferenceGrads rnn_reference_grads(const RnnSpec& s, RnnReferenceInputs in,
                                             const RnnLossWeights& lw, double between_layers = 1.0,
                                             double eps = 1e-6) {
  auto loss = [&] {
    return rnn_reference_loss(rnn_reference(s, in.x, in.h0, in.c0, in.w, between_layers), lw);
  };
  auto diff = [&](std::vector<double>& v) {
    std::vector<double> g(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const double saved = v[i];
      v[i] = saved + eps;
      const double up = loss();
      v[i] = saved - eps;
      const double down = loss();
      v[i] = saved;
      g[i] = (up - down) / (2 * eps);
    }
    return g;
  };
  RnnReferenceGrads g;
  g.x = diff(in.x);
  g.h0 = diff(in.h0);
  g.c0 = diff(in.c0);
  for (std::vector<double>& w : in.w) g.w.push_back(diff(w));
  return g;
}

}  // namespace rcuda::test
