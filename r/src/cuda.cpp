// CUDA devices and memory. Every function works in CPU-only builds of the engine: counts are
// 0 and the rest raise rcuda_device_error naming the missing backend.
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;
using namespace cpp11::literals;

extern "C" SEXP rc_cuda_info() {
  RCUDA_BEGIN
  return cpp11::writable::list({"built"_nm = cuda::is_built(),
                                "device_count"_nm = cuda::device_count(),
                                "unavailable_reason"_nm = cuda::unavailable_reason(),
                                "runtime_version"_nm = cuda::runtime_version(),
                                "driver_version"_nm = cuda::driver_version()});
  RCUDA_END
}

extern "C" SEXP rc_cuda_properties(SEXP device) {
  RCUDA_BEGIN
  const cuda::DeviceProperties p = cuda::properties(Rf_asInteger(device));
  return cpp11::writable::list({"name"_nm = p.name, "major"_nm = p.major, "minor"_nm = p.minor,
                                "total_memory"_nm = static_cast<double>(p.total_memory_bytes),
                                "multi_processor_count"_nm = p.multiprocessor_count,
                                "uuid"_nm = p.uuid});
  RCUDA_END
}

extern "C" SEXP rc_cuda_current_device() {
  RCUDA_BEGIN
  return Rf_ScalarInteger(cuda::current_device());
  RCUDA_END
}

extern "C" SEXP rc_cuda_synchronize(SEXP device) {
  RCUDA_BEGIN
  cuda::synchronize(Rf_asInteger(device));
  return R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_cuda_memory_stats(SEXP device) {
  RCUDA_BEGIN
  const MemoryStats s = cuda::memory_stats(Rf_asInteger(device));
  return cpp11::writable::list(
      {"allocated_bytes.all.current"_nm = static_cast<double>(s.allocated_bytes),
       "allocated_bytes.all.peak"_nm = static_cast<double>(s.peak_allocated_bytes),
       "reserved_bytes.all.current"_nm = static_cast<double>(s.reserved_bytes),
       "reserved_bytes.all.peak"_nm = static_cast<double>(s.peak_reserved_bytes),
       "num_alloc_retries"_nm = static_cast<double>(s.retry_count),
       "num_ooms"_nm = static_cast<double>(s.oom_count),
       "allocation.all.allocated"_nm = static_cast<double>(s.allocation_count),
       "allocation.all.freed"_nm = static_cast<double>(s.free_count)});
  RCUDA_END
}

extern "C" SEXP rc_cuda_reset_peak_memory_stats(SEXP device) {
  RCUDA_BEGIN
  cuda::reset_peak_memory_stats(Rf_asInteger(device));
  return R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_cuda_empty_cache(SEXP device) {
  RCUDA_BEGIN
  cuda::empty_cache(Rf_asInteger(device));
  return R_NilValue;
  RCUDA_END
}
