// The recurrent primitives on CUDA (cuDNN's RNN API, src/backend/cuda/rnn_cudnn.cpp) against the
// CPU backend, called directly through the Backend interface on the same random operands: the
// CPU's float64 loops (themselves checked against double loops and finite differences in
// tests/nn) and its float32 oneDNN path. LSTM, GRU and both plain RNNs; 1 to 3 layers, one or two
// directions, with and without biases, N = 1, T = 1 and odd sizes; the outputs out, hy, cy and
// every gradient of rnn_backward, with grad_hy / grad_cy given and left undefined; float16 and
// bfloat16; inference mode; float64's refusal; repeatability; many shapes in a row through the
// descriptor cache.
//
// Tolerances. Each comparison is relative to the largest |reference| of the tensor compared (a
// wrong gate, bias or direction is off by a fair part of that scale) and grows with the square
// root of T * layers, the number of recurrent steps along which roundings compound:
//  - float32 with TF32 off (set around every float32 comparison): 1e-4. Gate sums of I + H
//    products in float32 on both sides, a few roundings per step.
//  - float32 with TF32: 5e-3 (tensor cores round both factors to 10 mantissa bits).
//  - float16: 1e-2, bfloat16: 4e-2 against the CPU's float32 run of the same rounded operands:
//    cuDNN keeps the states and the gate gradients in the half type between steps (2^-11 and
//    2^-8 per rounding) and accumulates in float32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "rcuda/backend/backend.h"
#include "rcuda/doctor.h"
#include "support/devices.h"

namespace rcuda {
namespace {

using Mode = Backend::RnnMode;
using test::kCpu;
using test::kCuda;
using test::values;

// Sets the TF32 switch that cuDNN's float32 layers follow, for a scope.
class RnnTf32 {
 public:
  explicit RnnTf32(bool allow) : previous_(cuda::allow_conv_tf32()) {
    cuda::set_allow_conv_tf32(allow);
  }
  ~RnnTf32() { cuda::set_allow_conv_tf32(previous_); }
  RnnTf32(const RnnTf32&) = delete;
  RnnTf32& operator=(const RnnTf32&) = delete;

 private:
  bool previous_;
};

struct RnnCase {
  const char* name;
  Mode mode;
  int64_t layers, directions, steps, batch, input_size, hidden;
  bool biases;

  bool lstm() const { return mode == Mode::Lstm; }
  int64_t gates() const { return mode == Mode::Lstm ? 4 : mode == Mode::Gru ? 3 : 1; }
  int64_t per_block() const { return biases ? 4 : 2; }
  Backend::RnnArgs args(bool training) const {
    Backend::RnnArgs a;
    a.mode = mode;
    a.layers = layers;
    a.directions = directions;
    a.hidden = hidden;
    a.has_biases = biases;
    a.training = training;
    return a;
  }
  Shape state_shape() const { return {layers * directions, batch, hidden}; }
  Shape out_shape() const { return {steps, batch, directions * hidden}; }
  // The contract's weights: per layer and direction w_ih, w_hh (b_ih, b_hh).
  std::vector<Shape> weight_shapes() const {
    std::vector<Shape> shapes;
    for (int64_t block = 0; block < layers * directions; ++block) {
      const int64_t in = block < directions ? input_size : directions * hidden;
      shapes.push_back({gates() * hidden, in});
      shapes.push_back({gates() * hidden, hidden});
      if (biases) {
        shapes.push_back({gates() * hidden});
        shapes.push_back({gates() * hidden});
      }
    }
    return shapes;
  }
};

const std::vector<RnnCase>& cases() {
  static const std::vector<RnnCase> c = {
      {"LSTM", Mode::Lstm, 1, 1, 5, 3, 4, 6, true},
      {"LSTM, 2 layers, bidirectional, I = 5, H = 7", Mode::Lstm, 2, 2, 4, 3, 5, 7, true},
      {"LSTM, 3 layers, without biases", Mode::Lstm, 3, 1, 3, 2, 5, 7, false},
      {"LSTM, N = 1 and T = 1, 2 layers, bidirectional", Mode::Lstm, 2, 2, 1, 1, 5, 7, true},
      {"GRU", Mode::Gru, 1, 1, 5, 3, 5, 7, true},
      {"GRU, 2 layers, bidirectional, without biases", Mode::Gru, 2, 2, 4, 2, 5, 7, false},
      {"GRU, 3 layers, bidirectional", Mode::Gru, 3, 2, 3, 2, 4, 5, true},
      {"GRU, T = 1", Mode::Gru, 1, 1, 1, 4, 3, 8, true},
      {"RNN tanh, bidirectional", Mode::RnnTanh, 1, 2, 6, 3, 5, 7, true},
      {"RNN tanh, 2 layers, without biases", Mode::RnnTanh, 2, 1, 4, 2, 3, 4, false},
      {"RNN relu, 2 layers, bidirectional", Mode::RnnRelu, 2, 2, 5, 3, 5, 7, true},
      {"RNN relu, N = 1", Mode::RnnRelu, 1, 1, 7, 1, 5, 7, true},
  };
  return c;
}

const char* weight_name(const RnnCase& c, size_t i) {
  static const char* names[] = {"w_ih", "w_hh", "b_ih", "b_hh"};
  return names[i % static_cast<size_t>(c.per_block())];
}

// The operands of one call, on one device in one dtype.
struct RnnInputs {
  Tensor input, hx, cx;
  std::vector<Tensor> weights;
  Tensor grad_out, grad_hy, grad_cy;

  RnnInputs on(Device device, DType dtype) const {
    const auto convert = [&](const Tensor& t) {
      return t.defined() ? rcuda::to(t, device, dtype) : Tensor();
    };
    RnnInputs r;
    r.input = convert(input);
    r.hx = convert(hx);
    r.cx = convert(cx);
    for (const Tensor& w : weights) r.weights.push_back(convert(w));
    r.grad_out = convert(grad_out);
    r.grad_hy = convert(grad_hy);
    r.grad_cy = convert(grad_cy);
    return r;
  }
};

// Fresh operands held in float64 on the CPU with values exact in `dtype`: data, states and
// output gradients uniform in [-1, 1), weights in PyTorch's [-1/sqrt(H), 1/sqrt(H)).
//
// With `relu_kink_free`, a ReLU RNN's data, states, weights and biases are positive instead
// (weights in [0, 1/(2 sqrt(H))), biases from 0.05), so that every pre-activation is at least
// 0.05 and none lies within rounding of ReLU's kink. The half-type comparison needs this: cuDNN
// keeps the states in the half type between steps, so a pre-activation within a rounding of 0
// can fall on the other side of the kink than the CPU's float32 one, and that row's gradient
// then differs by a weight's size (seen for one seed in bfloat16). The float32 and float64
// comparisons keep signed operands, which cover the kink's zero side.
RnnInputs random_inputs(const RnnCase& c, DType dtype, bool relu_kink_free = false) {
  const bool positive = relu_kink_free && c.mode == Mode::RnnRelu;
  const auto draw = [&](const Shape& shape, double low, double high) {
    return rcuda::to(test::random_tensor(shape, dtype, low, high), DType::Float64);
  };
  const auto signed_draw = [&](const Shape& shape, double bound) {
    return positive ? draw(shape, 0.05, bound) : draw(shape, -bound, bound);
  };
  RnnInputs x;
  x.input = signed_draw({c.steps, c.batch, c.input_size}, 1);
  x.hx = signed_draw(c.state_shape(), 1);
  if (c.lstm()) x.cx = draw(c.state_shape(), -1, 1);
  const double bound = 1 / std::sqrt(static_cast<double>(c.hidden));
  for (const Shape& s : c.weight_shapes()) {
    const bool bias = s.size() == 1;
    x.weights.push_back(!positive ? draw(s, -bound, bound)
                        : bias    ? draw(s, 0.05, bound)
                                  : draw(s, 0, bound / 2));
  }
  x.grad_out = draw(c.out_shape(), -1, 1);
  x.grad_hy = draw(c.state_shape(), -1, 1);
  if (c.lstm()) x.grad_cy = draw(c.state_shape(), -1, 1);
  return x;
}

struct RnnResult {
  Tensor out, hy, cy, reserve;
  Tensor grad_input, grad_hx, grad_cx;
  std::vector<Tensor> grad_weights;
};

// Which gradients a backward call asks for, and whether grad_hy / grad_cy are passed.
struct Wanted {
  bool state_gradients_given = true;
  bool input = true, state = true, weights = true;
};

RnnResult forward(const RnnCase& c, const RnnInputs& x, bool training) {
  const Device device = x.input.device();
  const DType dtype = x.input.dtype();
  RnnResult r;
  r.out = Tensor::empty(c.out_shape(), dtype, device);
  r.hy = Tensor::empty(c.state_shape(), dtype, device);
  if (c.lstm()) r.cy = Tensor::empty(c.state_shape(), dtype, device);
  r.reserve =
      backend_for(device).rnn(c.args(training), r.out, r.hy, r.cy, x.input, x.hx, x.cx, x.weights);
  return r;
}

void backward(const RnnCase& c, const RnnInputs& x, RnnResult* r, const Wanted& w) {
  const Device device = x.input.device();
  const DType dtype = x.input.dtype();
  if (w.input) r->grad_input = Tensor::empty(x.input.shape(), dtype, device);
  if (w.state) r->grad_hx = Tensor::empty(c.state_shape(), dtype, device);
  if (w.state && c.lstm()) r->grad_cx = Tensor::empty(c.state_shape(), dtype, device);
  if (w.weights)
    for (const Tensor& weight : x.weights)
      r->grad_weights.push_back(Tensor::empty(weight.shape(), dtype, device));
  const Tensor grad_hy = w.state_gradients_given ? x.grad_hy : Tensor();
  const Tensor grad_cy = w.state_gradients_given ? x.grad_cy : Tensor();
  backend_for(device).rnn_backward(c.args(true), r->grad_input, r->grad_hx, r->grad_cx,
                                   r->grad_weights, x.grad_out, grad_hy, grad_cy, x.input, x.hx,
                                   x.cx, x.weights, r->out, r->reserve);
}

// A training forward, then its backward.
RnnResult run(const RnnCase& c, const RnnInputs& x, const Wanted& w = Wanted()) {
  RnnResult r = forward(c, x, true);
  backward(c, x, &r, w);
  return r;
}

double tolerance(const RnnCase& c, DType dtype, bool tf32 = false) {
  const double steps = std::sqrt(static_cast<double>(c.steps * c.layers));
  switch (dtype) {
    case DType::Float16:
      return 1e-2 * steps;
    case DType::BFloat16:
      return 4e-2 * steps;
    default:
      return (tf32 ? 5e-3 : 1e-4) * steps;
  }
}

// |got - ref| <= tol * max(1, largest |ref|), elementwise (NaN fails).
::testing::AssertionResult near(const Tensor& got, const Tensor& ref, double tol) {
  if (got.defined() != ref.defined())
    return ::testing::AssertionFailure() << (got.defined() ? "defined" : "undefined") << " vs "
                                         << (ref.defined() ? "defined" : "undefined");
  if (!got.defined()) return ::testing::AssertionSuccess();
  if (got.shape() != ref.shape())
    return ::testing::AssertionFailure()
           << "shape " << shape_str(got.shape()) << " vs " << shape_str(ref.shape());
  const std::vector<double> g = values(got), r = values(ref);
  double scale = 1;
  for (double v : r) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::fabs(g[i] - r[i]) <= tol * scale))
      return ::testing::AssertionFailure() << "element " << i << ": " << g[i] << " vs " << r[i]
                                           << " (tolerance " << tol << " x scale " << scale << ")";
  return ::testing::AssertionSuccess();
}

void expect_outputs_near(const RnnResult& got, const RnnResult& ref, double tol) {
  EXPECT_TRUE(near(got.out, ref.out, tol)) << "out";
  EXPECT_TRUE(near(got.hy, ref.hy, tol)) << "hy";
  EXPECT_TRUE(near(got.cy, ref.cy, tol)) << "cy";
}

void expect_near(const RnnCase& c, const RnnResult& got, const RnnResult& ref, double tol) {
  expect_outputs_near(got, ref, tol);
  EXPECT_TRUE(near(got.grad_input, ref.grad_input, tol)) << "grad_input";
  EXPECT_TRUE(near(got.grad_hx, ref.grad_hx, tol)) << "grad_hx";
  EXPECT_TRUE(near(got.grad_cx, ref.grad_cx, tol)) << "grad_cx";
  ASSERT_EQ(got.grad_weights.size(), ref.grad_weights.size());
  for (size_t i = 0; i < got.grad_weights.size(); ++i)
    EXPECT_TRUE(near(got.grad_weights[i], ref.grad_weights[i], tol))
        << "gradient of " << weight_name(c, i) << " of block " << i / c.per_block();
}

void expect_identical(const Tensor& a, const Tensor& b, const char* what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (a.defined()) {
    EXPECT_EQ(values(a), values(b)) << what;
  }
}

void expect_identical(const RnnResult& a, const RnnResult& b) {
  expect_identical(a.out, b.out, "out");
  expect_identical(a.hy, b.hy, "hy");
  expect_identical(a.cy, b.cy, "cy");
  expect_identical(a.grad_input, b.grad_input, "grad_input");
  expect_identical(a.grad_hx, b.grad_hx, "grad_hx");
  expect_identical(a.grad_cx, b.grad_cx, "grad_cx");
  ASSERT_EQ(a.grad_weights.size(), b.grad_weights.size());
  for (size_t i = 0; i < a.grad_weights.size(); ++i)
    expect_identical(a.grad_weights[i], b.grad_weights[i], "a weight gradient");
}

TEST(CudaRnn, Float32MatchesTheCpuInFloat64AndFloat32) {
  RCUDA_REQUIRE_CUDA();
  const RnnTf32 tf32(false);
  for (const RnnCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const RnnInputs x = random_inputs(c, DType::Float32);
    const RnnResult gpu = run(c, x.on(kCuda, DType::Float32));
    ASSERT_TRUE(gpu.reserve.defined());
    EXPECT_EQ(gpu.reserve.device(), kCuda);
    EXPECT_EQ(gpu.reserve.dtype(), DType::UInt8);
    {
      SCOPED_TRACE("against the CPU in float64");
      expect_near(c, gpu, run(c, x.on(kCpu, DType::Float64)), tolerance(c, DType::Float32));
    }
    {
      SCOPED_TRACE("against the CPU in float32");
      expect_near(c, gpu, run(c, x.on(kCpu, DType::Float32)), tolerance(c, DType::Float32));
    }
  }
}

TEST(CudaRnn, Float32WithTf32StaysCloseToFloat64) {
  RCUDA_REQUIRE_CUDA();
  const RnnTf32 tf32(true);
  for (const RnnCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const RnnInputs x = random_inputs(c, DType::Float32);
    expect_near(c, run(c, x.on(kCuda, DType::Float32)), run(c, x.on(kCpu, DType::Float64)),
                tolerance(c, DType::Float32, /*tf32=*/true));
  }
}

// Undefined grad_hy / grad_cy are zeros: compared with the CPU given explicit zeros.
TEST(CudaRnn, UndefinedStateGradientsAreZeros) {
  RCUDA_REQUIRE_CUDA();
  const RnnTf32 tf32(false);
  for (const RnnCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const RnnInputs x = random_inputs(c, DType::Float32);
    RnnInputs zeros = x;
    zeros.grad_hy = ops::zeros(c.state_shape(), DType::Float64);
    if (c.lstm()) zeros.grad_cy = ops::zeros(c.state_shape(), DType::Float64);
    Wanted undefined;
    undefined.state_gradients_given = false;
    expect_near(c, run(c, x.on(kCuda, DType::Float32), undefined),
                run(c, zeros.on(kCpu, DType::Float64)), tolerance(c, DType::Float32));
  }
}

// Gradients not asked for (undefined grad_input / grad_hx / grad_cx, empty grad_weights) leave
// the others as they are.
TEST(CudaRnn, GradientsNotAskedForAreLeftOut) {
  RCUDA_REQUIRE_CUDA();
  const RnnTf32 tf32(false);
  for (const RnnCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const RnnInputs x = random_inputs(c, DType::Float32);
    const RnnResult ref = run(c, x.on(kCpu, DType::Float64));
    const double tol = tolerance(c, DType::Float32);
    const RnnInputs gpu = x.on(kCuda, DType::Float32);
    Wanted weights_only;
    weights_only.input = weights_only.state = false;
    const RnnResult w = run(c, gpu, weights_only);
    EXPECT_FALSE(w.grad_input.defined());
    ASSERT_EQ(w.grad_weights.size(), ref.grad_weights.size());
    for (size_t i = 0; i < w.grad_weights.size(); ++i)
      EXPECT_TRUE(near(w.grad_weights[i], ref.grad_weights[i], tol)) << "weights only, " << i;
    Wanted data_only;
    data_only.weights = false;
    const RnnResult d = run(c, gpu, data_only);
    EXPECT_TRUE(d.grad_weights.empty());
    EXPECT_TRUE(near(d.grad_input, ref.grad_input, tol)) << "data only, grad_input";
    EXPECT_TRUE(near(d.grad_hx, ref.grad_hx, tol)) << "data only, grad_hx";
    EXPECT_TRUE(near(d.grad_cx, ref.grad_cx, tol)) << "data only, grad_cx";
  }
}

// cuDNN's RNN takes bfloat16 from 9.13 on; before that the CUDA backend refuses it.
bool cudnn_takes_bfloat16() {
  const std::string v = doctor::find_cudnn().version;  // "9.14.0"
  const size_t dot = v.find('.');
  if (dot == std::string::npos) return false;
  const int major = std::stoi(v.substr(0, dot)), minor = std::stoi(v.substr(dot + 1));
  return major > 9 || (major == 9 && minor >= 13);
}

TEST(CudaRnn, HalfTypesMatchTheCpuInFloat32) {
  RCUDA_REQUIRE_CUDA();
  const bool bfloat16 = cudnn_takes_bfloat16();
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    for (const RnnCase& c : cases()) {
      SCOPED_TRACE(std::string(c.name) + ", " + dtype_name(dtype));
      const RnnInputs x = random_inputs(c, dtype, /*relu_kink_free=*/true);
      const RnnInputs gpu_inputs = x.on(kCuda, dtype);
      if (dtype == DType::BFloat16 && !bfloat16) {
        EXPECT_THROW(forward(c, gpu_inputs, true), DTypeError);
        continue;
      }
      const RnnResult gpu = run(c, gpu_inputs);
      EXPECT_EQ(gpu.out.dtype(), dtype);
      expect_near(c, gpu, run(c, x.on(kCpu, DType::Float32)), tolerance(c, dtype));
    }
  }
}

TEST(CudaRnn, InferenceReturnsNoReserveAndTheTrainingOutputs) {
  RCUDA_REQUIRE_CUDA();
  const RnnTf32 tf32(false);
  for (const RnnCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const RnnInputs x = random_inputs(c, DType::Float32);
    const RnnInputs gpu = x.on(kCuda, DType::Float32);
    const RnnResult inference = forward(c, gpu, false);
    EXPECT_FALSE(inference.reserve.defined());
    const double tol = tolerance(c, DType::Float32);
    expect_outputs_near(inference, forward(c, gpu, true), tol);
    expect_outputs_near(inference, forward(c, x.on(kCpu, DType::Float64), false), tol);
  }
}

TEST(CudaRnn, Float64IsADTypeErrorNamingTheOp) {
  RCUDA_REQUIRE_CUDA();
  const RnnCase& c = cases()[1];
  const RnnInputs x = random_inputs(c, DType::Float32).on(kCuda, DType::Float64);
  EXPECT_THROW(forward(c, x, true), DTypeError);
  const std::string message = test::error_message([&] { forward(c, x, true); });
  EXPECT_NE(message.find("rnn"), std::string::npos) << message;
  EXPECT_NE(message.find("float64"), std::string::npos) << message;
  RnnResult r;
  r.out = Tensor::empty(c.out_shape(), DType::Float64, kCuda);
  EXPECT_THROW(backward(c, x, &r, Wanted()), DTypeError);
  r = RnnResult();
  r.out = Tensor::empty(c.out_shape(), DType::Float64, kCuda);
  const std::string backward_message = test::error_message([&] { backward(c, x, &r, Wanted()); });
  EXPECT_NE(backward_message.find("rnn_backward"), std::string::npos) << backward_message;
}

TEST(CudaRnn, ABackwardRefusesAReserveFromAnotherConfiguration) {
  RCUDA_REQUIRE_CUDA();
  const RnnCase& first = cases()[0];
  RnnCase other = first;
  other.hidden = first.hidden + 9;
  const RnnInputs x = random_inputs(first, DType::Float32).on(kCuda, DType::Float32);
  const RnnInputs y = random_inputs(other, DType::Float32).on(kCuda, DType::Float32);
  RnnResult r = forward(other, y, true);
  r.reserve = forward(first, x, true).reserve;
  EXPECT_THROW(backward(other, y, &r, Wanted()), ValueError);
  RnnResult none = forward(other, y, true);
  none.reserve = Tensor();
  const std::string message = test::error_message([&] { backward(other, y, &none, Wanted()); });
  EXPECT_NE(message.find("reserve"), std::string::npos) << message;
}

TEST(CudaRnn, RepeatedCallsAreBitwiseIdentical) {
  RCUDA_REQUIRE_CUDA();
  for (const RnnCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const RnnInputs x = random_inputs(c, DType::Float32).on(kCuda, DType::Float32);
    expect_identical(run(c, x), run(c, x));
  }
}

// More configurations than the 64 the per-thread descriptor cache keeps (rnn_cudnn.cpp), then
// the first ones again (rebuilt after their eviction) and the last ones (still cached): every
// result matches the CPU, and a configuration run again gives the same bits.
TEST(CudaRnn, ManyShapesInSequenceReuseAndEvictDescriptors) {
  RCUDA_REQUIRE_CUDA();
  const RnnTf32 tf32(false);
  const Mode modes[] = {Mode::Lstm, Mode::Gru, Mode::RnnTanh, Mode::RnnRelu};
  constexpr int kShapes = 80, kAgain = 6;
  std::vector<RnnCase> shapes;
  for (int i = 0; i < kShapes; ++i)
    shapes.push_back({"shape", modes[i % 4], 1 + i % 2, 1 + (i / 2) % 2, 1 + i % 10, 1 + i / 10, 3,
                      4, i % 3 != 0});
  std::vector<RnnInputs> inputs;
  std::vector<RnnResult> results;
  for (int i = 0; i < kShapes; ++i) {
    const RnnCase& c = shapes[static_cast<size_t>(i)];
    SCOPED_TRACE("shape " + std::to_string(i) + ": T = " + std::to_string(c.steps) +
                 ", N = " + std::to_string(c.batch));
    inputs.push_back(random_inputs(c, DType::Float32).on(kCuda, DType::Float32));
    results.push_back(run(c, inputs.back()));
    RnnInputs reference = inputs.back().on(kCpu, DType::Float64);
    expect_near(c, results.back(), run(c, reference), tolerance(c, DType::Float32));
  }
  for (int k = 0; k < 2 * kAgain; ++k) {
    const size_t i = static_cast<size_t>(k < kAgain ? k : kShapes - 2 * kAgain + k);
    SCOPED_TRACE("shape " + std::to_string(i) + " again");
    expect_identical(run(shapes[i], inputs[i]), results[i]);
  }
}

}  // namespace
}  // namespace rcuda
