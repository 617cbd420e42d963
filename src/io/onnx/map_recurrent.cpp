// Recurrent layers: rnn (tanh, relu), lstm and gru as ONNX's RNN, LSTM and GRU, one ONNX op per
// layer. torch and ONNX compute the same equations but lay the gates out in other orders, so
// each weight's gate blocks are reordered by a Gather of rows; the parameters stay initializers
// under their own names (a runtime folds the Gathers when it loads the model).
#include <string>
#include <vector>

#include "io/onnx/mappings.h"

namespace rcuda::io::onnx_export {
namespace {

// The ONNX op of a mode and where torch's gate blocks go: ONNX's k-th block is torch's
// blocks[k]. LSTM: torch (i, f, g, o), ONNX (i, o, f, c). GRU: torch (r, z, n), ONNX (z, r, h).
struct Layout {
  const char* op;
  std::vector<int64_t> blocks;
  const char* activation;  // RNN only
};

Layout layout_of(Builder& b, const std::string& mode) {
  if (mode == "lstm") return {"LSTM", {0, 3, 1, 2}, nullptr};
  if (mode == "gru") return {"GRU", {1, 0, 2}, nullptr};
  if (mode == "rnn_tanh") return {"RNN", {0}, "Tanh"};
  if (mode == "rnn_relu") return {"RNN", {0}, "Relu"};
  b.fail("unknown recurrent mode \"", mode, "\" (lstm, gru, rnn_tanh or rnn_relu)");
}

void set_strings(onnx::NodeProto* node, const std::string& name,
                 const std::vector<std::string>& values) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& v : values) a->add_strings(v);
}

std::string unsqueeze(Builder& b, const std::string& x, int64_t axis) {
  return b.add1("Unsqueeze", {x, b.ints({axis})});
}

std::string squeeze(Builder& b, const std::string& x, int64_t axis) {
  return b.add1("Squeeze", {x, b.ints({axis})});
}

std::string transpose(Builder& b, const std::string& x, const std::vector<int64_t>& perm) {
  onnx::NodeProto* n = b.add("Transpose", {x}, {});
  set_attr(n, "perm", perm);
  return n->output(0);
}

std::string concat(Builder& b, const std::vector<std::string>& parts, int64_t axis) {
  if (parts.size() == 1) return parts.front();
  onnx::NodeProto* n = b.add("Concat", parts, {});
  set_attr(n, "axis", axis);
  return n->output(0);
}

class Recurrent {
 public:
  explicit Recurrent(Builder& b)
      : b_(b),
        layout_(layout_of(b, b.attr<std::string>("mode"))),
        dtype_(b.out_value().dtype),
        layers_(b.attr<int64_t>("num_layers")),
        hidden_(b.attr<int64_t>("hidden_size")),
        directions_(b.attr_or<bool>("bidirectional", false) ? 2 : 1),
        gates_(static_cast<int64_t>(layout_.blocks.size())),
        unbatched_(b.in_rank(0) == 2),
        batch_first_(b.attr_or<bool>("batch_first", false) && !unbatched_) {
    if (layers_ < 1) b.fail("num_layers must be at least 1, got ", layers_);
    // Dropout between layers draws at random in every run; an inference model has none.
    const double dropout = b.scalar_attr("dropout").to_double();
    if (b.attr_or<bool>("training", true) && dropout > 0 && layers_ > 1)
      b.fail("dropout=", dropout,
             " between layers with training=true has no inference form; trace the model in eval "
             "mode (training=false)");
    const size_t weights = b.node().inputs.size() < 3 ? 0 : b.node().inputs.size() - 3;
    const size_t blocks = static_cast<size_t>(layers_ * directions_);
    if (weights % blocks != 0 || (weights / blocks != 2 && weights / blocks != 4))
      b.fail("expects 2 or 4 weights per layer and direction (", blocks, " of them), got ",
             weights);
    per_block_ = weights / blocks;
    // The row order that puts torch's gate blocks in ONNX's order.
    for (int64_t k : layout_.blocks)
      for (int64_t r = 0; r < hidden_; ++r) rows_.push_back(k * hidden_ + r);
  }

  void run() {
    // The ops run time-major, [seq, batch, input] (layout = 0): not every runtime has layout = 1.
    std::string x = b_.in_as(0, dtype_);
    if (unbatched_) x = unsqueeze(b_, x, 1);
    if (batch_first_) x = transpose(b_, x, {1, 0, 2});
    const std::string h0 = state(1), c0 = state(2);
    std::vector<std::string> h_n, c_n;
    for (int64_t l = 0; l < layers_; ++l) {
      std::vector<std::string> inputs = {x,       weight(l, 0), weight(l, 1),
                                         bias(l), "",           layer_state(h0, l)};
      if (is_lstm()) inputs.push_back(layer_state(c0, l));
      onnx::NodeProto* n =
          b_.add(layout_.op, inputs, {b_.fresh(prefix(l) + "Y"), b_.fresh(prefix(l) + "Y_h")});
      if (is_lstm()) n->add_output(b_.fresh(prefix(l) + "Y_c"));
      set_attr(n, "hidden_size", hidden_);
      if (directions_ == 2) set_attr(n, "direction", std::string("bidirectional"));
      // torch's GRU applies the reset gate after the hidden state's product: r * (W_hn h + b_hn).
      if (std::string(layout_.op) == "GRU") set_attr(n, "linear_before_reset", 1);
      if (layout_.activation != nullptr)
        set_strings(n, "activations",
                    std::vector<std::string>(static_cast<size_t>(directions_), layout_.activation));
      x = layer_output(n->output(0));
      h_n.push_back(n->output(1));
      if (is_lstm()) c_n.push_back(n->output(2));
    }
    if (batch_first_) x = transpose(b_, x, {1, 0, 2});
    finish(x, 0);
    finish(concat(b_, h_n, 0), 1);
    if (is_lstm() && b_.node().outputs.size() > 2) finish(concat(b_, c_n, 0), 2);
  }

 private:
  bool is_lstm() const { return std::string(layout_.op) == "LSTM"; }
  std::string prefix(int64_t l) const {
    return std::string(op_name(b_.node().op)) + "_layer" + std::to_string(l) + "/";
  }

  // Weight `which` (0 w_ih, 1 w_hh, 2 b_ih, 3 b_hh) of layer l, direction d, its gate blocks
  // in ONNX's order.
  std::string gate_rows(int64_t l, int64_t d, size_t which) {
    const size_t at = 3 + static_cast<size_t>(l * directions_ + d) * per_block_ + which;
    const std::string w = b_.in_as(at, dtype_);
    if (gates_ == 1) return w;
    onnx::NodeProto* n = b_.add("Gather", {w, b_.ints(rows_)}, {});
    set_attr(n, "axis", 0);
    return n->output(0);
  }

  // W (which = 0) or R (which = 1): [num_directions, G * H, in].
  std::string weight(int64_t l, size_t which) {
    std::vector<std::string> per_direction;
    for (int64_t d = 0; d < directions_; ++d)
      per_direction.push_back(unsqueeze(b_, gate_rows(l, d, which), 0));
    return concat(b_, per_direction, 0);
  }

  // B = [W_b, R_b] per direction: [num_directions, 2 * G * H]; absent biases are ONNX's zeros.
  std::string bias(int64_t l) {
    if (per_block_ < 4) return "";
    std::vector<std::string> per_direction;
    for (int64_t d = 0; d < directions_; ++d)
      per_direction.push_back(
          unsqueeze(b_, concat(b_, {gate_rows(l, d, 2), gate_rows(l, d, 3)}, 0), 0));
    return concat(b_, per_direction, 0);
  }

  // hx or cx as [num_layers * num_directions, batch, H] ("" when not given: ONNX's zeros).
  std::string state(size_t i) {
    if (!b_.has_in(i)) return "";
    const std::string s = b_.in_as(i, dtype_);
    return unbatched_ ? unsqueeze(b_, s, 1) : s;
  }

  // Layer l's rows of a state: [num_directions, batch, H].
  std::string layer_state(const std::string& s, int64_t l) {
    if (s.empty() || layers_ == 1) return s;
    return b_.add1("Slice",
                   {s, b_.ints({l * directions_}), b_.ints({(l + 1) * directions_}), b_.ints({0})});
  }

  // Y [seq, num_directions, batch, H] -> [seq, batch, num_directions * H], torch's output and
  // the next layer's input.
  std::string layer_output(const std::string& y) {
    if (directions_ == 1) return squeeze(b_, y, 1);
    return b_.add1("Reshape", {transpose(b_, y, {0, 2, 1, 3}), b_.ints({0, 0, -1})});
  }

  // Output i of the node; unbatched results lose the batch dim (dim 1: output's, h_n's, c_n's).
  void finish(const std::string& v, size_t i) {
    b_.add("Identity", {unbatched_ ? squeeze(b_, v, 1) : v}, {b_.out(i)});
  }

  Builder& b_;
  Layout layout_;
  DType dtype_;
  int64_t layers_, hidden_, directions_, gates_;
  bool unbatched_, batch_first_;
  size_t per_block_ = 0;
  std::vector<int64_t> rows_;
};

}  // namespace

void recurrent(Builder& b) { Recurrent(b).run(); }

}  // namespace rcuda::io::onnx_export
