// Complex tensors for R/complex.R: one entry point, rc_complex(op, a, b), over the engine's
// views and composed ops (rcuda/ops/complex.h, Note [Complex tensors]). b is used by
// "complex" (the imaginary part) only.
#include <string>

#include "rcuda/autograd/api.h"
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

extern "C" SEXP rc_complex(SEXP op_name, SEXP a, SEXP b) {
  RCUDA_BEGIN
  const std::string op = CHAR(STRING_ELT(op_name, 0));
  const Tensor& x = unwrap(a);
  if (op == "complex") return wrap(ops::complex(x, unwrap(b)));
  if (op == "view_as_real") return wrap(ops::view_as_real(x));
  if (op == "view_as_complex") return wrap(ops::view_as_complex(x));
  if (op == "real") return wrap(ops::real(x));
  if (op == "imag") return wrap(ops::imag(x));
  if (op == "angle") return wrap(ops::angle(x));
  if (op == "conj") return wrap(ops::conj(x));
  throw ValueError("rc_complex: unknown op '" + op + "'");
  RCUDA_END
}
