// Padding and interpolation of the R package (nnf_pad, nnf_interpolate), each one call into
// rcuda::nn (include/rcuda/nn/resample.h), which records for autograd. `pad` keeps torch for R's
// (PyTorch's) order: (before, after) pairs from the last dim backwards.
#include <optional>
#include <string>
#include <vector>

#include "nn_glue.h"
#include "rcuda/nn/resample.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

std::string string_arg(SEXP x, const char* op, const char* arg) {
  RCUDA_CHECK(Rf_isString(x) && Rf_length(x) == 1 && STRING_ELT(x, 0) != NA_STRING, ValueError, op,
              ": ", arg, " must be a single string");
  return CHAR(STRING_ELT(x, 0));
}

// NULL: not given; otherwise TRUE or FALSE.
std::optional<bool> optional_flag(SEXP x, const char* op, const char* arg) {
  if (Rf_isNull(x)) return std::nullopt;
  RCUDA_CHECK(Rf_isLogical(x) && Rf_length(x) == 1 && LOGICAL(x)[0] != NA_LOGICAL, ValueError, op,
              ": ", arg, " must be TRUE, FALSE or NULL");
  return LOGICAL(x)[0] == TRUE;
}

std::vector<double> factors_arg(SEXP x, const char* op) {
  std::vector<double> v;
  if (Rf_isNull(x)) return v;
  RCUDA_CHECK((Rf_isReal(x) || Rf_isInteger(x)) && Rf_length(x) >= 1, ValueError, op,
              ": scale_factor must be a number or a vector of numbers, one per spatial dim");
  for (R_xlen_t i = 0; i < Rf_xlength(x); ++i)
    v.push_back(Rf_isReal(x) ? REAL(x)[i] : static_cast<double>(INTEGER(x)[i]));
  return v;
}

}  // namespace

// value NULL: 0 (constant mode) or none.
extern "C" SEXP rc_nn_pad(SEXP x, SEXP pad, SEXP mode, SEXP value) {
  RCUDA_BEGIN
  const char* op = "nnf_pad";
  return as_r_function(op, "pad", [&] {
    RCUDA_CHECK((Rf_isReal(pad) || Rf_isInteger(pad)) && Rf_length(pad) >= 1, ValueError, op,
                ": pad must be a vector of whole numbers, (before, after) pairs from the last "
                "dim backwards");
    std::optional<double> v;
    if (!Rf_isNull(value)) {
      RCUDA_CHECK(
          (Rf_isReal(value) || Rf_isInteger(value) || Rf_isLogical(value)) && Rf_length(value) == 1,
          ValueError, op, ": value must be a single number or NULL");
      v = Rf_asReal(value);
    }
    return wrap(nn::pad(unwrap(x), sizes_arg(pad, op, "pad"), string_arg(mode, op, "mode"), v));
  });
  RCUDA_END
}

// size and scale_factor NULL when not given. align_corners counts only for the linear modes,
// as torch for R documents (it is ignored for the others).
extern "C" SEXP rc_nn_interpolate(SEXP x, SEXP size, SEXP scale_factor, SEXP mode,
                                  SEXP align_corners, SEXP recompute_scale_factor) {
  RCUDA_BEGIN
  const char* op = "nnf_interpolate";
  return as_r_function(op, "interpolate", [&] {
    const std::string m = string_arg(mode, op, "mode");
    std::optional<bool> align = optional_flag(align_corners, op, "align_corners");
    if (m != "linear" && m != "bilinear") align.reset();
    return wrap(nn::interpolate(
        unwrap(x), sizes_arg(size, op, "size"), factors_arg(scale_factor, op), m, align,
        optional_flag(recompute_scale_factor, op, "recompute_scale_factor")));
  });
  RCUDA_END
}
