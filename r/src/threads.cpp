// The CPU backend's threads for R: torch_set_num_threads() and torch_get_num_threads()
// (include/rcuda/backend/cpu.h). R checks the argument (r/R/threads.R).
#include "rcuda/backend/cpu.h"

#include "rcuda_r.h"

extern "C" SEXP rc_set_num_threads(SEXP n) {
  RCUDA_BEGIN
  rcuda::cpu::set_num_threads(Rf_asInteger(n));
  return R_NilValue;
  RCUDA_END
}

extern "C" SEXP rc_num_threads() {
  RCUDA_BEGIN
  return Rf_ScalarInteger(rcuda::cpu::num_threads());
  RCUDA_END
}
