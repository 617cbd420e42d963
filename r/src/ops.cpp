// Elementwise math, matrix products, joins and reductions. R passes the engine's op names, and
// rcuda::unary_op/binary_op map them to ops (the engine's one table of names), so one entry
// point serves a whole family; every call goes to the public rcuda:: API, which records for
// autograd.
#include <cstring>
#include <limits>

#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

const char* name_of(SEXP x) { return CHAR(STRING_ELT(x, 0)); }

// An R vector or array beside a tensor, on its device; beside a floating tensor it takes the
// tensor's dtype (as %*% does), so that a float64 tensor and R doubles stay in double precision
// instead of going through the default float32.
Tensor array_beside(const char* op, SEXP data, const Tensor& t) {
  const int type = TYPEOF(data);
  RCUDA_CHECK(type == REALSXP || type == INTSXP || type == LGLSXP || type == CPLXSXP, DTypeError,
              op, ": cannot combine a tensor with an R ", Rf_type2char(type),
              " (expected a tensor, or a number, vector or array of double, integer, logical or "
              "complex)");
  std::optional<DType> dtype;
  if (type == CPLXSXP) {
    // Complex numbers take the width of a floating or complex tensor (complex64 otherwise).
    if (is_complex(t.dtype())) dtype = t.dtype();
    if (t.dtype() == DType::Float32 || t.dtype() == DType::Float64)
      dtype = complex_dtype_for(t.dtype());
  } else if (is_floating(t.dtype()) || is_complex(t.dtype())) {
    dtype = is_complex(t.dtype()) ? complex_part_dtype(t.dtype()) : t.dtype();
  }
  return from_r(data, dtype, t.device());
}

bool is_na(SEXP x) {
  return (TYPEOF(x) == LGLSXP && LOGICAL(x)[0] == NA_LOGICAL) ||
         (TYPEOF(x) == INTSXP && INTEGER(x)[0] == NA_INTEGER);
}

// t (op) NA, or NA (op) t. R's arithmetic gives NA, which is NaN beside a floating tensor.
// Comparisons and logical ops would need a bool NA, which tensors cannot hold, and integer and
// bool tensors hold no NaN: both are errors. The op runs on NaN first, so that its result's
// dtype (bool for comparisons and logical ops) tells them apart without a list of op names.
Tensor beside_na(const char* op, const Tensor& t, bool tensor_first) {
  const Scalar nan = std::numeric_limits<double>::quiet_NaN();
  Tensor out = tensor_first ? binary_op(op, t, nan) : binary_op(op, nan, t);
  RCUDA_CHECK(out.dtype() != DType::Bool, ValueError, op,
              ": NA has no tensor value here (a bool result cannot hold NA)");
  RCUDA_CHECK(is_floating(t.dtype()), ValueError, op,
              ": NA cannot be combined with a tensor of dtype ", dtype_name(t.dtype()),
              " (only floating dtypes hold NA, as NaN)");
  return out;
}

}  // namespace

extern "C" SEXP rc_unary(SEXP op, SEXP x) {
  RCUDA_BEGIN
  return wrap(unary_op(name_of(op), unwrap(x)));
  RCUDA_END
}

// One operand is a tensor; the other may be a tensor, a plain R number, or an R vector or
// array (array_beside).
extern "C" SEXP rc_binary(SEXP op, SEXP a, SEXP b) {
  RCUDA_BEGIN
  const char* name = name_of(op);
  if (is_tensor(a) && is_tensor(b)) return wrap(binary_op(name, unwrap(a), unwrap(b)));
  if (is_tensor(a) && !is_scalar(b))
    return wrap(binary_op(name, unwrap(a), array_beside(name, b, unwrap(a))));
  if (is_tensor(b) && !is_scalar(a))
    return wrap(binary_op(name, array_beside(name, a, unwrap(b)), unwrap(b)));
  // A tensor and a plain number: the number promotes as torch's wrapped numbers do, so `2 - x`
  // types like torch's rsub, and reaches the kernel by value (no tensor of its own).
  const bool tensor_first = is_tensor(a);
  const Tensor& t = unwrap(tensor_first ? a : b);
  SEXP number = tensor_first ? b : a;
  if (is_na(number)) return wrap(beside_na(name, t, tensor_first));
  const Scalar n = scalar_arg(number, name);
  return wrap(tensor_first ? binary_op(name, t, n) : binary_op(name, n, t));
  RCUDA_END
}

extern "C" SEXP rc_add_alpha(SEXP a, SEXP b, SEXP alpha, SEXP subtract) {
  RCUDA_BEGIN
  const Scalar s = scalar_arg(alpha, "add");
  if (Rf_asLogical(subtract)) return wrap(sub(unwrap(a), unwrap(b), s));
  return wrap(add(unwrap(a), unwrap(b), s));
  RCUDA_END
}

extern "C" SEXP rc_clamp(SEXP x, SEXP min, SEXP max) {
  RCUDA_BEGIN
  std::optional<Scalar> lo, hi;
  if (!Rf_isNull(min)) lo = scalar_arg(min, "clamp");
  if (!Rf_isNull(max)) hi = scalar_arg(max, "clamp");
  return wrap(clamp(unwrap(x), lo, hi));
  RCUDA_END
}

extern "C" SEXP rc_where(SEXP condition, SEXP a, SEXP b) {
  RCUDA_BEGIN
  const Tensor& c = unwrap(condition);
  if (is_tensor(a) && is_tensor(b)) return wrap(where(c, unwrap(a), unwrap(b)));
  if (is_tensor(a)) return wrap(where(c, unwrap(a), scalar_arg(b, "where")));
  if (is_tensor(b)) return wrap(where(c, scalar_arg(a, "where"), unwrap(b)));
  // Two numbers: each in its own dtype (float32, int64 or bool), promoted together by where.
  const Scalar x = scalar_arg(a, "where"), y = scalar_arg(b, "where");
  return wrap(where(c, scalar_tensor(x, x.natural_dtype(), c.device()),
                    scalar_tensor(y, y.natural_dtype(), c.device())));
  RCUDA_END
}

// kind: "matmul", "mm" or "bmm".
extern "C" SEXP rc_matmul(SEXP kind, SEXP a, SEXP b) {
  RCUDA_BEGIN
  const std::string k = name_of(kind);
  if (k == "mm") return wrap(mm(unwrap(a), unwrap(b)));
  if (k == "bmm") return wrap(bmm(unwrap(a), unwrap(b)));
  return wrap(matmul(unwrap(a), unwrap(b)));
  RCUDA_END
}

// kind: "cat" or "stack"; tensors is a list of rcuda_tensor.
extern "C" SEXP rc_join(SEXP kind, SEXP tensors, SEXP dim) {
  RCUDA_BEGIN
  std::vector<Tensor> list;
  for (R_xlen_t i = 0; i < Rf_xlength(tensors); ++i) list.push_back(unwrap(VECTOR_ELT(tensors, i)));
  const std::string k = name_of(kind);
  const int64_t d = dim_arg(dim, k.c_str());
  return wrap(k == "cat" ? cat(list, d) : stack(list, d));
  RCUDA_END
}

// kind: "sum", "mean", "prod", "all", "any", "logsumexp"; dims NULL means all.
extern "C" SEXP rc_reduce(SEXP kind, SEXP x, SEXP dims, SEXP keepdim, SEXP dtype) {
  RCUDA_BEGIN
  const std::string k = name_of(kind);
  const Tensor& t = unwrap(x);
  const Dims d = dims_arg(dims, k.c_str());
  const bool keep = Rf_asLogical(keepdim);
  if (k == "sum") return wrap(sum(t, d, keep, dtype_arg(dtype)));
  if (k == "mean") {
    const auto dt = dtype_arg(dtype);
    return wrap(mean(dt ? to(t, *dt) : t, d, keep));
  }
  if (k == "prod") return wrap(prod(t, d, keep));
  if (k == "all") return wrap(all(t, d, keep));
  if (k == "any") return wrap(any(t, d, keep));
  if (k == "logsumexp") return wrap(logsumexp(t, d, keep));
  throw ValueError("reduce: unknown reduction '" + k + "'");
  RCUDA_END
}

// max/min: over everything (dim NULL) a 0-d tensor, else list(values, indices) with 1-based
// indices, as torch for R.
extern "C" SEXP rc_extreme(SEXP kind, SEXP x, SEXP dim, SEXP keepdim) {
  RCUDA_BEGIN
  const bool is_max = std::strcmp(name_of(kind), "max") == 0;
  const Tensor& t = unwrap(x);
  if (Rf_isNull(dim)) return wrap(is_max ? max(t) : min(t));
  const int64_t d = dim_arg(dim, name_of(kind));
  auto [values, indices] =
      is_max ? max(t, d, Rf_asLogical(keepdim)) : min(t, d, Rf_asLogical(keepdim));
  cpp11::writable::list out(2);
  out[0] = wrap(std::move(values));
  out[1] = wrap(add(indices, Scalar(int64_t{1})));
  return out;
  RCUDA_END
}

// argmax/argmin with 1-based results.
extern "C" SEXP rc_argextreme(SEXP kind, SEXP x, SEXP dim, SEXP keepdim) {
  RCUDA_BEGIN
  const bool is_max = std::strcmp(name_of(kind), "argmax") == 0;
  std::optional<int64_t> d;
  if (!Rf_isNull(dim)) d = dim_arg(dim, name_of(kind));
  const bool keep = Rf_asLogical(keepdim);
  Tensor i = is_max ? argmax(unwrap(x), d, keep) : argmin(unwrap(x), d, keep);
  return wrap(add(i, Scalar(int64_t{1})));
  RCUDA_END
}

// kind: "var" or "std".
extern "C" SEXP rc_spread(SEXP kind, SEXP x, SEXP dims, SEXP correction, SEXP keepdim) {
  RCUDA_BEGIN
  const bool is_var = std::strcmp(name_of(kind), "var") == 0;
  const Dims d = dims_arg(dims, name_of(kind));
  const double c = Rf_asReal(correction);
  const bool keep = Rf_asLogical(keepdim);
  return wrap(is_var ? var(unwrap(x), d, c, keep) : rcuda::std(unwrap(x), d, c, keep));
  RCUDA_END
}

// kind: "softmax", "log_softmax" or "cumsum".
extern "C" SEXP rc_along(SEXP kind, SEXP x, SEXP dim) {
  RCUDA_BEGIN
  const std::string k = name_of(kind);
  const int64_t d = dim_arg(dim, k.c_str());
  if (k == "softmax") return wrap(softmax(unwrap(x), d));
  if (k == "log_softmax") return wrap(log_softmax(unwrap(x), d));
  return wrap(cumsum(unwrap(x), d));
  RCUDA_END
}

extern "C" SEXP rc_gelu(SEXP x, SEXP approximate) {
  RCUDA_BEGIN
  return wrap(gelu(unwrap(x), name_of(approximate)));
  RCUDA_END
}

extern "C" SEXP rc_norm(SEXP x, SEXP p, SEXP dims, SEXP keepdim) {
  RCUDA_BEGIN
  return wrap(norm(unwrap(x), Rf_asReal(p), dims_arg(dims, "norm"), Rf_asLogical(keepdim)));
  RCUDA_END
}
