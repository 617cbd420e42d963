// Values of the recurrent layers (rcuda/ops/rnn.h, rcuda/nn/rnn.h) against the double loops of
// tests/support/rnn_reference.h: LSTM, GRU and RNN tanh/relu over layers, directions, biases,
// layouts and initial states, in float32 (oneDNN) and float64 (the CPU's loops), the half types
// through float32, non-contiguous operands, empty sequences and batches, and every argument
// check's message.
#include <string>

#include "ops/rnn_test_util.h"
#include "rcuda/ops/rnn.h"

namespace rcuda::test {
namespace {

double value_tolerance(DType dtype) {
  return dtype == DType::Float64 ? 1e-12 : dtype == DType::Float32 ? 1e-5 : 2 * tolerance(dtype);
}

// Runs nn::rnn on the case's inputs and compares output, h_n and c_n with the reference.
void expect_matches_reference(const RnnCase& c, const RnnInputs& in, DType dtype,
                              const std::string& what) {
  const nn::RnnResult r = nn::rnn(in.x, in.hx, in.cx, in.w, rnn_options(c));
  const RnnReferenceResult e = rnn_reference(c.spec, in.ref.x, in.ref.h0, in.ref.c0, in.ref.w);
  const double tol = value_tolerance(dtype);
  const std::string where = c.str() + " " + dtype_name(dtype) + " " + what;
  EXPECT_EQ(r.output.dtype(), dtype) << where;
  EXPECT_TRUE(close_scaled(time_major_values(r.output, c), e.output, tol)) << where << " output";
  EXPECT_TRUE(close_scaled(to_doubles(r.h_n), e.h_n, tol)) << where << " h_n";
  const bool unbatched = c.layout == RnnLayout::Unbatched;
  const int64_t DH = c.spec.directions * c.spec.H;
  const Shape out_shape = unbatched                           ? Shape{c.spec.T, DH}
                          : c.layout == RnnLayout::BatchFirst ? Shape{c.spec.N, c.spec.T, DH}
                                                              : Shape{c.spec.T, c.spec.N, DH};
  EXPECT_EQ(r.output.shape(), out_shape) << where;
  const Shape state =
      unbatched ? Shape{c.spec.layers * c.spec.directions, c.spec.H} : c.spec.state_shape();
  EXPECT_EQ(r.h_n.shape(), state) << where;
  if (c.spec.mode == RnnMode::Lstm) {
    ASSERT_TRUE(r.c_n.defined()) << where;
    EXPECT_EQ(r.c_n.shape(), state) << where;
    EXPECT_TRUE(close_scaled(to_doubles(r.c_n), e.c_n, tol)) << where << " c_n";
  } else {
    EXPECT_FALSE(r.c_n.defined()) << where;
  }
}

TEST(RnnValues, MatchDoubleLoopsInFloat32AndFloat64) {
  for (DType dtype : {DType::Float32, DType::Float64})
    for (const RnnCase& c : rnn_cases())
      expect_matches_reference(c, make_rnn_inputs(c, dtype), dtype, "");
}

TEST(RnnValues, HalfTypesRunThroughFloat32) {
  for (DType dtype : {DType::Float16, DType::BFloat16})
    for (const RnnCase& c : rnn_cases())
      expect_matches_reference(c, make_rnn_inputs(c, dtype), dtype, "");
}

TEST(RnnValues, NonContiguousOperands) {
  int strided = 0;
  for (DType dtype : {DType::Float32, DType::Float64})
    for (const RnnCase& c : rnn_cases()) {
      RnnInputs in = make_rnn_inputs(c, dtype);
      in.x = transposed_copy(in.x);
      if (in.hx.defined()) in.hx = transposed_copy(in.hx);
      if (in.cx.defined()) in.cx = transposed_copy(in.cx);
      for (Tensor& w : in.w) w = transposed_copy(w);
      strided += !in.x.is_contiguous();  // (size-1 dims can leave a transpose contiguous)
      expect_matches_reference(c, in, dtype, "non-contiguous");
    }
  EXPECT_GE(strided, 20);
}

// The same (float32-representable) values through oneDNN and through the float64 loops.
TEST(RnnValues, Float32AgreesWithFloat64) {
  for (const RnnCase& c : rnn_cases()) {
    const RnnInputs in32 = make_rnn_inputs(c, DType::Float32);
    auto as64 = [](const Tensor& t) { return t.defined() ? to(t, DType::Float64) : t; };
    std::vector<Tensor> w64;
    for (const Tensor& w : in32.w) w64.push_back(as64(w));
    const nn::RnnResult a = nn::rnn(in32.x, in32.hx, in32.cx, in32.w, rnn_options(c));
    const nn::RnnResult b =
        nn::rnn(as64(in32.x), as64(in32.hx), as64(in32.cx), w64, rnn_options(c));
    EXPECT_TRUE(close_scaled(to_doubles(a.output), to_doubles(b.output), 1e-5)) << c.str();
    EXPECT_TRUE(close_scaled(to_doubles(a.h_n), to_doubles(b.h_n), 1e-5)) << c.str();
    if (a.c_n.defined()) {
      EXPECT_TRUE(close_scaled(to_doubles(a.c_n), to_doubles(b.c_n), 1e-5)) << c.str();
    }
  }
}

// A training forward (which keeps the reserve) computes what inference does.
TEST(RnnValues, TrainingForwardKeepsAReserveAndTheSameValues) {
  for (DType dtype : {DType::Float32, DType::Float64})
    for (const RnnCase& c : rnn_cases()) {
      const RnnInputs in = make_rnn_inputs(c, dtype);
      ops::RnnParams p;
      p.mode = c.spec.mode;
      p.num_layers = c.spec.layers;
      p.bidirectional = c.spec.directions == 2;
      p.batch_first = c.layout == RnnLayout::BatchFirst;
      const ops::RnnOutputs inference = ops::rnn_forward(in.x, in.hx, in.cx, in.w, p);
      p.training = true;
      const ops::RnnOutputs training = ops::rnn_forward(in.x, in.hx, in.cx, in.w, p);
      EXPECT_FALSE(inference.reserve.defined()) << c.str();
      ASSERT_TRUE(training.reserve.defined()) << c.str();
      EXPECT_EQ(training.reserve.dtype(), DType::UInt8);
      EXPECT_TRUE(all_close(to_doubles(training.output), to_doubles(inference.output), 1e-6))
          << c.str();
      EXPECT_TRUE(all_close(to_doubles(training.h_n), to_doubles(inference.h_n), 1e-6)) << c.str();
    }
}

// T = 0: an empty output and the initial states as h_n and c_n; N = 0: everything empty.
TEST(RnnValues, EmptySequenceAndBatch) {
  for (RnnMode mode : {RnnMode::Lstm, RnnMode::Gru, RnnMode::RnnTanh, RnnMode::RnnRelu})
    for (DType dtype : {DType::Float32, DType::Float64}) {
      const bool lstm = mode == RnnMode::Lstm;
      RnnCase c{spec(mode, 2, 2, true, 0, 3, 4, 2), true};
      RnnInputs in = make_rnn_inputs(c, dtype);
      const nn::RnnResult r = nn::rnn(in.x, in.hx, in.cx, in.w, rnn_options(c));
      EXPECT_EQ(r.output.shape(), (Shape{0, 3, 4})) << rnn_mode_name(mode);
      EXPECT_EQ(to_doubles(r.h_n), in.ref.h0) << rnn_mode_name(mode);
      if (lstm) {
        EXPECT_EQ(to_doubles(r.c_n), in.ref.c0);
      }
      const nn::RnnResult z = nn::rnn(in.x, Tensor(), Tensor(), in.w, rnn_options(c));
      EXPECT_EQ(to_doubles(z.h_n), std::vector<double>(24, 0.0)) << rnn_mode_name(mode);
      RnnCase b{spec(mode, 1, 1, false, 3, 0, 2, 5), false};
      in = make_rnn_inputs(b, dtype);
      const nn::RnnResult e = nn::rnn(in.x, Tensor(), Tensor(), in.w, rnn_options(b));
      EXPECT_EQ(e.output.shape(), (Shape{3, 0, 5}));
      EXPECT_EQ(e.h_n.shape(), (Shape{1, 0, 5}));
      if (lstm) {
        EXPECT_EQ(e.c_n.shape(), (Shape{1, 0, 5}));
      }
    }
}

// ---- argument checks: each message names the op, the argument and the values ----

struct Valid {
  Tensor x = random_tensor({3, 2, 4}, DType::Float32);
  Tensor hx = random_tensor({2, 2, 5}, DType::Float32);
  Tensor cx = random_tensor({2, 2, 5}, DType::Float32);
  std::vector<Tensor> w;
  ops::RnnParams p;
  Valid() {
    p.num_layers = 2;
    // LSTM, 2 layers, 1 direction, H = 5.
    for (const Shape& s : spec(RnnMode::Lstm, 2, 1, true, 3, 2, 4, 5).weight_shapes())
      w.push_back(random_tensor(s, DType::Float32));
  }
  std::string run() const {
    return error_message([&] { ops::rnn_forward(x, hx, cx, w, p); });
  }
};

TEST(RnnErrors, ValidArgumentsPass) { EXPECT_EQ(Valid().run(), "(no error)"); }

TEST(RnnErrors, NumLayersInputRankAndDtype) {
  Valid v;
  v.p.num_layers = 0;
  EXPECT_EQ(v.run(), "lstm: num_layers must be >= 1, got 0");
  v = Valid();
  v.x = Tensor();
  EXPECT_EQ(v.run(), "lstm: input is undefined");
  v = Valid();
  v.x = random_tensor({3, 2, 4, 1}, DType::Float32);
  EXPECT_EQ(v.run(),
            "lstm: input must be 3-D [seq_len, batch, input_size] or 2-D unbatched [seq_len, "
            "input_size], got shape [3, 2, 4, 1]");
  v.p.batch_first = true;
  v.x = random_tensor({4}, DType::Float32);
  EXPECT_EQ(v.run(),
            "lstm: input must be 3-D [batch, seq_len, input_size] or 2-D unbatched [seq_len, "
            "input_size], got shape [4]");
  v = Valid();
  v.x = random_tensor({3, 2, 4}, DType::Int64, 0, 5);
  EXPECT_EQ(v.run(),
            "lstm: expected a floating dtype for input, got int64 (convert with to(float32))");
  v = Valid();
  v.x = to(v.x, DType::Float8E4M3FN);
  EXPECT_NE(v.run().find("lstm: not supported for float8"), std::string::npos) << v.run();
  v = Valid();
  v.x = random_tensor({3, 2, 0}, DType::Float32);
  EXPECT_EQ(v.run(),
            "lstm: input_size (input's last dim) must be >= 1, got input of shape [3, 2, 0]");
}

TEST(RnnErrors, WeightCountShapesAndDtypes) {
  Valid v;
  v.w.pop_back();
  EXPECT_EQ(v.run(),
            "lstm: expected 8 weights (weight_ih, weight_hh, bias_ih, bias_hh for each of 2 layers "
            "x 1 directions) or 4 (without biases), got 7");
  v = Valid();
  v.w[1] = random_tensor({20, 4}, DType::Float32);
  EXPECT_EQ(v.run(),
            "lstm: weight_hh_l0 must be [4 * hidden_size, hidden_size], got shape [20, 4]");
  v.w[1] = Tensor();
  EXPECT_EQ(v.run(), "lstm: weight_hh_l0 is undefined");
  v.w[1] = random_tensor({0, 0}, DType::Float32);
  EXPECT_EQ(v.run(), "lstm: hidden_size (weight_hh_l0's second dim) must be >= 1, got 0");
  v = Valid();
  v.w[0] = random_tensor({20, 3}, DType::Float32);
  EXPECT_EQ(v.run(),
            "lstm: weight_ih_l0 must have shape [20, 4] ([gates * hidden_size, input_size]), got "
            "shape [20, 3]");
  v = Valid();
  v.w[4] = random_tensor({20, 4}, DType::Float32);
  EXPECT_EQ(v.run(),
            "lstm: weight_ih_l1 must have shape [20, 5] ([gates * hidden_size, num_directions * "
            "hidden_size]), got shape [20, 4]");
  v = Valid();
  v.w[7] = random_tensor({5}, DType::Float32);
  EXPECT_EQ(v.run(), "lstm: bias_hh_l1 must have shape [20], got shape [5]");
  v = Valid();
  v.w[6] = Tensor();
  EXPECT_EQ(v.run(), "lstm: bias_ih_l1 is undefined");
  v = Valid();
  v.w[2] = random_tensor({20}, DType::Float64);
  EXPECT_EQ(v.run(),
            "lstm: bias_ih_l0 is float64 but input is float32 (every tensor must have one dtype)");
  // Bidirectional names: the reverse direction's weights.
  Valid b;
  b.p.bidirectional = true;
  b.p.num_layers = 1;
  b.p.mode = RnnMode::Gru;
  b.cx = Tensor();
  b.hx = random_tensor({2, 2, 5}, DType::Float32);
  b.w.clear();
  for (const Shape& s : spec(RnnMode::Gru, 1, 2, false, 3, 2, 4, 5).weight_shapes())
    b.w.push_back(random_tensor(s, DType::Float32));
  EXPECT_EQ(b.run(), "(no error)");
  b.w[3] = random_tensor({15, 4}, DType::Float32);
  EXPECT_EQ(b.run(), "gru: weight_hh_l0_reverse must have shape [15, 5], got shape [15, 4]");
}

TEST(RnnErrors, InitialStates) {
  Valid v;
  v.hx = random_tensor({2, 3, 5}, DType::Float32);
  EXPECT_EQ(v.run(),
            "lstm: hx must have shape [2, 2, 5] ([num_layers * num_directions, batch, "
            "hidden_size]), got shape [2, 3, 5]");
  v = Valid();
  v.cx = random_tensor({2, 5}, DType::Float32);
  EXPECT_EQ(v.run(),
            "lstm: cx must have shape [2, 2, 5] ([num_layers * num_directions, batch, "
            "hidden_size]), got shape [2, 5]");
  v = Valid();
  v.hx = random_tensor({2, 2, 5}, DType::Float64);
  EXPECT_EQ(v.run(), "lstm: hx is float64 but input is float32 (every tensor must have one dtype)");
  v = Valid();
  v.x = random_tensor({3, 4}, DType::Float32);
  EXPECT_EQ(v.run(),
            "lstm: hx must have shape [2, 5] ([num_layers * num_directions, hidden_size] for "
            "unbatched input), got shape [2, 2, 5]");
  Valid g;
  g.p.mode = RnnMode::RnnTanh;
  g.w.clear();
  for (const Shape& s : spec(RnnMode::RnnTanh, 2, 1, true, 3, 2, 4, 5).weight_shapes())
    g.w.push_back(random_tensor(s, DType::Float32));
  EXPECT_EQ(g.run(),
            "rnn_tanh: cx (the initial cell state) is for LSTM only, got one of shape "
            "[2, 2, 5]");
  g.cx = Tensor();
  EXPECT_EQ(g.run(), "(no error)");
}

TEST(RnnErrors, BackwardArguments) {
  Valid v;
  v.p.training = true;
  const ops::RnnOutputs r = ops::rnn_forward(v.x, v.hx, v.cx, v.w, v.p);
  auto backward = [&](const Tensor& g_out, const Tensor& g_h, const Tensor& output,
                      const Tensor& reserve) {
    return error_message([&] {
      ops::rnn_backward(g_out, g_h, Tensor(), v.x, v.hx, v.cx, v.w, output, reserve, v.p);
    });
  };
  EXPECT_EQ(backward(ones_like(r.output), Tensor(), r.output, r.reserve), "(no error)");
  EXPECT_EQ(backward(random_tensor({3, 2, 4}, DType::Float32), Tensor(), r.output, r.reserve),
            "lstm: grad_output must have shape [3, 2, 5], got shape [3, 2, 4]");
  EXPECT_EQ(backward(Tensor(), random_tensor({2, 5}, DType::Float32), r.output, r.reserve),
            "lstm: grad_h_n must have shape [2, 2, 5], got shape [2, 5]");
  EXPECT_EQ(backward(Tensor(), random_tensor({2, 2, 5}, DType::Float64), r.output, r.reserve),
            "lstm: grad_h_n is float64 but input is float32 (every tensor must have one dtype)");
  EXPECT_EQ(backward(Tensor(), Tensor(), Tensor(), r.reserve),
            "lstm: output (the forward's) is undefined");
  EXPECT_EQ(backward(Tensor(), Tensor(), r.output, Tensor()),
            "lstm: backward needs the reserve of a forward run with training = true");
}

TEST(RnnErrors, Dropout) {
  Valid v;
  nn::RnnOptions o;
  o.num_layers = 2;
  o.dropout = 1.5;
  EXPECT_EQ(error_message([&] { nn::rnn(v.x, v.hx, v.cx, v.w, o); }),
            "lstm: dropout must be in [0, 1], got 1.5");
  o.dropout = -0.1;
  EXPECT_EQ(error_message([&] { nn::rnn(v.x, v.hx, v.cx, v.w, o); }),
            "lstm: dropout must be in [0, 1], got -0.1");
  // With dropout the layers run one call each, yet errors still name the whole stack.
  o.dropout = 0.5;
  v.w[4] = random_tensor({20, 4}, DType::Float32);
  EXPECT_EQ(error_message([&] { nn::rnn(v.x, v.hx, v.cx, v.w, o); }),
            "lstm: weight_ih_l1 must have shape [20, 5] ([gates * hidden_size, num_directions * "
            "hidden_size]), got shape [20, 4]");
}

}  // namespace
}  // namespace rcuda::test
