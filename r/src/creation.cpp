// Filled, random and range tensors. Sizes, dtypes and devices arrive resolved by creation.R; a
// NULL dtype is the engine's default floating dtype (torch_set_default_dtype(), Note [Default
// floating dtype] in rcuda/core/dtype.h) unless the function says otherwise.
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {
TensorOptions options(SEXP dtype, SEXP device, std::optional<DType> fallback = std::nullopt) {
  return TensorOptions(dtype_arg(dtype).value_or(fallback.value_or(default_float_dtype())),
                       device_arg(device));
}
}  // namespace

extern "C" SEXP rc_get_default_dtype() {
  RCUDA_BEGIN
  return Rf_mkString(dtype_name(default_float_dtype()));
  RCUDA_END
}

// The engine's name for a dtype spelled as torch does ("double", "long", ...; dtype_from_name), or
// NA for a name it does not know.
extern "C" SEXP rc_dtype_canonical(SEXP name) {
  RCUDA_BEGIN
  try {
    return Rf_mkString(dtype_name(dtype_from_name(CHAR(STRING_ELT(name, 0)))));
  } catch (const DTypeError&) {
    return Rf_ScalarString(NA_STRING);
  }
  RCUDA_END
}

extern "C" SEXP rc_set_default_dtype(SEXP dtype) {
  RCUDA_BEGIN
  const std::optional<DType> d = dtype_arg(dtype);
  RCUDA_CHECK(d.has_value(), DTypeError, "torch_set_default_dtype: a dtype is required");
  set_default_float_dtype(*d);
  return R_NilValue;
  RCUDA_END
}

// kind: "empty", "zeros", "ones" or "full" (value used only by "full").
extern "C" SEXP rc_full(SEXP kind, SEXP size, SEXP value, SEXP dtype, SEXP device) {
  RCUDA_BEGIN
  const std::string k = CHAR(STRING_ELT(kind, 0));
  const Shape shape = shape_arg(size);
  if (k == "full") {
    const Scalar v = scalar_arg(value, "torch_full");
    // torch_full infers the dtype from the fill value when none is given.
    const DType fallback = v.natural_dtype();
    return wrap(full(shape, v, options(dtype, device, fallback)));
  }
  const TensorOptions opts = options(dtype, device);
  if (k == "zeros") return wrap(zeros(shape, opts));
  if (k == "ones") return wrap(ones(shape, opts));
  return wrap(empty(shape, opts));
  RCUDA_END
}

// kind: "rand" or "randn".
extern "C" SEXP rc_random(SEXP kind, SEXP size, SEXP dtype, SEXP device) {
  RCUDA_BEGIN
  const TensorOptions opts = options(dtype, device);
  const Shape shape = shape_arg(size);
  RCUDA_CHECK(is_floating(opts.dtype), DTypeError, CHAR(STRING_ELT(kind, 0)),
              ": dtype must be floating, got ", dtype_name(opts.dtype));
  if (std::string(CHAR(STRING_ELT(kind, 0))) == "rand") return wrap(rand(shape, opts));
  return wrap(randn(shape, opts));
  RCUDA_END
}

// kind: "poisson" (x holds the rates) or "standard_gamma" (x holds alpha); a draw per element.
extern "C" SEXP rc_sample(SEXP kind, SEXP x) {
  RCUDA_BEGIN
  const std::string k = CHAR(STRING_ELT(kind, 0));
  if (k == "poisson") return wrap(ops::poisson(unwrap(x)));
  return wrap(ops::standard_gamma(unwrap(x)));
  RCUDA_END
}

extern "C" SEXP rc_standard_gamma_grad(SEXP alpha, SEXP sample) {
  RCUDA_BEGIN
  return wrap(ops::standard_gamma_grad(unwrap(alpha), unwrap(sample)));
  RCUDA_END
}

extern "C" SEXP rc_randint(SEXP low, SEXP high, SEXP size, SEXP dtype, SEXP device) {
  RCUDA_BEGIN
  const int64_t lo = scalar_arg(low, "torch_randint").to_int();
  const int64_t hi = scalar_arg(high, "torch_randint").to_int();
  return wrap(randint(lo, hi, shape_arg(size), options(dtype, device, DType::Int64)));
  RCUDA_END
}

// The R side has already made `end` exclusive (torch for R's end is inclusive).
extern "C" SEXP rc_arange(SEXP start, SEXP end, SEXP step, SEXP dtype, SEXP device) {
  RCUDA_BEGIN
  return wrap(arange(scalar_arg(start, "torch_arange"), scalar_arg(end, "torch_arange"),
                     scalar_arg(step, "torch_arange"), dtype_arg(dtype), device_arg(device)));
  RCUDA_END
}

extern "C" SEXP rc_linspace(SEXP start, SEXP end, SEXP steps, SEXP dtype, SEXP device) {
  RCUDA_BEGIN
  return wrap(linspace(Rf_asReal(start), Rf_asReal(end), static_cast<int64_t>(Rf_asReal(steps)),
                       options(dtype, device)));
  RCUDA_END
}

extern "C" SEXP rc_eye(SEXP n, SEXP m, SEXP dtype, SEXP device) {
  RCUDA_BEGIN
  return wrap(eye(scalar_arg(n, "torch_eye").to_int(), scalar_arg(m, "torch_eye").to_int(),
                  options(dtype, device)));
  RCUDA_END
}

// The default generator's state as 16 bytes: the seed, then the offset (Philox steps taken),
// each little-endian. torch_get_rng_state() / torch_set_rng_state() carry it as a uint8 tensor.
extern "C" SEXP rc_get_rng_state() {
  RCUDA_BEGIN
  const Generator& g = default_generator();
  const uint64_t words[2] = {g.seed(), g.offset()};
  SEXP out = PROTECT(Rf_allocVector(RAWSXP, 16));
  for (int w = 0; w < 2; ++w)
    for (int b = 0; b < 8; ++b) RAW(out)[w * 8 + b] = static_cast<Rbyte>(words[w] >> (8 * b));
  UNPROTECT(1);
  return out;
  RCUDA_END
}

extern "C" SEXP rc_set_rng_state(SEXP state) {
  RCUDA_BEGIN
  RCUDA_CHECK(TYPEOF(state) == RAWSXP && Rf_xlength(state) == 16, ValueError,
              "torch_set_rng_state: state must be the 16 bytes torch_get_rng_state() gives");
  uint64_t words[2] = {0, 0};
  for (int w = 0; w < 2; ++w)
    for (int b = 0; b < 8; ++b) words[w] |= static_cast<uint64_t>(RAW(state)[w * 8 + b]) << (8 * b);
  Generator& g = default_generator();
  g.manual_seed(words[0]);
  g.set_offset(words[1]);
  return R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_manual_seed(SEXP seed) {
  RCUDA_BEGIN
  const double s = Rf_asReal(seed);
  RCUDA_CHECK(s >= 0 && s == static_cast<double>(static_cast<uint64_t>(s)), ValueError,
              "torch_manual_seed: seed must be a non-negative whole number, got ", s);
  manual_seed(static_cast<uint64_t>(s));
  return R_NilValue;
  RCUDA_END
}
