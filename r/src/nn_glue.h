// Shared by the nn glue files (nn.cpp, nn_init.cpp, nn_module.cpp): engine messages name the C++
// function ("cross_entropy: ..."); these rename it to the R function the user called
// ("nnf_cross_entropy: ..."), keeping the error's type.
#pragma once

#include <cstring>
#include <string>

#include "rcuda_r.h"

namespace rcuda::r {

// An R logical argument: TRUE is true; FALSE and NA are false.
inline bool flag(SEXP x) { return Rf_asLogical(x) == TRUE; }

// Throws an error of e's type with `message`; called from inside a catch block.
[[noreturn]] inline void rethrow_as(const Error& e, const std::string& message) {
  const std::string kind = e.kind();
  if (kind == "ShapeError") throw ShapeError(message);
  if (kind == "DTypeError") throw DTypeError(message);
  if (kind == "DeviceError") throw DeviceError(message);
  if (kind == "IndexError") throw IndexError(message);
  if (kind == "ValueError") throw ValueError(message);
  throw;  // OutOfMemoryError, CudaError, InternalError: as they are
}

// Runs f, renaming the engine function `engine` to `r_name` at the start of an error message.
template <typename F>
auto as_r_function(const std::string& r_name, const std::string& engine, F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    const std::string what = e.what();
    // The glue's mark stays in front (Note [1-based messages] in rcuda_r.h).
    const size_t at = what.rfind(kGlueMessage, 0) == 0 ? 1 : 0;
    if (what.size() > at + engine.size() && what.compare(at, engine.size(), engine) == 0 &&
        what[at + engine.size()] == ':')
      rethrow_as(e, what.substr(0, at) + r_name + what.substr(at + engine.size()));
    throw;
  }
}

}  // namespace rcuda::r
