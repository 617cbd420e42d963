// R vectors and arrays to tensors and back.
//
// Note [R layout]
// ~~~~~~~~~~~~~~~
// R arrays are column-major, tensors row-major. R's buffer read as a row-major tensor of the
// reversed dims, then permuted back, is exactly the R array as a (strided) tensor view. So a
// conversion wraps R's memory in such a view without copying and lets one copy_ do the dtype
// change and the transpose together; nothing is copied twice.
#include <cmath>
#include <numeric>

#include "rcuda/autograd/funnel.h"
#include "rcuda_r.h"

namespace rcuda::r {
namespace {

// The view of an R buffer described in Note [R layout]. The view borrows the memory: it must
// not outlive the call (the R object is protected as a .Call argument or a local).
Tensor r_memory_view(void* data, const Shape& r_dims, DType dtype) {
  Shape reversed(r_dims.rbegin(), r_dims.rend());
  auto impl = std::make_shared<TensorImpl>();
  const size_t nbytes = static_cast<size_t>(numel(reversed)) * element_size(dtype);
  impl->storage = std::make_shared<Storage>(data, nbytes, Device(), nullptr);
  impl->shape = reversed;
  impl->strides = contiguous_strides(reversed);
  impl->dtype = dtype;
  std::vector<int64_t> order(reversed.size());
  std::iota(order.rbegin(), order.rend(), 0);
  return Tensor(impl).permute(order);
}

Shape r_dims_of(SEXP x) {
  SEXP dim = Rf_getAttrib(x, R_DimSymbol);
  if (Rf_isNull(dim)) return {static_cast<int64_t>(Rf_xlength(x))};
  Shape shape(Rf_length(dim));
  for (int i = 0; i < Rf_length(dim); ++i) shape[i] = INTEGER(dim)[i];
  return shape;
}

bool has_na_int(SEXP x) {
  const int* p = INTEGER(x);
  for (R_xlen_t i = 0, n = Rf_xlength(x); i < n; ++i)
    if (p[i] == NA_INTEGER) return true;
  return false;
}

bool has_nan(SEXP x) {
  const double* p = REAL(x);
  for (R_xlen_t i = 0, n = Rf_xlength(x); i < n; ++i)
    if (std::isnan(p[i])) return true;
  return false;
}

}  // namespace
}  // namespace rcuda::r

using namespace rcuda;
using namespace rcuda::r;

namespace rcuda::r {

// torch_tensor(data, dtype, device): doubles default to the default floating dtype (float32
// unless torch_set_default_dtype() changed it), integers to int64, logicals to bool, complex
// numbers to complex64, as torch for R. NA becomes NaN in floating dtypes and is an error
// elsewhere.
Tensor from_r(SEXP data, std::optional<DType> dtype, Device device) {
  const int type = TYPEOF(data);
  RCUDA_CHECK(type == REALSXP || type == INTSXP || type == LGLSXP || type == CPLXSXP, DTypeError,
              "torch_tensor: cannot convert an R ", Rf_type2char(type),
              " (expected double, integer, logical or complex)");
  if (type == CPLXSXP) {
    // Rcomplex is two doubles, real part first: complex128's layout (Note [Complex tensors]).
    const Tensor view = r_memory_view(COMPLEX(data), r_dims_of(data), DType::Complex128);
    Tensor out = empty(view.shape(), TensorOptions(dtype.value_or(DType::Complex64)));
    copy_(out, view);
    return device.is_cpu() ? out : to(out, device);
  }
  const DType target = dtype.value_or(type == REALSXP  ? default_float_dtype()
                                      : type == INTSXP ? DType::Int64
                                                       : DType::Bool);
  cpp11::sexp source = data;
  if (type == REALSXP) {
    RCUDA_CHECK(is_floating(target) || !has_nan(data), ValueError,
                "torch_tensor: NA/NaN cannot be stored in a ", dtype_name(target),
                " tensor (only floating dtypes hold NaN)");
  } else if (has_na_int(data)) {
    RCUDA_CHECK(is_floating(target), ValueError, "torch_tensor: NA cannot be stored in a ",
                dtype_name(target), " tensor (only floating dtypes hold NA, as NaN)");
    source = cpp11::safe[Rf_coerceVector](data, REALSXP);  // NA -> NA_real_, a NaN
  }
  const bool is_double = TYPEOF(source) == REALSXP;
  void* memory = is_double ? static_cast<void*>(REAL(source)) : static_cast<void*>(INTEGER(source));
  Tensor view = r_memory_view(memory, r_dims_of(data), is_double ? DType::Float64 : DType::Int32);
  Tensor out = empty(view.shape(), TensorOptions(target));
  copy_(out, view);
  if (!device.is_cpu()) out = to(out, device);
  return out;
}

}  // namespace rcuda::r

extern "C" SEXP rc_from_r(SEXP data, SEXP dtype, SEXP device) {
  RCUDA_BEGIN
  return wrap(from_r(data, dtype_arg(dtype), device_arg(device)));
  RCUDA_END
}

// as_array(): floating dtypes give doubles, bool gives logicals, uint8 gives raw bytes, complex
// dtypes give complex numbers, the other integers give integers (int64
// values past R's integer range are refused with a warning, as torch for R warns). 0-d and 1-d
// tensors give plain vectors; more dims give matrices and arrays.
extern "C" SEXP rc_to_r(SEXP x) {
  RCUDA_BEGIN
  NoGradGuard no_grad;  // reading values is no op of the graph (a tensor may require grad)
  autograd::report_host_read("as_array", unwrap(x));
  autograd::UnobservedGuard unobserved;  // the copy into R's memory is not the traced code's
  Tensor t = unwrap(x);
  if (!t.device().is_cpu()) t = to(t, Device());
  // uint8 gives R's raw bytes, as torch for R (its Byte tensors convert to raw vectors).
  const int type = is_floating(t.dtype())      ? REALSXP
                   : is_complex(t.dtype())     ? CPLXSXP
                   : t.dtype() == DType::Bool  ? LGLSXP
                   : t.dtype() == DType::UInt8 ? RAWSXP
                                               : INTSXP;
  if (t.dtype() == DType::Int64 && t.numel() > 0) {
    const double big = 2147483647.0;
    const bool out_of_range =
        item(any(logical_or(gt(t, Scalar(big)), lt(t, Scalar(-big))))).to_bool();
    if (out_of_range)
      cpp11::warning(
          "as_array: int64 values beyond R's integer range (+-2147483647) do not fit "
          "an R integer and come back wrong; convert with $to(dtype = torch_double())");
  }
  Shape dims = t.shape();
  cpp11::sexp out = cpp11::safe[Rf_allocVector](type, static_cast<R_xlen_t>(t.numel()));
  if (t.numel() > 0) {
    void* memory = type == REALSXP   ? static_cast<void*>(REAL(out))
                   : type == CPLXSXP ? static_cast<void*>(COMPLEX(out))
                   : type == RAWSXP  ? static_cast<void*>(RAW(out))
                                     : static_cast<void*>(INTEGER(out));
    Tensor view = r_memory_view(memory, dims.empty() ? Shape{1} : dims,
                                type == REALSXP   ? DType::Float64
                                : type == CPLXSXP ? DType::Complex128
                                : type == RAWSXP  ? DType::UInt8
                                                  : DType::Int32);
    copy_(view, dims.empty() ? t.view({1}) : t);
  }
  if (dims.size() >= 2) {
    cpp11::writable::integers r_dims(static_cast<R_xlen_t>(dims.size()));
    for (size_t i = 0; i < dims.size(); ++i) r_dims[i] = static_cast<int>(dims[i]);
    Rf_setAttrib(out, R_DimSymbol, r_dims);
  }
  return out;
  RCUDA_END
}

// The value of a one-element tensor as an R scalar of the matching type.
extern "C" SEXP rc_item(SEXP x) {
  RCUDA_BEGIN
  NoGradGuard no_grad;
  const Tensor& t = unwrap(x);
  autograd::report_host_read("item", t);
  autograd::UnobservedGuard unobserved;
  if (is_complex(t.dtype())) {
    RCUDA_CHECK(t.numel() == 1, ValueError, "item: a tensor with ", t.numel(),
                " elements cannot be converted to a scalar (it needs exactly one)");
    const Tensor host = to(reshape(t, {1}), Device(), DType::Complex128);
    const double* parts = host.data<double>();
    Rcomplex z;
    z.r = parts[0];
    z.i = parts[1];
    return Rf_ScalarComplex(z);
  }
  const Scalar v = item(t);
  if (is_floating(t.dtype())) return Rf_ScalarReal(v.to_double());
  if (t.dtype() == DType::Bool) return Rf_ScalarLogical(v.to_bool());
  const int64_t i = v.to_int();
  return i > 2147483647 || i < -2147483647 ? Rf_ScalarReal(static_cast<double>(i))
                                           : Rf_ScalarInteger(static_cast<int>(i));
  RCUDA_END
}
