// Metadata, views, copies and indexing primitives. Dims and indices arrive 1-based from R
// (dim_arg converts dims; the indexing code in indexing.R converts element positions).
#include <climits>

#include "nn_glue.h"
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {
cpp11::writable::integers r_ints(const std::vector<int64_t>& v) {
  cpp11::writable::integers out(static_cast<R_xlen_t>(v.size()));
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<int>(v[i]);
  return out;
}
int64_t int_arg(SEXP x) { return static_cast<int64_t>(Rf_asReal(x)); }
}  // namespace

// list(shape, dtype name, device string): one call for everything printing and `$` need.
extern "C" SEXP rc_meta(SEXP x) {
  RCUDA_BEGIN
  const Tensor& t = unwrap(x);
  cpp11::writable::list out(3);
  out[0] = r_ints(t.shape());
  out[1] = cpp11::as_sexp(dtype_name(t.dtype()));
  out[2] = cpp11::as_sexp(t.device().str());
  return out;
  RCUDA_END
}

extern "C" SEXP rc_shape(SEXP x) {
  RCUDA_BEGIN
  return r_ints(unwrap(x).shape());
  RCUDA_END
}

extern "C" SEXP rc_numel(SEXP x) {
  RCUDA_BEGIN
  return Rf_ScalarReal(static_cast<double>(unwrap(x).numel()));
  RCUDA_END
}

extern "C" SEXP rc_is_contiguous(SEXP x, SEXP channels_last) {
  RCUDA_BEGIN
  const Tensor& t = unwrap(x);
  if (flag(channels_last))
    return Rf_ScalarLogical(t.dim() == 4 &&
                            t.strides() ==
                                memory_format_strides(t.shape(), MemoryFormat::ChannelsLast));
  return Rf_ScalarLogical(t.is_contiguous());
  RCUDA_END
}

// Strides and the storage offset, in elements, as torch for R's $stride() and
// $storage_offset(). They can pass R's integer range where no size does (a [3, 2^30] tensor's
// first stride), so they come back as doubles when any one would not fit.
namespace {
SEXP r_counts(const std::vector<int64_t>& v) {
  bool fits = true;
  for (int64_t e : v) fits = fits && e <= INT_MAX && e >= -INT_MAX;
  if (fits) return r_ints(v);
  cpp11::writable::doubles out(static_cast<R_xlen_t>(v.size()));
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<double>(v[i]);
  return out;
}
}  // namespace

extern "C" SEXP rc_strides(SEXP x) {
  RCUDA_BEGIN
  return r_counts(unwrap(x).strides());
  RCUDA_END
}

extern "C" SEXP rc_storage_offset(SEXP x) {
  RCUDA_BEGIN
  return r_counts({unwrap(x).offset()});
  RCUDA_END
}

// kind: "view" or "reshape"; size may hold one -1.
extern "C" SEXP rc_reshape(SEXP kind, SEXP x, SEXP size) {
  RCUDA_BEGIN
  const Shape shape = shape_arg(size);
  if (std::string(CHAR(STRING_ELT(kind, 0))) == "view") return wrap(unwrap(x).view(shape));
  return wrap(reshape(unwrap(x), shape));
  RCUDA_END
}

extern "C" SEXP rc_permute(SEXP x, SEXP dims) {
  RCUDA_BEGIN
  return wrap(unwrap(x).permute(dims_arg(dims, "permute")));
  RCUDA_END
}

extern "C" SEXP rc_transpose(SEXP x, SEXP dim0, SEXP dim1) {
  RCUDA_BEGIN
  return wrap(unwrap(x).transpose(dim_arg(dim0, "transpose"), dim_arg(dim1, "transpose")));
  RCUDA_END
}

extern "C" SEXP rc_t(SEXP x) {
  RCUDA_BEGIN
  return wrap(unwrap(x).t());
  RCUDA_END
}

// Elements start..end (1-based, inclusive) by step along dim.
extern "C" SEXP rc_slice(SEXP x, SEXP dim, SEXP start, SEXP end, SEXP step) {
  RCUDA_BEGIN
  return wrap(
      unwrap(x).slice(dim_arg(dim, "slice"), int_arg(start) - 1, int_arg(end), int_arg(step)));
  RCUDA_END
}

// One position (1-based) along dim; the dim is removed.
extern "C" SEXP rc_select(SEXP x, SEXP dim, SEXP index) {
  RCUDA_BEGIN
  return wrap(unwrap(x).select(dim_arg(dim, "select"), int_arg(index) - 1));
  RCUDA_END
}

extern "C" SEXP rc_narrow(SEXP x, SEXP dim, SEXP start, SEXP length) {
  RCUDA_BEGIN
  return wrap(unwrap(x).narrow(dim_arg(dim, "narrow"), int_arg(start) - 1, int_arg(length)));
  RCUDA_END
}

extern "C" SEXP rc_expand(SEXP x, SEXP size) {
  RCUDA_BEGIN
  return wrap(unwrap(x).expand(shape_arg(size)));
  RCUDA_END
}

extern "C" SEXP rc_squeeze(SEXP x, SEXP dim) {
  RCUDA_BEGIN
  if (Rf_isNull(dim)) return wrap(unwrap(x).squeeze());
  return wrap(unwrap(x).squeeze(dim_arg(dim, "squeeze")));
  RCUDA_END
}

extern "C" SEXP rc_unsqueeze(SEXP x, SEXP dim) {
  RCUDA_BEGIN
  // unsqueeze accepts one dim past the end: dim = ndim + 1 appends.
  return wrap(unwrap(x).unsqueeze(dim_arg(dim, "unsqueeze")));
  RCUDA_END
}

extern "C" SEXP rc_flatten(SEXP x, SEXP start_dim, SEXP end_dim) {
  RCUDA_BEGIN
  return wrap(flatten(unwrap(x), dim_arg(start_dim, "flatten"), dim_arg(end_dim, "flatten")));
  RCUDA_END
}

// kind: "contiguous", "channels_last" (contiguous in that memory format) or "clone".
extern "C" SEXP rc_copy(SEXP kind, SEXP x) {
  RCUDA_BEGIN
  const std::string k = CHAR(STRING_ELT(kind, 0));
  if (k == "clone") return wrap(clone(unwrap(x)));
  if (k == "channels_last") return wrap(contiguous(unwrap(x), MemoryFormat::ChannelsLast));
  return wrap(contiguous(unwrap(x)));
  RCUDA_END
}

// dtype and device may each be NULL (unchanged).
extern "C" SEXP rc_to(SEXP x, SEXP dtype, SEXP device) {
  RCUDA_BEGIN
  const Tensor& t = unwrap(x);
  const DType d = dtype_arg(dtype).value_or(t.dtype());
  const Device dev = Rf_isNull(device) ? t.device() : device_arg(device);
  return wrap(to(t, dev, d));
  RCUDA_END
}

// index: an R integer vector of 1-based positions (negative from the end).
extern "C" SEXP rc_index_select(SEXP x, SEXP dim, SEXP index) {
  RCUDA_BEGIN
  const Tensor& t = unwrap(x);
  const int64_t d = wrap_dim(dim_arg(dim, "index_select"), t.dim(), "index_select");
  const int64_t n = t.size(d);
  std::vector<int64_t> positions(Rf_xlength(index));
  for (size_t i = 0; i < positions.size(); ++i) {
    const double v = TYPEOF(index) == INTSXP ? INTEGER(index)[i] : REAL(index)[i];
    RCUDA_CHECK(v != 0 && v >= -n && v <= n, IndexError, "index: position ", v,
                " is out of range for dim ", d + 1, " of size ", n,
                " (positions start at 1; negative ones count from the end)");
    positions[i] = v > 0 ? static_cast<int64_t>(v) - 1 : n + static_cast<int64_t>(v);
  }
  Tensor idx = from_data(positions.data(), {static_cast<int64_t>(positions.size())}, DType::Int64,
                         t.device());
  return wrap(index_select(t, d, idx));
  RCUDA_END
}

extern "C" SEXP rc_masked_select(SEXP x, SEXP mask) {
  RCUDA_BEGIN
  return wrap(masked_select(unwrap(x), unwrap(mask)));
  RCUDA_END
}

// 1-based indices of the nonzero elements: a [z, ndim] tensor, or (as_list) one 1-D tensor per
// dim. A 0-d input counts as a 1-D tensor of one element in the list form, as torch.
extern "C" SEXP rc_nonzero(SEXP x, SEXP as_list) {
  RCUDA_BEGIN
  const Tensor& t = unwrap(x);
  if (!Rf_asLogical(as_list)) return wrap(add(nonzero(t), Scalar(int64_t{1})));
  const Tensor indices = add(nonzero(t.dim() == 0 ? reshape(t, {1}) : t), Scalar(int64_t{1}));
  cpp11::writable::list out(indices.size(1));
  for (int64_t d = 0; d < indices.size(1); ++d) out[d] = wrap(contiguous(indices.select(1, d)));
  return out;
  RCUDA_END
}

extern "C" SEXP rc_masked_fill(SEXP x, SEXP mask, SEXP value) {
  RCUDA_BEGIN
  return wrap(masked_fill(unwrap(x), unwrap(mask), scalar_arg(value, "masked_fill")));
  RCUDA_END
}

// Note [In-place views] in R/tensor-inplace.R: x's handle now holds `view`, a view of x's own
// storage, so every R variable holding x sees the new shape. Returns x.
extern "C" SEXP rc_rebind(SEXP x, SEXP view) {
  RCUDA_BEGIN
  const Tensor& v = unwrap(view);
  RCUDA_CHECK(v.storage() == unwrap(x).storage(), InternalError,
              "rebind: the view does not share the tensor's storage");
  *static_cast<Tensor*>(R_ExternalPtrAddr(x)) = v;
  return x;
  RCUDA_END
}

// In place: dst <- src (a tensor, broadcast) or a number. Returns dst.
extern "C" SEXP rc_assign(SEXP dst, SEXP src) {
  RCUDA_BEGIN
  const Tensor& d = unwrap(dst);
  if (is_tensor(src)) {
    copy_(d, unwrap(src));
  } else {
    fill_(d, scalar_arg(src, "assign"));
  }
  return dst;
  RCUDA_END
}
