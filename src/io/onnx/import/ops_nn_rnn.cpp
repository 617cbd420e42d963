// ONNX import: LSTM, GRU and RNN (ops_nn.h).
//
// Note [ONNX recurrent layers on rcuda's]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Where the node computes what torch's layers compute (default activations, or Relu for RNN; no
// clip, peepholes or coupled input and forget gates; GRU with linear_before_reset = 1; every
// sequence of full length), it runs rcuda::rnn, the call of rcuda's nn::lstm / gru / rnn, with
// the gate blocks put back in torch's order (LSTM: ONNX i, o, f, c -> torch i, f, g, o; GRU:
// z, r, h -> r, z, n). A model rcuda or PyTorch exported so loads back to the same call. Every
// other case composes the recurrence from matmul, the activations and elementwise ops, step by
// step, as ONNX's equations say; sequences of several lengths run with a mask (a step past a
// sequence's end keeps its state and outputs zeros) and, in reverse, on each sequence's own
// reversal (a gather along time).
#include <optional>
#include <string>
#include <vector>

#include "io/onnx/import/ops_nn.h"
#include "rcuda/autograd/api.h"
#include "rcuda/nn/activation.h"

namespace rcuda::io::onnx_import::nn {
namespace {

enum class Cell { Lstm, Gru, Rnn };

struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

struct Recurrent {
  std::string where;
  Cell cell = Cell::Lstm;
  int64_t hidden = 0;  // 0: R's last dim
  int64_t directions = 1;
  bool reverse = false;                 // direction "reverse"
  bool batch_first = false;             // layout 1
  std::vector<Activation> activations;  // per direction: LSTM f, g, h; GRU f, g; RNN f
  std::optional<double> clip;
  bool input_forget = false, linear_before_reset = false;
  bool torch_activations = true;  // those of torch's layers (Note [ONNX recurrent ...])
  bool relu = false;              // RNN with Relu (torch's rnn_relu)
};

int64_t activations_per_direction(Cell cell) {
  return cell == Cell::Lstm ? 3 : cell == Cell::Gru ? 2 : 1;
}

// ONNX's parameters of each activation: (uses alpha, alpha's default, uses beta, beta's default).
struct ActivationDefaults {
  const char* name;
  bool has_alpha;
  double alpha;
  bool has_beta;
  double beta;
};
const ActivationDefaults kActivations[] = {
    {"Relu", false, 0, false, 0},        {"Tanh", false, 0, false, 0},
    {"Sigmoid", false, 0, false, 0},     {"Affine", true, 1, true, 0},
    {"LeakyRelu", true, 0.01, false, 0}, {"ThresholdedRelu", true, 1, false, 0},
    {"ScaledTanh", true, 1, true, 1},    {"HardSigmoid", true, 0.2, true, 0.5},
    {"Elu", true, 1, false, 0},          {"Softsign", false, 0, false, 0},
    {"Softplus", false, 0, false, 0},
};

// activations with activation_alpha / activation_beta consumed in order by those that take them.
std::vector<Activation> read_activations(NodeReader& node, Cell cell, int64_t directions) {
  static const std::vector<std::string> lstm = {"Sigmoid", "Tanh", "Tanh"},
                                        gru = {"Sigmoid", "Tanh"}, rnn = {"Tanh"};
  std::vector<std::string> names = node.strings("activations");
  const std::vector<std::string>& defaults = cell == Cell::Lstm  ? lstm
                                             : cell == Cell::Gru ? gru
                                                                 : rnn;
  if (names.empty())
    for (int64_t d = 0; d < directions; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  const size_t wanted = static_cast<size_t>(activations_per_direction(cell) * directions);
  if (names.size() != wanted)
    node.fail("activations has " + std::to_string(names.size()) + " names, expected " +
              std::to_string(wanted));
  const std::vector<double> alphas = node.floats("activation_alpha", {});
  const std::vector<double> betas = node.floats("activation_beta", {});
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    const ActivationDefaults* found = nullptr;
    for (const ActivationDefaults& a : kActivations)
      if (name == a.name) found = &a;
    if (found == nullptr) node.unsupported("activation \"" + name + "\"");
    Activation a{name, found->alpha, found->beta};
    if (found->has_alpha && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (found->has_beta && next_beta < betas.size()) a.beta = betas[next_beta++];
    out.push_back(a);
  }
  return out;
}

Recurrent read_recurrent(NodeReader& node, Cell cell) {
  Recurrent r;
  r.where = node.where();
  r.cell = cell;
  r.hidden = node.i("hidden_size", 0);
  const std::string direction = node.s("direction", "forward");
  if (direction == "bidirectional")
    r.directions = 2;
  else if (direction == "reverse")
    r.reverse = true;
  else if (direction != "forward")
    node.fail("direction must be forward, reverse or bidirectional, got \"" + direction + "\"");
  const int64_t layout = node.i("layout", 0);
  if (layout != 0 && layout != 1) node.fail("layout must be 0 or 1, got " + std::to_string(layout));
  r.batch_first = layout == 1;
  r.activations = read_activations(node, cell, r.directions);
  if (node.has("clip")) r.clip = node.f("clip");
  r.input_forget = cell == Cell::Lstm && node.i("input_forget", 0) != 0;
  r.linear_before_reset = cell == Cell::Gru && node.i("linear_before_reset", 0) != 0;
  const std::vector<std::string> defaults =
      cell == Cell::Lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                          : std::vector<std::string>{"Tanh"};
  bool all_relu = cell == Cell::Rnn;
  for (size_t k = 0; k < r.activations.size(); ++k) {
    r.torch_activations =
        r.torch_activations && r.activations[k].name == defaults[k % defaults.size()];
    all_relu = all_relu && r.activations[k].name == "Relu";
  }
  if (all_relu) r.torch_activations = r.relu = true;
  node.host_input(4);  // sequence_lens: whether every sequence is whole decides the path
  return r;
}

Tensor activate(const Activation& a, const Tensor& x) {
  const std::string& n = a.name;
  if (n == "Sigmoid") return rcuda::sigmoid(x);
  if (n == "Tanh") return rcuda::tanh(x);
  if (n == "Relu") return rcuda::relu(x);
  if (n == "Affine") return rcuda::add(rcuda::mul(x, a.alpha), a.beta);
  if (n == "LeakyRelu") return rcuda::leaky_relu(x, a.alpha);
  if (n == "ThresholdedRelu") return rcuda::where(rcuda::gt(x, a.alpha), x, Scalar(0.0));
  if (n == "ScaledTanh") return rcuda::mul(rcuda::tanh(rcuda::mul(x, a.beta)), a.alpha);
  if (n == "HardSigmoid")
    return rcuda::clamp(rcuda::add(rcuda::mul(x, a.alpha), a.beta), Scalar(0.0), Scalar(1.0));
  if (n == "Elu") return rcuda::elu(x, a.alpha);
  if (n == "Softsign") return rcuda::div(x, rcuda::add(rcuda::abs(x), 1.0));
  return rcuda::log1p(rcuda::exp(x));  // Softplus
}

// ---- torch's layers -------------------------------------------------------------------------

// Rows of w [G * H, ...] with its gate blocks in torch's order.
Tensor torch_gate_order(const Tensor& w, Cell cell, int64_t hidden) {
  if (cell == Cell::Rnn) return w;
  const std::vector<int64_t> blocks =
      cell == Cell::Lstm ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{1, 0, 2};
  std::vector<Tensor> parts;
  parts.reserve(blocks.size());
  for (int64_t b : blocks) parts.push_back(w.narrow(0, b * hidden, hidden));
  return rcuda::cat(parts, 0);
}

struct States {
  Tensor y, h, c;  // y [T, D, N, H], h and c [D, N, H]
};

States run_torch_layer(const Recurrent& r, const Tensor& x, const Tensor& w, const Tensor& rw,
                       const Tensor& b, Tensor h0, Tensor c0) {
  const int64_t hidden = rw.size(2), gates = w.size(1) / hidden;
  std::vector<Tensor> weights;
  for (int64_t d = 0; d < r.directions; ++d) {
    weights.push_back(torch_gate_order(w.select(0, d), r.cell, hidden));
    weights.push_back(torch_gate_order(rw.select(0, d), r.cell, hidden));
  }
  if (b.defined()) {
    std::vector<Tensor> with_biases;
    for (int64_t d = 0; d < r.directions; ++d) {
      with_biases.push_back(weights[static_cast<size_t>(2 * d)]);
      with_biases.push_back(weights[static_cast<size_t>(2 * d + 1)]);
      const Tensor bd = b.select(0, d);
      with_biases.push_back(torch_gate_order(bd.narrow(0, 0, gates * hidden), r.cell, hidden));
      with_biases.push_back(
          torch_gate_order(bd.narrow(0, gates * hidden, gates * hidden), r.cell, hidden));
    }
    weights = with_biases;
  }
  ops::RnnParams params;
  params.mode = r.cell == Cell::Lstm  ? ops::RnnMode::Lstm
                : r.cell == Cell::Gru ? ops::RnnMode::Gru
                : r.relu              ? ops::RnnMode::RnnRelu
                                      : ops::RnnMode::RnnTanh;
  params.bidirectional = r.directions == 2;
  const int64_t steps = x.size(0), batch = x.size(1);
  const Shape state_shape = {r.directions, batch, hidden};
  if (r.cell == Cell::Lstm && (h0.defined() || c0.defined())) {
    if (!h0.defined()) h0 = rcuda::zeros(state_shape, TensorOptions(x.dtype(), x.device()));
    if (!c0.defined()) c0 = rcuda::zeros(state_shape, TensorOptions(x.dtype(), x.device()));
  }
  // direction "reverse" is the forward layer over the sequence read backwards.
  Tensor backwards;
  if (r.reverse)
    backwards = rcuda::arange(Scalar(steps - 1), Scalar(int64_t{-1}), Scalar(int64_t{-1}),
                              DType::Int64, x.device());
  const Tensor input = r.reverse ? rcuda::index_select(x, 0, backwards) : x;
  const ops::RnnOutputs o =
      rcuda::rnn(input, h0, r.cell == Cell::Lstm ? c0 : Tensor(), weights, params);
  const Tensor output = r.reverse ? rcuda::index_select(o.output, 0, backwards) : o.output;
  // [T, N, D * H] -> ONNX's [T, D, N, H].
  const Tensor y =
      rcuda::reshape(output, {steps, batch, r.directions, hidden}).permute({0, 2, 1, 3});
  return {y, o.h_n, o.c_n};
}

// ---- the composed recurrence ----------------------------------------------------------------

struct Direction {
  Tensor w, r, wb, rb, p;  // one direction's W, R, W's and R's bias (or undefined), peepholes
  std::vector<Activation> act;
  bool reverse = false;
};

Tensor clip_to(const Recurrent& rec, const Tensor& x) {
  return rec.clip ? rcuda::clamp(x, Scalar(-*rec.clip), Scalar(*rec.clip)) : x;
}

// One direction over x [T, N, I] (already in the order it reads: reversal done by the caller).
// `lengths` [N, 1] int64 on x's device, or undefined when every sequence is whole.
States run_direction(const Recurrent& rec, const Direction& dir, const Tensor& x, Tensor h,
                     Tensor c, const Tensor& lengths) {
  const int64_t hidden = dir.r.size(1), steps = x.size(0);
  Tensor xw = rcuda::matmul(x, dir.w.t());  // [T, N, G * H]
  if (dir.wb.defined()) xw = rcuda::add(xw, dir.wb);
  auto gate = [&](const Tensor& t, int64_t k) { return t.narrow(-1, k * hidden, hidden); };
  std::vector<Tensor> ys;
  for (int64_t t = 0; t < steps; ++t) {
    const Tensor xt = xw.select(0, t);
    Tensor h_new, c_new;
    if (rec.cell == Cell::Gru) {
      // z and r from the whole product; h's block differs with linear_before_reset.
      Tensor hr = rcuda::matmul(h, dir.r.narrow(0, 0, 2 * hidden).t());
      if (dir.rb.defined()) hr = rcuda::add(hr, dir.rb.narrow(0, 0, 2 * hidden));
      const Tensor z = activate(dir.act[0], clip_to(rec, rcuda::add(gate(xt, 0), gate(hr, 0))));
      const Tensor r = activate(dir.act[0], clip_to(rec, rcuda::add(gate(xt, 1), gate(hr, 1))));
      const Tensor rh = dir.r.narrow(0, 2 * hidden, hidden);
      const Tensor rbh = dir.rb.defined() ? dir.rb.narrow(0, 2 * hidden, hidden) : Tensor();
      Tensor recurrent;
      if (rec.linear_before_reset) {
        recurrent = rcuda::matmul(h, rh.t());
        if (rbh.defined()) recurrent = rcuda::add(recurrent, rbh);
        recurrent = rcuda::mul(r, recurrent);
      } else {
        recurrent = rcuda::matmul(rcuda::mul(r, h), rh.t());
        if (rbh.defined()) recurrent = rcuda::add(recurrent, rbh);
      }
      const Tensor n = activate(dir.act[1], clip_to(rec, rcuda::add(gate(xt, 2), recurrent)));
      // (1 - z) n + z h
      h_new = rcuda::add(n, rcuda::mul(z, rcuda::sub(h, n)));
    } else {
      Tensor pre = rcuda::add(xt, rcuda::matmul(h, dir.r.t()));
      if (dir.rb.defined()) pre = rcuda::add(pre, dir.rb);
      if (rec.cell == Cell::Rnn) {
        h_new = activate(dir.act[0], clip_to(rec, pre));
      } else {
        auto peep = [&](const Tensor& g, int64_t k, const Tensor& state) {
          return dir.p.defined()
                     ? rcuda::add(g, rcuda::mul(dir.p.narrow(0, k * hidden, hidden), state))
                     : g;
        };
        const Tensor i = activate(dir.act[0], clip_to(rec, peep(gate(pre, 0), 0, c)));
        const Tensor f = rec.input_forget
                             ? rcuda::sub(rcuda::ones_like(i), i)
                             : activate(dir.act[0], clip_to(rec, peep(gate(pre, 2), 2, c)));
        const Tensor g = activate(dir.act[1], clip_to(rec, gate(pre, 3)));
        c_new = rcuda::add(rcuda::mul(f, c), rcuda::mul(i, g));
        const Tensor o = activate(dir.act[0], clip_to(rec, peep(gate(pre, 1), 1, c_new)));
        h_new = rcuda::mul(o, activate(dir.act[2], c_new));
      }
    }
    if (lengths.defined()) {
      const Tensor alive = rcuda::gt(lengths, Scalar(t));
      ys.push_back(rcuda::where(alive, h_new, Scalar(0.0)));
      h = rcuda::where(alive, h_new, h);
      if (c_new.defined()) c = rcuda::where(alive, c_new, c);
    } else {
      ys.push_back(h_new);
      h = h_new;
      c = c_new;
    }
  }
  if (lengths.defined()) {
    // An empty sequence's final state is zeros, as ONNX Runtime gives (not its initial state).
    const Tensor empty = rcuda::eq(lengths, Scalar(int64_t{0}));
    h = rcuda::where(empty, Scalar(0.0), h);
    if (c.defined()) c = rcuda::where(empty, Scalar(0.0), c);
  }
  return {rcuda::stack(ys, 0), h, c};
}

// The time order each sequence reads in reverse: step t of sequence b is its element
// lengths[b] - 1 - t (t < lengths[b]; later steps stay in place, masked). Its own inverse.
Tensor reversal_index(const std::vector<int64_t>& lengths, int64_t steps, Device device) {
  const int64_t batch = static_cast<int64_t>(lengths.size());
  std::vector<int64_t> index(static_cast<size_t>(steps * batch));
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t b = 0; b < batch; ++b)
      index[static_cast<size_t>(t * batch + b)] =
          t < lengths[static_cast<size_t>(b)] ? lengths[static_cast<size_t>(b)] - 1 - t : t;
  return rcuda::from_data(index.data(), {steps, batch, 1}, DType::Int64, device);
}

Tensor along_time(const Tensor& x, const Tensor& index) {
  return rcuda::gather(x, 0, rcuda::contiguous(index.expand({x.size(0), x.size(1), x.size(2)})));
}

States run_composed(const Recurrent& rec, const Tensor& x, const Tensor& w, const Tensor& rw,
                    const Tensor& b, const Tensor& h0, const Tensor& c0, const Tensor& p,
                    const std::vector<int64_t>& lengths) {
  const int64_t hidden = rw.size(2), gates = w.size(1) / hidden, steps = x.size(0),
                batch = x.size(1);
  const size_t per_direction = static_cast<size_t>(activations_per_direction(rec.cell));
  const Tensor length_tensor =
      lengths.empty() ? Tensor()
                      : rcuda::from_data(lengths.data(), {batch, 1}, DType::Int64, x.device());
  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < rec.directions; ++d) {
    Direction dir;
    dir.w = w.select(0, d);
    dir.r = rw.select(0, d);
    if (b.defined()) {
      dir.wb = b.select(0, d).narrow(0, 0, gates * hidden);
      dir.rb = b.select(0, d).narrow(0, gates * hidden, gates * hidden);
    }
    if (p.defined()) dir.p = p.select(0, d);
    const auto first = rec.activations.begin() +
                       static_cast<std::ptrdiff_t>(per_direction * static_cast<size_t>(d));
    dir.act.assign(first, first + static_cast<std::ptrdiff_t>(per_direction));
    dir.reverse = rec.reverse || d == 1;
    const Shape state_shape = {batch, hidden};
    const Tensor h = h0.defined() ? h0.select(0, d)
                                  : rcuda::zeros(state_shape, TensorOptions(x.dtype(), x.device()));
    Tensor c;
    if (rec.cell == Cell::Lstm)
      c = c0.defined() ? c0.select(0, d)
                       : rcuda::zeros(state_shape, TensorOptions(x.dtype(), x.device()));
    Tensor order;  // reverse: each step's source, as a gather index along time
    if (dir.reverse) {
      const std::vector<int64_t> whole(static_cast<size_t>(batch), steps);
      order = reversal_index(lengths.empty() ? whole : lengths, steps, x.device());
    }
    States s =
        run_direction(rec, dir, order.defined() ? along_time(x, order) : x, h, c, length_tensor);
    ys.push_back(order.defined() ? along_time(s.y, order) : s.y);
    hs.push_back(s.h);
    cs.push_back(s.c);
  }
  return {rcuda::stack(ys, 1), rcuda::stack(hs, 0),
          rec.cell == Cell::Lstm ? rcuda::stack(cs, 0) : Tensor()};
}

// ---- the kernel -----------------------------------------------------------------------------

Kernel make_recurrent(NodeReader& node, Cell cell) {
  const Recurrent rec = read_recurrent(node, cell);
  return [rec](const std::vector<Tensor>& in, const RunContext&) {
    Tensor x = in[0];
    const Tensor& w = in[1];
    const Tensor& rw = in[2];
    const Tensor b = optional_input(in, 3), seq = optional_input(in, 4);
    Tensor h0 = optional_input(in, 5), c0 = optional_input(in, 6);
    const Tensor p = rec.cell == Cell::Lstm ? optional_input(in, 7) : Tensor();
    if (x.dim() != 3 || w.dim() != 3 || rw.dim() != 3)
      fail_at_run(rec.where, "X, W and R must have 3 dims");
    if (w.size(0) != rec.directions || rw.size(0) != rec.directions)
      fail_at_run(rec.where, "W and R have " + std::to_string(w.size(0)) + " and " +
                                 std::to_string(rw.size(0)) + " directions; direction asks " +
                                 std::to_string(rec.directions));
    if (rec.hidden != 0 && rw.size(2) != rec.hidden)
      fail_at_run(rec.where, "R's hidden size " + std::to_string(rw.size(2)) +
                                 " differs from hidden_size " + std::to_string(rec.hidden));
    if (rec.batch_first) {
      x = x.transpose(0, 1);
      if (h0.defined()) h0 = h0.transpose(0, 1);
      if (c0.defined()) c0 = c0.transpose(0, 1);
    }
    const int64_t steps = x.size(0);
    std::vector<int64_t> lengths;
    if (seq.defined()) {
      lengths = host_ints(seq);
      bool whole = true;
      for (int64_t l : lengths) {
        if (l < 0 || l > steps)
          fail_at_run(rec.where, "sequence_lens has " + std::to_string(l) + ", outside [0, " +
                                     std::to_string(steps) + "]");
        whole = whole && l == steps;
      }
      if (whole) lengths.clear();
    }
    const bool torch_layer = rec.torch_activations && !rec.clip && !rec.input_forget &&
                             !p.defined() && lengths.empty() &&
                             (rec.cell != Cell::Gru || rec.linear_before_reset) && steps > 0 &&
                             x.size(1) > 0 && (x.dtype() != DType::Float64 || x.device().is_cpu());
    States s = torch_layer ? run_torch_layer(rec, x, w, rw, b, h0, c0)
                           : run_composed(rec, x, w, rw, b, h0, c0, p, lengths);
    if (rec.batch_first) {
      s.y = s.y.permute({2, 0, 1, 3});
      s.h = s.h.transpose(0, 1);
      if (s.c.defined()) s.c = s.c.transpose(0, 1);
    }
    return std::vector<Tensor>{s.y, s.h, s.c};
  };
}

}  // namespace

Kernel make_lstm(NodeReader& node) { return make_recurrent(node, Cell::Lstm); }
Kernel make_gru(NodeReader& node) { return make_recurrent(node, Cell::Gru); }
Kernel make_rnn(NodeReader& node) { return make_recurrent(node, Cell::Rnn); }

}  // namespace rcuda::io::onnx_import::nn
