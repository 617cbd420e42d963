// Sparse COO tensors for R (docs/sparse.md): torch_sparse_coo_tensor, $to_dense(), $coalesce(),
// $to_sparse() and the sparse-dense product. An R sparse tensor is a list of its parts
// (indices, values, size, coalesced; R/sparse.R), its indices kept 0-based as the engine's;
// each entry point rebuilds the engine's SparseCooTensor from that list, so no second kind of
// external pointer exists. Indices arrive from R 1-based and are checked here, in R's terms.
#include "rcuda/autograd/sparse.h"
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

SEXP sparse_to_r(const SparseCooTensor& x) {
  const char* names[] = {"indices", "values", "size", "coalesced", ""};
  SEXP out = PROTECT(Rf_mkNamed(VECSXP, names));
  SET_VECTOR_ELT(out, 0, wrap(x.indices));
  SET_VECTOR_ELT(out, 1, wrap(x.values));
  SEXP size = PROTECT(Rf_allocVector(REALSXP, static_cast<R_xlen_t>(x.size.size())));
  for (size_t d = 0; d < x.size.size(); ++d) REAL(size)[d] = static_cast<double>(x.size[d]);
  SET_VECTOR_ELT(out, 2, size);
  SET_VECTOR_ELT(out, 3, Rf_ScalarLogical(x.coalesced ? TRUE : FALSE));
  UNPROTECT(2);
  return out;
}

SparseCooTensor sparse_from_r(SEXP x, const char* op) {
  RCUDA_CHECK(TYPEOF(x) == VECSXP, ValueError, op, ": expected a sparse tensor");
  SparseCooTensor s;
  s.indices = unwrap(list_element(x, "indices"));
  s.values = unwrap(list_element(x, "values"));
  s.size = shape_arg(list_element(x, "size"));
  s.coalesced = Rf_asLogical(list_element(x, "coalesced")) == TRUE;
  return s;
}

// 1-based indices in range for `size` (when given), read on the host: the message names the
// entry in R's terms.
void check_one_based(const Tensor& indices, const std::optional<Shape>& size) {
  constexpr const char* kFn = "torch_sparse_coo_tensor";
  const Tensor host = to(indices, Device(), DType::Int64);
  if (host.dim() != 2) return;  // the engine names the shape
  const int64_t sparse_dim = host.size(0), nnz = host.size(1);
  const int64_t* idx = host.data<int64_t>();
  for (int64_t d = 0; d < sparse_dim; ++d) {
    for (int64_t i = 0; i < nnz; ++i) {
      const int64_t v = idx[d * nnz + i];
      RCUDA_CHECK(v >= 1, IndexError, kFn, ": indices[", d + 1, ", ", i + 1, "] = ", v,
                  " is out of range: indices count from 1");
      if (size && d < static_cast<int64_t>(size->size())) {
        RCUDA_CHECK(v <= (*size)[d], IndexError, kFn, ": indices[", d + 1, ", ", i + 1, "] = ", v,
                    " is out of range for size ", (*size)[d], " of dim ", d + 1);
      }
    }
  }
}

}  // namespace

// indices: an integral tensor [sparse_dim, nnz], 1-based; size: NULL or the sizes.
extern "C" SEXP rc_sparse_coo_tensor(SEXP indices, SEXP values, SEXP size) {
  RCUDA_BEGIN
  const Tensor& i = unwrap(indices);
  RCUDA_CHECK(is_integral(i.dtype(), false), DTypeError,
              "torch_sparse_coo_tensor: indices must be an integer tensor (torch_long()), got ",
              dtype_name(i.dtype()));
  std::optional<Shape> shape;
  if (size != R_NilValue) shape = shape_arg(size);
  check_one_based(i, shape);
  const Tensor zero_based = sub(to(i, i.device(), DType::Int64), Scalar(int64_t{1}));
  return sparse_to_r(ops::sparse_coo_tensor(zero_based, unwrap(values), shape));
  RCUDA_END
}

extern "C" SEXP rc_sparse_to_dense(SEXP x) {
  RCUDA_BEGIN
  return wrap(to_dense(sparse_from_r(x, "to_dense")));
  RCUDA_END
}

extern "C" SEXP rc_sparse_coalesce(SEXP x) {
  RCUDA_BEGIN
  return sparse_to_r(ops::coalesce(sparse_from_r(x, "coalesce")));
  RCUDA_END
}

// sparse_dim: NULL (every dim) or a count.
extern "C" SEXP rc_to_sparse(SEXP x, SEXP sparse_dim) {
  RCUDA_BEGIN
  std::optional<int64_t> sd;
  if (sparse_dim != R_NilValue) sd = static_cast<int64_t>(Rf_asReal(sparse_dim));
  return sparse_to_r(ops::to_sparse(unwrap(x), sd));
  RCUDA_END
}

extern "C" SEXP rc_sparse_mm(SEXP x, SEXP dense) {
  RCUDA_BEGIN
  return wrap(sparse_mm(sparse_from_r(x, "torch_sparse_mm"), unwrap(dense)));
  RCUDA_END
}
