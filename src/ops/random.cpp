// Random tensors (Note [Philox stream] in rcuda/core/philox.h).
#include "rcuda/ops/random.h"

#include <cmath>
#include <limits>

#include "ops_util.h"
#include "rcuda/backend/cuda_graph.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/reduction.h"

namespace rcuda {

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  offset_ = 0;
}
uint64_t Generator::seed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seed_;
}
uint64_t Generator::offset() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return offset_;
}
void Generator::set_offset(uint64_t offset) {
  std::lock_guard<std::mutex> lock(mutex_);
  offset_ = offset;
}
std::pair<uint64_t, uint64_t> Generator::next() {
  std::lock_guard<std::mutex> lock(mutex_);
  return {seed_, offset_++};
}

std::pair<uint64_t, uint64_t> Generator::peek() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {seed_, offset_};
}

Generator& default_generator() {
  static Generator* generator = new Generator();
  return *generator;
}

void with_next_philox(Device device, const std::function<void(uint64_t, uint64_t)>& launch) {
  if (!device.is_cuda() || !cuda::is_capturing(device.index)) {
    const auto [seed, offset] = default_generator().next();
    launch(seed, offset);
    return;
  }
  cuda::run_updatable(device.index, [launch](bool executes) {
    const auto [seed, offset] = executes ? default_generator().next() : default_generator().peek();
    launch(seed, offset);
  });
}

}  // namespace rcuda

namespace rcuda::ops {

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

namespace {

// Fills t through a contiguous buffer when t is a strided view, since the primitives fill
// contiguous memory in element order.
template <typename Fill>
const Tensor& fill_random(const Tensor& t, Fill fill) {
  if (t.numel() == 0) return t;
  t.storage()->bump_version();  // Note [Version counter] in rcuda/tensor/storage.h
  const Tensor buffer = t.is_contiguous() ? t : Tensor::empty(t.shape(), t.dtype(), t.device());
  with_next_philox(t.device(), [=](uint64_t seed, uint64_t offset) { fill(buffer, seed, offset); });
  if (!buffer.is_same(t)) copy_(t, buffer);
  return t;
}

void check_floating_dtype(const char* op, DType dtype) {
  RCUDA_CHECK(is_floating(dtype), DTypeError, op, ": expected a floating dtype, got ",
              dtype_name(dtype));
}

}  // namespace

const Tensor& uniform_(const Tensor& t, double low, double high) {
  check_floating_dtype("uniform_", t.dtype());
  RCUDA_CHECK(std::isfinite(low) && std::isfinite(high) && low <= high, ValueError,
              "uniform_: expects low <= high, both finite; got low ", low, ", high ", high);
  return fill_random(t, [=](const Tensor& out, uint64_t seed, uint64_t offset) {
    ops::backend_of(out).random_uniform(out, seed, offset, low, high);
  });
}

const Tensor& normal_(const Tensor& t, double mean, double std) {
  check_floating_dtype("normal_", t.dtype());
  RCUDA_CHECK(std >= 0 && std::isfinite(std), ValueError,
              "normal_: std must be finite and non-negative, got ", std);
  return fill_random(t, [=](const Tensor& out, uint64_t seed, uint64_t offset) {
    ops::backend_of(out).random_normal(out, seed, offset, mean, std);
  });
}

Tensor rand(const Shape& shape, TensorOptions options) {
  check_floating_dtype("rand", options.dtype);
  Tensor t = Tensor::empty(shape, options.dtype, options.device);
  uniform_(t, 0, 1);
  return t;
}

Tensor randn(const Shape& shape, TensorOptions options) {
  check_floating_dtype("randn", options.dtype);
  Tensor t = Tensor::empty(shape, options.dtype, options.device);
  normal_(t, 0, 1);
  return t;
}

Tensor normal(double mean, double std, const Shape& shape, TensorOptions options) {
  check_floating_dtype("normal", options.dtype);
  Tensor t = Tensor::empty(shape, options.dtype, options.device);
  normal_(t, mean, std);
  return t;
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions options) {
  RCUDA_CHECK(low < high, ValueError, "randint: expects low < high, got low ", low, ", high ",
              high);
  // Every value in [low, high) must be representable in the dtype, as torch checks.
  int64_t min = std::numeric_limits<int64_t>::min(), max = std::numeric_limits<int64_t>::max();
  switch (options.dtype) {
    case DType::Bool:
      min = 0, max = 1;
      break;
    case DType::UInt8:
      min = 0, max = 255;
      break;
    case DType::Int8:
      min = std::numeric_limits<int8_t>::min(), max = std::numeric_limits<int8_t>::max();
      break;
    case DType::Int16:
      min = std::numeric_limits<int16_t>::min(), max = std::numeric_limits<int16_t>::max();
      break;
    case DType::Int32:
      min = std::numeric_limits<int32_t>::min(), max = std::numeric_limits<int32_t>::max();
      break;
    default:
      break;
  }
  RCUDA_CHECK(low >= min && high - 1 <= max, ValueError, "randint: range [", low, ", ", high,
              ") does not fit dtype ", dtype_name(options.dtype));
  Tensor t = Tensor::empty(shape, options.dtype, options.device);
  return fill_random(t, [=](const Tensor& out, uint64_t seed, uint64_t offset) {
    ops::backend_of(out).random_int(out, seed, offset, low, high);
  });
}

namespace {

// A sampler's parameter: floating, few enough elements for a stream each (Note [A Philox stream
// per element]), every value finite and above `low` (or at it when `low_allowed`). Checking the
// values reads one flag back from the GPU, as torch's samplers check theirs on the host.
Tensor sampler_parameter(const char* op, const char* arg, const Tensor& t, double low,
                         bool low_allowed) {
  RCUDA_CHECK(t.defined(), ValueError, op, ": ", arg, " is an undefined tensor");
  RCUDA_CHECK(is_floating(t.dtype()), DTypeError, op, ": ", arg,
              " must have a floating dtype, got ", dtype_name(t.dtype()));
  RCUDA_CHECK(t.numel() < (int64_t{1} << 43), ValueError, op, ": ", arg, " has ", t.numel(),
              " elements; at most 2^43 - 1 are drawn in one call");
  if (t.numel() > 0) {
    const Tensor above = low_allowed ? ge(t, low) : gt(t, low);
    const Tensor valid = logical_and(above, lt(t, std::numeric_limits<double>::infinity()));
    RCUDA_CHECK(item(all(valid)).to_bool(), ValueError, op, ": every element of ", arg,
                " must be finite and ", low_allowed ? ">= " : "> ", low,
                "; got a negative, zero, infinite or NaN value");
  }
  return contiguous(t);
}

template <typename Draw>
Tensor sample(const Tensor& param, Draw draw) {
  Tensor out = Tensor::empty(param.shape(), param.dtype(), param.device());
  if (out.numel() == 0) return out;
  with_next_philox(out.device(), [=](uint64_t seed, uint64_t offset) { draw(out, seed, offset); });
  return out;
}

}  // namespace

Tensor poisson(const Tensor& rates) {
  const Tensor r = sampler_parameter("poisson", "rates", rates, 0, /*low_allowed=*/true);
  return sample(r, [r](const Tensor& out, uint64_t seed, uint64_t offset) {
    ops::backend_of(out).random_poisson(out, r, seed, offset);
  });
}

Tensor standard_gamma(const Tensor& alpha) {
  const Tensor a = sampler_parameter("standard_gamma", "alpha", alpha, 0, /*low_allowed=*/false);
  return sample(a, [a](const Tensor& out, uint64_t seed, uint64_t offset) {
    ops::backend_of(out).random_gamma(out, a, seed, offset);
  });
}

Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& sample) {
  const char* op = "standard_gamma_grad";
  // The values of alpha are not checked: the backward of every Gamma draw calls this, and its
  // alpha passed standard_gamma's check already. A bad one gives NaN (gamma_sample_grad).
  RCUDA_CHECK(alpha.defined(), ValueError, op, ": alpha is an undefined tensor");
  RCUDA_CHECK(is_floating(alpha.dtype()), DTypeError, op,
              ": alpha must have a floating dtype, got ", dtype_name(alpha.dtype()));
  const Tensor a = contiguous(alpha);
  RCUDA_CHECK(sample.defined() && sample.shape() == alpha.shape(), ValueError, op,
              ": sample must have alpha's shape ", shape_str(alpha.shape()), ", got ",
              sample.defined() ? shape_str(sample.shape()) : std::string("an undefined tensor"));
  RCUDA_CHECK(sample.dtype() == alpha.dtype(), DTypeError, op, ": sample must have alpha's dtype ",
              dtype_name(alpha.dtype()), ", got ", dtype_name(sample.dtype()));
  RCUDA_CHECK(sample.device() == alpha.device(), ValueError, op, ": sample is on ",
              sample.device().str(), ", alpha on ", alpha.device().str());
  const Tensor x = contiguous(sample);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  if (out.numel() > 0) ops::backend_of(out).gamma_sample_grad(out, a, x);
  return out;
}

}  // namespace rcuda::ops
