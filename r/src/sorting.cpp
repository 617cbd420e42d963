// The sort family and the cumulative ops for R: 1-based dims in, 1-based indices out (torch for
// R's convention), values and indices as list(values, indices).
#include <cstring>
#include <string>

#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

const char* name_of(SEXP x) { return CHAR(STRING_ELT(x, 0)); }

// indices + 1 (indices carry no gradient): a public op, so a trace records the shift.
Tensor one_based(const Tensor& indices) { return add(indices, Scalar(int64_t{1})); }

SEXP values_and_indices(const std::pair<Tensor, Tensor>& r) {
  cpp11::writable::list out(2);
  out[0] = wrap(r.first);
  out[1] = wrap(one_based(r.second));
  return out;
}

int64_t whole_arg(SEXP x, const char* op, const char* arg) {
  RCUDA_CHECK((TYPEOF(x) == INTSXP || TYPEOF(x) == REALSXP) && Rf_length(x) == 1, ValueError, op,
              ": ", arg, " must be a single whole number");
  const double v = Rf_asReal(x);
  RCUDA_CHECK(!std::isnan(v) && v == std::floor(v), ValueError, op, ": ", arg,
              " must be a whole number, got ", v);
  return static_cast<int64_t>(v);
}

}  // namespace

// kind: "sort", "argsort"; returns list(values, indices) or the indices.
extern "C" SEXP rc_sort(SEXP kind, SEXP x, SEXP dim, SEXP descending) {
  RCUDA_BEGIN
  const char* k = name_of(kind);
  const int64_t d = dim_arg(dim, k);
  auto r = sort(unwrap(x), d, Rf_asLogical(descending));
  if (std::strcmp(k, "argsort") == 0) return wrap(one_based(r.second));
  return values_and_indices(r);
  RCUDA_END
}

extern "C" SEXP rc_topk(SEXP x, SEXP k, SEXP dim, SEXP largest, SEXP sorted) {
  RCUDA_BEGIN
  return values_and_indices(topk(unwrap(x), whole_arg(k, "torch_topk", "k"),
                                 dim_arg(dim, "torch_topk"), Rf_asLogical(largest),
                                 Rf_asLogical(sorted)));
  RCUDA_END
}

// kind: "kthvalue" (k given), "median" (dim NULL: the value over every element), "mode".
extern "C" SEXP rc_select_along(SEXP kind, SEXP x, SEXP k, SEXP dim, SEXP keepdim) {
  RCUDA_BEGIN
  const std::string op = std::string("torch_") + name_of(kind);
  const Tensor& t = unwrap(x);
  const bool keep = Rf_asLogical(keepdim);
  if (op == "torch_kthvalue")
    return values_and_indices(
        kthvalue(t, whole_arg(k, op.c_str(), "k"), dim_arg(dim, op.c_str()), keep));
  if (op == "torch_median") {
    if (Rf_isNull(dim)) return wrap(median(t));
    return values_and_indices(median(t, dim_arg(dim, op.c_str()), keep));
  }
  return values_and_indices(mode(t, dim_arg(dim, op.c_str()), keep));
  RCUDA_END
}

extern "C" SEXP rc_quantile(SEXP x, SEXP q, SEXP dim, SEXP keepdim, SEXP interpolation) {
  RCUDA_BEGIN
  std::optional<int64_t> d;
  if (!Rf_isNull(dim)) d = dim_arg(dim, "torch_quantile");
  return wrap(quantile(unwrap(x), unwrap(q), d, Rf_asLogical(keepdim), name_of(interpolation)));
  RCUDA_END
}

// list(values, inverse (1-based), counts).
extern "C" SEXP rc_unique(SEXP x) {
  RCUDA_BEGIN
  const UniqueResult u = unique(unwrap(x));
  cpp11::writable::list out(3);
  out[0] = wrap(u.values);
  out[1] = wrap(one_based(u.inverse));
  out[2] = wrap(u.counts);
  return out;
  RCUDA_END
}

extern "C" SEXP rc_torch_randperm(SEXP n, SEXP dtype, SEXP device) {
  RCUDA_BEGIN
  std::optional<DType> d = dtype_arg(dtype);
  return wrap(randperm(whole_arg(n, "torch_randperm", "n"),
                       TensorOptions(d ? *d : DType::Int64, device_arg(device))));
  RCUDA_END
}

extern "C" SEXP rc_bucketize(SEXP x, SEXP boundaries, SEXP out_int32, SEXP right) {
  RCUDA_BEGIN
  return wrap(
      bucketize(unwrap(x), unwrap(boundaries), Rf_asLogical(out_int32), Rf_asLogical(right)));
  RCUDA_END
}

extern "C" SEXP rc_histc(SEXP x, SEXP bins, SEXP min, SEXP max) {
  RCUDA_BEGIN
  return wrap(
      histc(unwrap(x), whole_arg(bins, "torch_histc", "bins"), Rf_asReal(min), Rf_asReal(max)));
  RCUDA_END
}

// kind: "cumprod", "logcumsumexp" (a tensor), "cummax", "cummin" (list(values, indices)).
extern "C" SEXP rc_cumulative(SEXP kind, SEXP x, SEXP dim) {
  RCUDA_BEGIN
  const std::string k = name_of(kind);
  const std::string op = "torch_" + k;
  const int64_t d = dim_arg(dim, op.c_str());
  const Tensor& t = unwrap(x);
  if (k == "cumprod") return wrap(cumprod(t, d));
  if (k == "logcumsumexp") return wrap(logcumsumexp(t, d));
  return values_and_indices(k == "cummax" ? cummax(t, d) : cummin(t, d));
  RCUDA_END
}
