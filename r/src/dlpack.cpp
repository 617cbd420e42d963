// as_dlpack() and from_dlpack(): tensors shared with Python through DLPack (docs/dlpack.md), the
// C half. The Python half is inst/python/rcuda_dlpack.py, which reticulate loads on first use;
// rcuda itself is built and runs without Python.
//
// Note [Addresses between R, C and Python]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Pointers cross R as decimal strings ("140234..."): R has no 64-bit integer, a double would
// round addresses above 2^53, and Python's int() reads the string exactly. Each string is checked
// (digits only, non-zero, in range) before it becomes a pointer. Python reaches the C functions
// below through their addresses (rc_dlpack_entry_points), called with ctypes, never through R:
// __dlpack__ works from any Python thread and outlives the R objects it came from.
//
// Note [Capsule destructor]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A capsule's destructor runs when Python frees it, possibly while an exception is pending: a
// consumer that refuses the tensor (NumPy and a dtype it lacks) frees the capsule after setting
// its error. A ctypes callback cannot run then (ctypes reports the pending error as its own and
// the consumer's message is lost), so the destructor is C: the DLPack specification's reference
// destructor, calling the Python C API through addresses the Python module hands over once
// (rcuda_dlpack.py's init, from ctypes.pythonapi), so that nothing links libpython.
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "rcuda/io/dlpack.h"
#include "rcuda_r.h"

namespace rcuda::r {
namespace {

// What a Python RcudaTensor owns: its own handle on the tensor, so that the memory lives as long
// as the Python object, whatever R does with its handles.
struct DLPackSource {
  Tensor tensor;
};

std::string address_str(const void* p) { return std::to_string(reinterpret_cast<uintptr_t>(p)); }

void* address_arg(SEXP x, const char* op, const char* what) {
  RCUDA_CHECK(TYPEOF(x) == STRSXP && Rf_length(x) == 1 && STRING_ELT(x, 0) != NA_STRING, ValueError,
              op, ": ", what, " must be one address as a string");
  const char* text = CHAR(STRING_ELT(x, 0));
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  const bool digits = text[0] >= '0' && text[0] <= '9';
  RCUDA_CHECK(digits && *end == '\0' && errno == 0 && value != 0 && value <= UINTPTR_MAX,
              ValueError, op, ": ", what, " \"", text, "\" is not an address");
  const auto address = static_cast<uintptr_t>(value);
  return reinterpret_cast<void*>(address);  // NOLINT(performance-no-int-to-ptr)
}

// ---- the Python C API, as handed over by rcuda_dlpack.py (Note [Capsule destructor]) --------

struct PythonApi {
  int (*capsule_is_valid)(void* capsule, const char* name);
  void* (*capsule_get_pointer)(void* capsule, const char* name);
  void (*err_fetch)(void** type, void** value, void** traceback);
  void (*err_restore)(void* type, void* value, void* traceback);
};
PythonApi python_api{};
std::atomic<bool> python_api_set{false};

// Python calls these through ctypes: no exception may leave them, and no R API is used.

// The DLPack specification's destructor: a capsule still named "dltensor[_versioned]" was never
// consumed, so its managed tensor is released here; a consumed one ("used_...") is the
// consumer's. The pending exception, if any, is kept.
extern "C" void rcuda_dlpack_capsule_destructor(void* capsule) {
  if (!python_api_set.load(std::memory_order_acquire)) return;  // leaks rather than crashes
  const PythonApi& api = python_api;
  if (api.capsule_is_valid(capsule, "used_dltensor_versioned") ||
      api.capsule_is_valid(capsule, "used_dltensor"))
    return;
  void *type = nullptr, *value = nullptr, *traceback = nullptr;
  api.err_fetch(&type, &value, &traceback);
  if (api.capsule_is_valid(capsule, "dltensor_versioned")) {
    io::delete_managed(static_cast<DLManagedTensorVersioned*>(
        api.capsule_get_pointer(capsule, "dltensor_versioned")));
  } else if (api.capsule_is_valid(capsule, "dltensor")) {
    io::delete_managed(static_cast<DLManagedTensor*>(api.capsule_get_pointer(capsule, "dltensor")));
  }
  api.err_restore(type, value, traceback);
}

extern "C" void rcuda_dlpack_set_python_api(void* is_valid, void* get_pointer, void* err_fetch,
                                            void* err_restore) {
  python_api.capsule_is_valid = reinterpret_cast<int (*)(void*, const char*)>(is_valid);
  python_api.capsule_get_pointer = reinterpret_cast<void* (*)(void*, const char*)>(get_pointer);
  python_api.err_fetch = reinterpret_cast<void (*)(void**, void**, void**)>(err_fetch);
  python_api.err_restore = reinterpret_cast<void (*)(void*, void*, void*)>(err_restore);
  python_api_set.store(true, std::memory_order_release);
}

// __dlpack__'s work: a new managed tensor for the source's tensor, its consumer's stream ordered
// (Note [DLPack streams] in rcuda/io/dlpack.h). 0 on success; else the error's message in
// `error` and 1 for a bad argument (Python's ValueError), 2 for a failed export (BufferError).
extern "C" int rcuda_dlpack_export(void* source, int versioned, int copy, int has_stream,
                                   int64_t stream, void** out, char* error, size_t error_size) {
  try {
    io::DLPackExportOptions options;
    if (has_stream) options.stream = stream;
    options.copy = copy != 0;
    const Tensor& t = static_cast<DLPackSource*>(source)->tensor;
    *out = versioned ? static_cast<void*>(io::to_dlpack_versioned(t, options))
                     : static_cast<void*>(io::to_dlpack(t, options));
    return 0;
  } catch (const Error& e) {
    std::snprintf(error, error_size, "%s", e.what());
    return std::strcmp(e.kind(), "ValueError") == 0 ? 1 : 2;
  } catch (const std::exception& e) {
    std::snprintf(error, error_size, "%s", e.what());
  } catch (...) {
    std::snprintf(error, error_size, "__dlpack__: unknown error");
  }
  return 2;
}

// A Python object's own handle (a copy of the source's), and its release.
extern "C" void* rcuda_dlpack_source_share(void* source) {
  try {
    return new DLPackSource(*static_cast<DLPackSource*>(source));
  } catch (...) {
    return nullptr;
  }
}

extern "C" void rcuda_dlpack_source_free(void* source) {
  delete static_cast<DLPackSource*>(source);
}

template <typename F>
std::string function_address(F* f) {
  return std::to_string(reinterpret_cast<uintptr_t>(f));
}

}  // namespace
}  // namespace rcuda::r

using namespace rcuda;
using namespace rcuda::r;

extern "C" SEXP rc_dlpack_entry_points() {
  RCUDA_BEGIN
  const char* names[] = {"export", "share", "free", "capsule_destructor", "set_python_api"};
  const std::string addresses[] = {function_address(&rcuda_dlpack_export),
                                   function_address(&rcuda_dlpack_source_share),
                                   function_address(&rcuda_dlpack_source_free),
                                   function_address(&rcuda_dlpack_capsule_destructor),
                                   function_address(&rcuda_dlpack_set_python_api)};
  cpp11::writable::strings out(5);
  cpp11::writable::strings out_names(5);
  for (int i = 0; i < 5; ++i) {
    out[i] = addresses[i];
    out_names[i] = names[i];
  }
  out.names() = out_names;
  return out;
  RCUDA_END
}

// as_dlpack's first step: a handle on x that R owns (the external pointer) and Python copies
// (rcuda_dlpack_source_share), with what __dlpack_device__ and repr() tell.
extern "C" SEXP rc_dlpack_source(SEXP x) {
  RCUDA_BEGIN
  const Tensor& t = unwrap(x);
  io::check_exportable(t, "as_dlpack");
  auto source = std::make_unique<DLPackSource>(DLPackSource{t.alias()});
  const io::DLPackDevice device = io::dlpack_device(t.device());
  const std::string description =
      std::string(dtype_name(t.dtype())) + " " + shape_str(t.shape()) + " on " + t.device().str();
  const std::string address = address_str(source.get());
  cpp11::writable::list out({cpp11::sexp(external_pointer(std::move(source))),
                             cpp11::as_sexp(address), cpp11::as_sexp(device.type),
                             cpp11::as_sexp(device.id), cpp11::as_sexp(description)});
  out.names() = {"pointer", "address", "device_type", "device_id", "description"};
  return out;
  RCUDA_END
}

// The stream from_dlpack passes to a producer's __dlpack__ (NULL for the CPU), after checking
// that rcuda takes the producer's device at all.
extern "C" SEXP rc_dlpack_consumer_stream(SEXP device_type, SEXP device_id) {
  RCUDA_BEGIN
  const Device device = io::device_from_dlpack(cpp11::as_cpp<int>(device_type),
                                               cpp11::as_cpp<int>(device_id), "from_dlpack");
  const std::optional<int64_t> stream = io::consumer_stream(device);
  if (!stream) return R_NilValue;
  return cpp11::as_sexp(std::to_string(*stream));
  RCUDA_END
}

extern "C" SEXP rc_from_dlpack(SEXP address, SEXP versioned, SEXP copy) {
  RCUDA_BEGIN
  void* managed = address_arg(address, "from_dlpack", "the capsule's pointer");
  const bool take_copy = cpp11::as_cpp<bool>(copy);
  Tensor t = cpp11::as_cpp<bool>(versioned)
                 ? io::from_dlpack(static_cast<DLManagedTensorVersioned*>(managed), take_copy)
                 : io::from_dlpack(static_cast<DLManagedTensor*>(managed), take_copy);
  return wrap(std::move(t));
  RCUDA_END
}

extern "C" SEXP rc_dlpack_counts() {
  RCUDA_BEGIN
  const io::DLPackCounts c = io::dlpack_counts();
  cpp11::writable::doubles out(
      {static_cast<double>(c.exported), static_cast<double>(c.exports_deleted),
       static_cast<double>(c.imported), static_cast<double>(c.imports_released)});
  out.names() = {"exported", "exports_deleted", "imported", "imports_released"};
  return out;
  RCUDA_END
}
