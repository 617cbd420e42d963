// The nn_init_* functions over rcuda::nn::init: each fills its tensor in place (with grad mode
// off inside, so a parameter that requires grad can be initialised) from the default generator,
// which torch_manual_seed() seeds.
#include <string>

#include "nn_glue.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {
double number(SEXP args, int i) { return Rf_asReal(VECTOR_ELT(args, i)); }
std::string text(SEXP args, int i) { return CHAR(STRING_ELT(VECTOR_ELT(args, i), 0)); }

// Fills t by initialiser k (the engine's function without its trailing _).
void fill(const std::string& k, const Tensor& t, SEXP args) {
  namespace init = nn::init;
  if (k == "uniform") {
    init::uniform_(t, number(args, 0), number(args, 1));
  } else if (k == "normal") {
    init::normal_(t, number(args, 0), number(args, 1));
  } else if (k == "constant") {
    init::constant_(t, scalar_arg(VECTOR_ELT(args, 0), "nn_init_constant_"));
  } else if (k == "zeros") {
    init::zeros_(t);
  } else if (k == "ones") {
    init::ones_(t);
  } else if (k == "eye") {
    init::eye_(t);
  } else if (k == "kaiming_uniform") {
    init::kaiming_uniform_(t, number(args, 0), text(args, 1), text(args, 2));
  } else if (k == "kaiming_normal") {
    init::kaiming_normal_(t, number(args, 0), text(args, 1), text(args, 2));
  } else if (k == "xavier_uniform") {
    init::xavier_uniform_(t, number(args, 0));
  } else if (k == "xavier_normal") {
    init::xavier_normal_(t, number(args, 0));
  } else if (k == "trunc_normal") {
    init::trunc_normal_(t, number(args, 0), number(args, 1), number(args, 2), number(args, 3));
  } else {
    throw ValueError("nn_init: unknown initialiser \"" + k + "\"");
  }
}
}  // namespace

// kind: the initialiser's name without nn_init_ and _; args: its arguments after the tensor, in
// the R function's order. Returns x.
extern "C" SEXP rc_nn_init(SEXP kind, SEXP x, SEXP args) {
  RCUDA_BEGIN
  const std::string k = CHAR(STRING_ELT(kind, 0));
  as_r_function("nn_init_" + k + "_", k + "_", [&] { fill(k, unwrap(x), args); });
  return x;
  RCUDA_END
}

extern "C" SEXP rc_nn_calculate_gain(SEXP nonlinearity, SEXP param) {
  RCUDA_BEGIN
  std::optional<double> p;
  if (!Rf_isNull(param)) p = Rf_asReal(param);
  return Rf_ScalarReal(nn::init::calculate_gain(CHAR(STRING_ELT(nonlinearity, 0)), p));
  RCUDA_END
}

extern "C" SEXP rc_nn_fans(SEXP x) {
  RCUDA_BEGIN
  const nn::init::Fans fans = nn::init::calculate_fan_in_and_fan_out(unwrap(x));
  return cpp11::writable::doubles(
      {static_cast<double>(fans.fan_in), static_cast<double>(fans.fan_out)});
  RCUDA_END
}
