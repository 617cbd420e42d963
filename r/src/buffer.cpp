// Tensors over R's memory and R's memory from tensors: torch_tensor_from_buffer(),
// buffer_from_torch_tensor(), and the addresses $data_ptr() and $storage()$data_ptr() give.
//
// Note [Buffers keep their R vector]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A tensor from a buffer is a Storage over the R vector's bytes (the engine's constructor for
// memory owned elsewhere, as DLPack import uses), whose keep-alive preserves the vector from
// R's collector until the last tensor on that storage (views included) is gone. The release
// must run on R's thread: a storage can be dropped elsewhere (the engine's autograd threads
// hold saved tensors), so a release off R's thread waits in a queue that the next release or
// the next buffer made on R's thread empties. The vector is left as R's own: R code that
// modifies it in place is seen by the tensor, as the tensor's writes are seen by R.
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "rcuda/autograd/funnel.h"
#include "rcuda_r.h"

namespace rcuda::r {
namespace {

std::thread::id r_thread;  // set by every rc_tensor_from_buffer call, which runs on R's thread
std::mutex pending_mutex;
std::vector<SEXP> pending_release;

void release_pending() {
  std::vector<SEXP> now;
  {
    std::lock_guard<std::mutex> lock(pending_mutex);
    now.swap(pending_release);
  }
  for (SEXP x : now) R_ReleaseObject(x);
}

// Note [Buffers keep their R vector].
std::shared_ptr<void> keep_r_vector(SEXP x) {
  R_PreserveObject(x);
  return std::shared_ptr<void>(static_cast<void*>(x), [](void* p) {
    if (std::this_thread::get_id() == r_thread) {
      R_ReleaseObject(static_cast<SEXP>(p));
      release_pending();
    } else {
      std::lock_guard<std::mutex> lock(pending_mutex);
      pending_release.push_back(static_cast<SEXP>(p));
    }
  });
}

// The first byte of an R atomic vector of the types torch_tensor_from_buffer takes (R/ checks).
void* vector_bytes(SEXP x, size_t* nbytes) {
  const auto n = static_cast<size_t>(Rf_xlength(x));
  switch (TYPEOF(x)) {
    case RAWSXP:
      *nbytes = n;
      return RAW(x);
    case LGLSXP:
      *nbytes = n * sizeof(int);
      return LOGICAL(x);
    case INTSXP:
      *nbytes = n * sizeof(int);
      return INTEGER(x);
    case REALSXP:
      *nbytes = n * sizeof(double);
      return REAL(x);
    case CPLXSXP:
      *nbytes = n * sizeof(Rcomplex);
      return COMPLEX(x);
    default:
      throw ValueError(detail::concat(kGlueMessage, "torch_tensor_from_buffer: buffer must be a ",
                                      "raw, logical, integer, double or complex vector, got an R ",
                                      Rf_type2char(TYPEOF(x))));
  }
}

SEXP address_string(const void* p) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", p);
  return Rf_mkString(text);
}

}  // namespace
}  // namespace rcuda::r

using namespace rcuda;
using namespace rcuda::r;

// A contiguous CPU tensor of `shape` and `dtype` over buffer's bytes (row-major, as torch for
// R's), without a copy (Note [Buffers keep their R vector]).
extern "C" SEXP rc_tensor_from_buffer(SEXP buffer, SEXP shape, SEXP dtype) {
  RCUDA_BEGIN
  r_thread = std::this_thread::get_id();
  release_pending();
  size_t available = 0;
  void* data = vector_bytes(buffer, &available);
  Shape dims = shape_arg(shape);
  const DType type = *dtype_arg(dtype);
  const int64_t count = checked_numel(dims, "torch_tensor_from_buffer");
  const size_t element = element_size(type);
  if (static_cast<uint64_t>(count) > available / element) {
    char needed[32];  // (as a double: count x element may pass 2^64)
    std::snprintf(needed, sizeof(needed), "%.0f",
                  static_cast<double>(count) * static_cast<double>(element));
    throw ValueError(detail::concat(kGlueMessage, "torch_tensor_from_buffer: buffer has ",
                                    available, " bytes and shape ", shape_str(dims), " of ",
                                    dtype_name(type), " needs ", needed));
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(data, available, Device(), keep_r_vector(buffer));
  impl->strides = contiguous_strides(dims);
  impl->shape = std::move(dims);
  impl->dtype = type;
  return wrap(Tensor(std::move(impl)));
  RCUDA_END
}

// The bytes of x, contiguous and row-major, as a raw vector; a GPU tensor is copied to the CPU
// first.
extern "C" SEXP rc_buffer_from_tensor(SEXP x) {
  RCUDA_BEGIN
  NoGradGuard no_grad;
  autograd::report_host_read("buffer_from_torch_tensor", unwrap(x));
  autograd::UnobservedGuard unobserved;
  Tensor t = unwrap(x);
  if (!t.device().is_cpu()) t = to(t, Device());
  t = contiguous(t);
  const size_t nbytes = static_cast<size_t>(t.numel()) * t.element_size();
  SEXP out = PROTECT(Rf_allocVector(RAWSXP, static_cast<R_xlen_t>(nbytes)));
  if (nbytes > 0) std::memcpy(RAW(out), t.data_ptr(), nbytes);
  UNPROTECT(1);
  return out;
  RCUDA_END
}

// The address of x's first element, or (storage = TRUE) of the start of its storage, which every
// view of the same memory shares; as "%p" writes it ("0x55d0c..."), torch for R's form.
extern "C" SEXP rc_data_ptr(SEXP x, SEXP storage) {
  RCUDA_BEGIN
  const Tensor& t = unwrap(x);
  return address_string(Rf_asLogical(storage) == TRUE ? t.storage()->data() : t.data_ptr());
  RCUDA_END
}
