// Shared by the glue files: turning R values into engine arguments and tensors into R objects,
// and the error boundary every .Call entry point sits behind.
//
// Note [Error boundary]
// ~~~~~~~~~~~~~~~~~~~~~
// R errors are longjmps; C++ errors are exceptions. Neither may cross the other's frames.
// Every entry point is `RCUDA_BEGIN ... RCUDA_END`: engine exceptions (rcuda::Error) are caught,
// their kind and message copied into a plain char buffer, and only after the try block has
// ended (so every C++ object of the call is destroyed) is the R condition signalled. R errors
// raised inside the try block by cpp11 (safe[] / unwind_protect) travel as
// cpp11::unwind_exception and are resumed with R_ContinueUnwind, as cpp11's END_CPP11 does.
#pragma once

#include <cpp11.hpp>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "rcuda/backend/cuda.h"
#include "rcuda/rcuda.h"

// Note [1-based messages]
// ~~~~~~~~~~~~~~~~~~~~~~~
// The engine counts dims, list positions and element indices from 0; R users count from 1.
// The glue's own checks already speak in R's terms, so their messages start with kGlueMessage
// (RCUDA_CHECK is redefined below for the glue's files: rcuda's public headers hold no checks
// of their own). conditions.R then shifts the engine's numbers by one (engine_error) and only
// strips the mark from the glue's.
#undef RCUDA_CHECK
#define RCUDA_CHECK(cond, ErrorType, ...)                                                         \
  do {                                                                                            \
    if (!(cond)) throw ErrorType(::rcuda::detail::concat(::rcuda::r::kGlueMessage, __VA_ARGS__)); \
  } while (0)

namespace rcuda::r {

inline constexpr char kGlueMessage[] = "\x01";

// ---- tensors as R objects (handles.cpp) ----------------------------------------------------
// A new external pointer of class "rcuda_tensor" owning a copy of the handle; its finalizer
// drops the handle when R collects it.
SEXP wrap(Tensor t);
// The tensor behind an rcuda_tensor; ValueError for anything else.
// Note [Undefined tensors]: an rcuda_tensor may hold an undefined tensor (what $grad returns
// before any backward, as torch for R's), which prints as such and which unwrap() refuses with
// a ValueError, so that no method reaches the engine with it.
const Tensor& unwrap(SEXP x);
bool is_tensor(SEXP x);
bool is_undefined(SEXP x);
// A list of tensors to R (an unnamed list of rcuda_tensors) and back; `op` and `what` name the
// caller and its argument in the error for a list, or an element, that is not one.
SEXP wrap_tensors(const std::vector<Tensor>& tensors);
std::vector<Tensor> unwrap_tensors(SEXP list, const std::string& op, const char* what);
// A named list of tensors (a model's parameters by name).
SEXP wrap_named_tensors(const std::vector<std::pair<std::string, Tensor>>& tensors);
// The element of a named R list called `name`, or R_NilValue (no such element, or no names).
SEXP list_element(SEXP list, const char* name);
// Note [GC pressure] 3 (handles.cpp): a step boundary, where a collection that is due runs; the
// optimizer's zero_grad() (kind 0) and step() (kind 1) call it before their work. Both release
// the handles no R object references (Note [Unreferenced tensors are released at step
// boundaries]); kReleaseOnly does only that (fit()'s evaluation batches).
constexpr int kReleaseOnly = 2;
void gc_safe_point(int kind);
// NULL or an undefined tensor as Tensor() (an optional argument: bias = NULL), else unwrap(x).
Tensor optional_tensor(SEXP x);

// An R vector or array as a tensor (convert.cpp; Note [R layout]).
Tensor from_r(SEXP data, std::optional<DType> dtype, Device device);

// ---- arguments (args.cpp) -------------------------------------------------------------------
// dtype names as the R side passes them ("float32", ...); NULL gives std::nullopt.
std::optional<DType> dtype_arg(SEXP x);
Device device_arg(SEXP x);  // "cpu", "cuda:0"; NULL gives the CPU
Shape shape_arg(SEXP x);    // integer or double vector of sizes (ValueError for anything else)
// R's 1-based dims (negative from the end) to the engine's 0-based ones; `op` names the caller.
int64_t dim_arg(SEXP x, const char* op);
std::vector<int64_t> dims_arg(SEXP x, const char* op);  // NULL: every dim
Scalar scalar_arg(SEXP x, const char* op);              // a length-1 numeric/integer/logical
// Whole numbers, one per spatial dim or one for all (kernel sizes, strides); NULL gives {}.
std::vector<int64_t> sizes_arg(SEXP x, const char* op, const char* arg);
bool is_scalar(SEXP x);

// An engine object owned by an R external pointer, deleted by the pointer's finalizer (the
// optimizer, the gradient scaler, the CUDA graph).
template <typename T>
SEXP external_pointer(std::unique_ptr<T> object) {
  SEXP ptr = PROTECT(R_MakeExternalPtr(object.get(), R_NilValue, R_NilValue));
  object.release();
  R_RegisterCFinalizerEx(
      ptr,
      [](SEXP p) {
        T* held = static_cast<T*>(R_ExternalPtrAddr(p));
        R_ClearExternalPtr(p);
        delete held;
      },
      TRUE);
  UNPROTECT(1);
  return ptr;
}

// The object behind external_pointer's result; ValueError with `gone` when there is none (a
// pointer saved with saveRDS and read back is null).
template <typename T>
T& external_object(SEXP ptr, const char* gone) {
  T* object = TYPEOF(ptr) == EXTPTRSXP ? static_cast<T*>(R_ExternalPtrAddr(ptr)) : nullptr;
  RCUDA_CHECK(object != nullptr, ValueError, gone);
  return *object;
}

// The engine optimizer behind an R optimizer's pointer (optim.cpp); ValueError when it is gone.
rcuda::optim::Optimizer& optimizer_of(SEXP ptr);

// Signals the R condition for an engine error (conditions.R); does not return.
[[noreturn]] void signal_error(const char* kind, const char* message);

}  // namespace rcuda::r

// The message buffer is not zero-filled: an 8 KiB memset would cost every call more than the
// add it wraps; only rcuda_error_kind_ says whether the buffer was written.
#define RCUDA_BEGIN                        \
  char rcuda_error_message_[8192];         \
  const char* rcuda_error_kind_ = nullptr; \
  SEXP rcuda_unwind_token_ = R_NilValue;   \
  try {
#define RCUDA_END                                                                      \
  }                                                                                    \
  catch (cpp11::unwind_exception & e) {                                                \
    rcuda_unwind_token_ = e.token;                                                     \
  }                                                                                    \
  catch (const rcuda::Error& e) {                                                      \
    rcuda_error_kind_ = e.kind();                                                      \
    std::snprintf(rcuda_error_message_, sizeof(rcuda_error_message_), "%s", e.what()); \
  }                                                                                    \
  catch (const std::exception& e) {                                                    \
    rcuda_error_kind_ = "Error";                                                       \
    std::snprintf(rcuda_error_message_, sizeof(rcuda_error_message_), "%s", e.what()); \
  }                                                                                    \
  if (rcuda_unwind_token_ != R_NilValue) R_ContinueUnwind(rcuda_unwind_token_);        \
  rcuda::r::signal_error(rcuda_error_kind_, rcuda_error_message_);
