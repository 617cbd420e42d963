// float64 recurrent layers in plain loops (Note [float64 recurrent layers] in rnn_cpu.h): the
// forward of Note [Recurrent primitives] step by step, keeping its activations in the reserve,
// and back-propagation through time over them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "rnn_cpu.h"

namespace rcuda::cpu {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Sizes of one call and where each layer's activations sit in the reserve (in doubles).
struct Plan {
  RnnMode mode;
  int64_t T, N, I, H, D, L, G;
  bool has_biases;
  int64_t out_size() const { return T * N * D * H; }
  int64_t gates_size() const { return T * N * G * H; }
  // LSTM keeps its cell states, GRU its hidden-side candidate term W_hn h + b_hn.
  int64_t extra_size() const {
    return mode == RnnMode::Lstm || mode == RnnMode::Gru ? T * N * H : 0;
  }
  int64_t layer_size(int64_t l) const {
    return (l < L - 1 ? out_size() : 0) + D * (gates_size() + extra_size());
  }
  int64_t layer_offset(int64_t l) const {
    int64_t offset = 0;
    for (int64_t k = 0; k < l; ++k) offset += layer_size(k);
    return offset;
  }
  int64_t total() const { return layer_offset(L); }
  int64_t input_size(int64_t l) const { return l == 0 ? I : D * H; }
  int64_t weights_per_block() const { return has_biases ? 4 : 2; }
};

Plan plan_of(const RnnArgs& args, const Tensor& input) {
  return {args.mode,      input.size(0),   input.size(1), input.size(2),
          args.hidden,    args.directions, args.layers,   Backend::rnn_gates(args.mode),
          args.has_biases};
}

// The views of one layer into the reserve and the operands.
struct LayerData {
  const double* x;  // [T, N, I_l]
  double* y;        // [T, N, D * H]
};

LayerData layer_data(const Plan& p, int64_t l, const Tensor& input, const Tensor& out,
                     double* trace) {
  const double* x =
      l == 0 ? input.data<double>() : trace + p.layer_offset(l - 1);  // layer l-1's output
  double* y = l == p.L - 1 ? out.data<double>() : trace + p.layer_offset(l);
  return {x, y};
}

// The activated gates and extra term of (layer l, direction d).
double* gates_of(const Plan& p, double* trace, int64_t l, int64_t d) {
  return trace + p.layer_offset(l) + (l < p.L - 1 ? p.out_size() : 0) +
         d * (p.gates_size() + p.extra_size());
}
double* extra_of(const Plan& p, double* trace, int64_t l, int64_t d) {
  return gates_of(p, trace, l, d) + p.gates_size();
}

// One block's weights; biases null when the layers have none.
struct BlockWeights {
  const double *w_ih, *w_hh, *b_ih, *b_hh;
};
BlockWeights block_weights(const Plan& p, const Backend::TensorList& weights, int64_t block) {
  const int64_t k = block * p.weights_per_block();
  return {weights[k].data<double>(), weights[k + 1].data<double>(),
          p.has_biases ? weights[k + 2].data<double>() : nullptr,
          p.has_biases ? weights[k + 3].data<double>() : nullptr};
}

// a[r] = b[r] + sum_c w[r, c] v[c] for the rows of w [rows, cols] (b null: 0).
void affine(double* a, const double* w, const double* b, const double* v, int64_t rows,
            int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    double s = b ? b[r] : 0.0;
    const double* row = w + r * cols;
    for (int64_t c = 0; c < cols; ++c) s += row[c] * v[c];
    a[r] = s;
  }
}

// Time index of step s in direction d, and whether the step has a predecessor.
int64_t time_of(const Plan& p, int64_t d, int64_t s) { return d == 0 ? s : p.T - 1 - s; }

void forward_direction(const Plan& p, int64_t l, int64_t d, const LayerData& io,
                       const BlockWeights& w, const double* h0, const double* c0, double* gates,
                       double* extra, double* hy, double* cy) {
  const int64_t H = p.H, G = p.G, DH = p.D * p.H, In = p.input_size(l);
  std::vector<double> ax(G * H), ah(G * H);
  for (int64_t s = 0; s < p.T; ++s) {
    const int64_t t = time_of(p, d, s), prev = d == 0 ? t - 1 : t + 1;
    for (int64_t n = 0; n < p.N; ++n) {
      const double* h_prev = s == 0 ? h0 + n * H : io.y + (prev * p.N + n) * DH + d * H;
      affine(ax.data(), w.w_ih, w.b_ih, io.x + (t * p.N + n) * In, G * H, In);
      affine(ah.data(), w.w_hh, w.b_hh, h_prev, G * H, H);
      double* gate = gates + (t * p.N + n) * G * H;
      double* ext = extra + (t * p.N + n) * H;
      double* h = io.y + (t * p.N + n) * DH + d * H;
      for (int64_t j = 0; j < H; ++j) {
        switch (p.mode) {
          case RnnMode::Lstm: {
            const double c_prev = s == 0 ? c0[n * H + j] : extra[(prev * p.N + n) * H + j];
            const double i = sigmoid(ax[j] + ah[j]), f = sigmoid(ax[H + j] + ah[H + j]);
            const double g = std::tanh(ax[2 * H + j] + ah[2 * H + j]);
            const double o = sigmoid(ax[3 * H + j] + ah[3 * H + j]);
            ext[j] = f * c_prev + i * g;
            h[j] = o * std::tanh(ext[j]);
            gate[j] = i, gate[H + j] = f, gate[2 * H + j] = g, gate[3 * H + j] = o;
            break;
          }
          case RnnMode::Gru: {
            const double r = sigmoid(ax[j] + ah[j]), z = sigmoid(ax[H + j] + ah[H + j]);
            ext[j] = ah[2 * H + j];
            const double cand = std::tanh(ax[2 * H + j] + r * ext[j]);
            h[j] = (1 - z) * cand + z * h_prev[j];
            gate[j] = r, gate[H + j] = z, gate[2 * H + j] = cand;
            break;
          }
          case RnnMode::RnnTanh:
            h[j] = gate[j] = std::tanh(ax[j] + ah[j]);
            break;
          case RnnMode::RnnRelu:
            h[j] = gate[j] = std::max(ax[j] + ah[j], 0.0);
            break;
        }
      }
    }
  }
  const int64_t last = time_of(p, d, p.T - 1);
  for (int64_t n = 0; n < p.N; ++n) {
    std::memcpy(hy + n * H, io.y + (last * p.N + n) * DH + d * H, H * sizeof(double));
    if (cy) std::memcpy(cy + n * H, extra + (last * p.N + n) * H, H * sizeof(double));
  }
}

// The gradients of one block's weights (null: not wanted).
struct BlockGrads {
  double *w_ih, *w_hh, *b_ih, *b_hh;
};

// Back-propagation through time of (layer l, direction d): dy is the gradient of the layer's
// output, dx (accumulated into) the gradient of its input; dh and dc enter as the gradients of
// the final states and leave as those of the initial ones.
void backward_direction(const Plan& p, int64_t l, int64_t d, const LayerData& io,
                        const BlockWeights& w, const BlockGrads& gw, const double* h0,
                        const double* c0, const double* gates, const double* extra,
                        const double* dy, double* dx, double* dh, double* dc) {
  const int64_t H = p.H, G = p.G, DH = p.D * p.H, In = p.input_size(l);
  std::vector<double> dax(G * H), dah(G * H), dh_prev(H), dc_prev(H);
  for (int64_t s = p.T - 1; s >= 0; --s) {
    const int64_t t = time_of(p, d, s), prev = d == 0 ? t - 1 : t + 1;
    for (int64_t n = 0; n < p.N; ++n) {
      const double* h_prev = s == 0 ? h0 + n * H : io.y + (prev * p.N + n) * DH + d * H;
      const double* gate = gates + (t * p.N + n) * G * H;
      const double* ext = extra + (t * p.N + n) * H;
      for (int64_t j = 0; j < H; ++j) {
        const double g_h = dy[(t * p.N + n) * DH + d * H + j] + dh[n * H + j];
        switch (p.mode) {
          case RnnMode::Lstm: {
            const double c_prev = s == 0 ? c0[n * H + j] : extra[(prev * p.N + n) * H + j];
            const double i = gate[j], f = gate[H + j], g = gate[2 * H + j], o = gate[3 * H + j];
            const double tc = std::tanh(ext[j]);
            const double g_c = dc[n * H + j] + g_h * o * (1 - tc * tc);
            dax[j] = g_c * g * i * (1 - i);
            dax[H + j] = g_c * c_prev * f * (1 - f);
            dax[2 * H + j] = g_c * i * (1 - g * g);
            dax[3 * H + j] = g_h * tc * o * (1 - o);
            dah[j] = dax[j], dah[H + j] = dax[H + j], dah[2 * H + j] = dax[2 * H + j];
            dah[3 * H + j] = dax[3 * H + j];
            dc_prev[j] = g_c * f;
            dh_prev[j] = 0;
            break;
          }
          case RnnMode::Gru: {
            const double r = gate[j], z = gate[H + j], cand = gate[2 * H + j];
            const double g_a = g_h * (1 - z) * (1 - cand * cand);  // at W_in x + b_in + r hn
            dax[j] = g_a * ext[j] * r * (1 - r);
            dax[H + j] = g_h * (h_prev[j] - cand) * z * (1 - z);
            dax[2 * H + j] = g_a;
            dah[j] = dax[j], dah[H + j] = dax[H + j];
            dah[2 * H + j] = g_a * r;
            dh_prev[j] = g_h * z;
            break;
          }
          case RnnMode::RnnTanh:
            dax[j] = dah[j] = g_h * (1 - gate[j] * gate[j]);
            dh_prev[j] = 0;
            break;
          case RnnMode::RnnRelu:
            dax[j] = dah[j] = gate[j] > 0 ? g_h : 0.0;
            dh_prev[j] = 0;
            break;
        }
      }
      const double* x = io.x + (t * p.N + n) * In;
      double* g_x = dx + (t * p.N + n) * In;
      for (int64_t r = 0; r < G * H; ++r) {
        const double* row_ih = w.w_ih + r * In;
        for (int64_t c = 0; c < In; ++c) g_x[c] += row_ih[c] * dax[r];
        const double* row_hh = w.w_hh + r * H;
        for (int64_t c = 0; c < H; ++c) dh_prev[c] += row_hh[c] * dah[r];
        if (gw.w_ih) {
          for (int64_t c = 0; c < In; ++c) gw.w_ih[r * In + c] += dax[r] * x[c];
          for (int64_t c = 0; c < H; ++c) gw.w_hh[r * H + c] += dah[r] * h_prev[c];
        }
        if (gw.b_ih) {
          gw.b_ih[r] += dax[r];
          gw.b_hh[r] += dah[r];
        }
      }
      std::copy(dh_prev.begin(), dh_prev.end(), dh + n * H);
      if (p.mode == RnnMode::Lstm) std::copy(dc_prev.begin(), dc_prev.end(), dc + n * H);
    }
  }
}

}  // namespace

Tensor rnn_f64(const RnnArgs& args, const Tensor& out, const Tensor& hy, const Tensor& cy,
               const Tensor& input, const Tensor& hx, const Tensor& cx,
               const Backend::TensorList& weights) {
  const Plan p = plan_of(args, input);
  const Tensor reserve =
      Tensor::empty({std::max<int64_t>(p.total(), 1) * 8}, DType::UInt8, input.device());
  double* trace = reserve.data<double>();
  const bool lstm = p.mode == RnnMode::Lstm;
  for (int64_t l = 0; l < p.L; ++l) {
    const LayerData io = layer_data(p, l, input, out, trace);
    for (int64_t d = 0; d < p.D; ++d) {
      const int64_t block = l * p.D + d;
      forward_direction(
          p, l, d, io, block_weights(p, weights, block), hx.data<double>() + block * p.N * p.H,
          lstm ? cx.data<double>() + block * p.N * p.H : nullptr, gates_of(p, trace, l, d),
          extra_of(p, trace, l, d), hy.data<double>() + block * p.N * p.H,
          lstm ? cy.data<double>() + block * p.N * p.H : nullptr);
    }
  }
  return args.training ? reserve : Tensor();
}

void rnn_backward_f64(const RnnArgs& args, const Tensor& grad_input, const Tensor& grad_hx,
                      const Tensor& grad_cx, const Backend::TensorList& grad_weights,
                      const Tensor& grad_out, const Tensor& grad_hy, const Tensor& grad_cy,
                      const Tensor& input, const Tensor& hx, const Tensor& cx,
                      const Backend::TensorList& weights, const Tensor& out,
                      const Tensor& reserve) {
  const Plan p = plan_of(args, input);
  double* trace = reserve.data<double>();
  const bool lstm = p.mode == RnnMode::Lstm;
  const int64_t state = p.N * p.H;
  for (const Tensor& g : grad_weights) std::fill_n(g.data<double>(), g.numel(), 0.0);
  std::vector<double> dy(grad_out.data<double>(), grad_out.data<double>() + grad_out.numel());
  std::vector<double> dh(state), dc(state);
  for (int64_t l = p.L - 1; l >= 0; --l) {
    const LayerData io = layer_data(p, l, input, out, trace);
    std::vector<double> dx(static_cast<size_t>(p.T * p.N * p.input_size(l)), 0.0);
    for (int64_t d = 0; d < p.D; ++d) {
      const int64_t block = l * p.D + d;
      const int64_t k = block * p.weights_per_block();
      BlockGrads gw{nullptr, nullptr, nullptr, nullptr};
      if (!grad_weights.empty()) {
        gw.w_ih = grad_weights[k].data<double>();
        gw.w_hh = grad_weights[k + 1].data<double>();
        if (p.has_biases) {
          gw.b_ih = grad_weights[k + 2].data<double>();
          gw.b_hh = grad_weights[k + 3].data<double>();
        }
      }
      if (grad_hy.defined())
        std::copy_n(grad_hy.data<double>() + block * state, state, dh.begin());
      else
        std::fill(dh.begin(), dh.end(), 0.0);
      if (lstm && grad_cy.defined())
        std::copy_n(grad_cy.data<double>() + block * state, state, dc.begin());
      else
        std::fill(dc.begin(), dc.end(), 0.0);
      backward_direction(
          p, l, d, io, block_weights(p, weights, block), gw, hx.data<double>() + block * state,
          lstm ? cx.data<double>() + block * state : nullptr, gates_of(p, trace, l, d),
          extra_of(p, trace, l, d), dy.data(), dx.data(), dh.data(), dc.data());
      if (grad_hx.defined())
        std::copy(dh.begin(), dh.end(), grad_hx.data<double>() + block * state);
      if (lstm && grad_cx.defined())
        std::copy(dc.begin(), dc.end(), grad_cx.data<double>() + block * state);
    }
    dy = std::move(dx);
  }
  if (grad_input.defined()) std::copy(dy.begin(), dy.end(), grad_input.data<double>());
}

}  // namespace rcuda::cpu
