// R values to engine arguments. The R side has already matched names and defaults; here each
// value is checked once and the message names the op and the value.
#include <cmath>

#include "rcuda_r.h"

namespace rcuda::r {

std::optional<DType> dtype_arg(SEXP x) {
  if (Rf_isNull(x)) return std::nullopt;
  if (!Rf_isString(x) || Rf_length(x) != 1)
    throw DTypeError("dtype must be a torch dtype such as torch_float()");
  return dtype_from_name(CHAR(STRING_ELT(x, 0)));
}

Device device_arg(SEXP x) {
  if (Rf_isNull(x)) return Device();
  if (!Rf_isString(x) || Rf_length(x) != 1)
    throw DeviceError("device must be a torch_device or a string such as \"cuda:0\"");
  return Device::parse(CHAR(STRING_ELT(x, 0)));
}

Shape shape_arg(SEXP x) {
  RCUDA_CHECK(TYPEOF(x) == INTSXP || TYPEOF(x) == REALSXP, ValueError,
              "size: expected a vector of whole numbers, got an R ", Rf_type2char(TYPEOF(x)));
  Shape shape;
  const R_xlen_t n = Rf_xlength(x);
  shape.reserve(n);
  for (R_xlen_t i = 0; i < n; ++i) {
    const double v =
        TYPEOF(x) == INTSXP ? (INTEGER(x)[i] == NA_INTEGER ? NAN : INTEGER(x)[i]) : REAL(x)[i];
    RCUDA_CHECK(std::isfinite(v) && v == std::floor(v), ValueError,
                "size: expected whole numbers, got ", v);
    shape.push_back(static_cast<int64_t>(v));
  }
  return shape;
}

int64_t dim_arg(SEXP x, const char* op) {
  RCUDA_CHECK(TYPEOF(x) == INTSXP || TYPEOF(x) == REALSXP, ValueError, op,
              ": dim must be a number (1-based; negative from the end), got an R ",
              Rf_type2char(TYPEOF(x)));
  RCUDA_CHECK(Rf_length(x) == 1, ValueError, op, ": dim must be a single number");
  const double d = Rf_asReal(x);
  RCUDA_CHECK(!std::isnan(d), ValueError, op, ": dim is NA");
  RCUDA_CHECK(d != 0, IndexError, op,
              ": dim 0 is not valid; dims start at 1 (negative dims count from the end)");
  return d > 0 ? static_cast<int64_t>(d) - 1 : static_cast<int64_t>(d);
}

std::vector<int64_t> dims_arg(SEXP x, const char* op) {
  std::vector<int64_t> dims;
  if (Rf_isNull(x)) return dims;
  RCUDA_CHECK(TYPEOF(x) == INTSXP || TYPEOF(x) == REALSXP, ValueError, op,
              ": dim must be numbers (1-based; negative from the end), got an R ",
              Rf_type2char(TYPEOF(x)));
  for (R_xlen_t i = 0; i < Rf_xlength(x); ++i) {
    const double v =
        TYPEOF(x) == INTSXP ? (INTEGER(x)[i] == NA_INTEGER ? NA_REAL : INTEGER(x)[i]) : REAL(x)[i];
    cpp11::sexp one = Rf_ScalarReal(v);
    dims.push_back(dim_arg(one, op));
  }
  return dims;
}

std::vector<int64_t> sizes_arg(SEXP x, const char* op, const char* arg) {
  std::vector<int64_t> v;
  if (Rf_isNull(x)) return v;
  RCUDA_CHECK((Rf_isReal(x) || Rf_isInteger(x)) && Rf_length(x) >= 1, ValueError, op, ": ", arg,
              " must be a number or a vector of numbers, one per spatial dim");
  for (R_xlen_t i = 0; i < Rf_xlength(x); ++i) {
    const double d = Rf_isReal(x) ? REAL(x)[i] : INTEGER(x)[i];
    RCUDA_CHECK(d == static_cast<double>(static_cast<int64_t>(d)), ValueError, op, ": ", arg,
                " must hold whole numbers, got ", d);
    v.push_back(static_cast<int64_t>(d));
  }
  return v;
}

bool is_scalar(SEXP x) {
  return Rf_xlength(x) == 1 && Rf_getAttrib(x, R_ClassSymbol) == R_NilValue &&
         (TYPEOF(x) == REALSXP || TYPEOF(x) == INTSXP || TYPEOF(x) == LGLSXP);
}

Scalar scalar_arg(SEXP x, const char* op) {
  RCUDA_CHECK(Rf_xlength(x) == 1, ValueError, op, ": expected a single number, got length ",
              Rf_xlength(x));
  switch (TYPEOF(x)) {
    case REALSXP:
      return REAL(x)[0];
    case INTSXP:
      RCUDA_CHECK(INTEGER(x)[0] != NA_INTEGER, ValueError, op,
                  ": NA integer cannot be used as a number");
      return static_cast<int64_t>(INTEGER(x)[0]);
    case LGLSXP:
      RCUDA_CHECK(LOGICAL(x)[0] != NA_LOGICAL, ValueError, op,
                  ": NA cannot be used as a logical value");
      return LOGICAL(x)[0] != 0;
    default:
      throw DTypeError(std::string(op) + ": expected a number, got an R " +
                       Rf_type2char(TYPEOF(x)));
  }
}

}  // namespace rcuda::r
