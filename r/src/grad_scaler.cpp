// cuda_amp_grad_scaler() (R/amp-grad-scaler.R) over the engine's amp::GradScaler: one engine
// scaler per R object, behind an external pointer that a finalizer frees.
#include <memory>

#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

amp::GradScaler& scaler_of(SEXP ptr) {
  return external_object<amp::GradScaler>(
      ptr,
      "the grad scaler's engine object is gone (saved with saveRDS and read back?); "
      "create it again and load its state_dict()");
}

double number_arg(SEXP x, const char* name) {
  RCUDA_CHECK(Rf_isNumeric(x) && Rf_length(x) == 1 && !ISNA(Rf_asReal(x)), ValueError,
              "cuda_amp_grad_scaler: ", name, " must be one number");
  return Rf_asReal(x);
}

}  // namespace

extern "C" SEXP rc_scaler_new(SEXP init_scale, SEXP growth_factor, SEXP backoff_factor,
                              SEXP growth_interval, SEXP enabled) {
  RCUDA_BEGIN
  amp::GradScalerOptions o;
  o.init_scale = number_arg(init_scale, "init_scale");
  o.growth_factor = number_arg(growth_factor, "growth_factor");
  o.backoff_factor = number_arg(backoff_factor, "backoff_factor");
  o.growth_interval = static_cast<int64_t>(number_arg(growth_interval, "growth_interval"));
  o.enabled = Rf_asLogical(enabled) == TRUE;
  return external_pointer(std::make_unique<amp::GradScaler>(o));
  RCUDA_END
}

extern "C" SEXP rc_scaler_scale(SEXP ptr, SEXP loss) {
  RCUDA_BEGIN
  return wrap(scaler_of(ptr).scale(unwrap(loss)));
  RCUDA_END
}

extern "C" SEXP rc_scaler_unscale(SEXP ptr, SEXP optimizer) {
  RCUDA_BEGIN
  scaler_of(ptr).unscale_(optimizer_of(optimizer));
  return R_NilValue;
  RCUDA_END
}

// Whether the R side should run the optimizer's step (GradScaler::prepare_step).
extern "C" SEXP rc_scaler_prepare_step(SEXP ptr, SEXP optimizer) {
  RCUDA_BEGIN
  return Rf_ScalarLogical(scaler_of(ptr).prepare_step(optimizer_of(optimizer)));
  RCUDA_END
}

extern "C" SEXP rc_scaler_update(SEXP ptr, SEXP new_scale) {
  RCUDA_BEGIN
  if (Rf_isNull(new_scale))
    scaler_of(ptr).update();
  else
    scaler_of(ptr).update(number_arg(new_scale, "new_scale"));
  return R_NilValue;
  RCUDA_END
}

// list(scale, growth_factor, backoff_factor, growth_interval, growth_tracker, enabled).
extern "C" SEXP rc_scaler_state(SEXP ptr) {
  RCUDA_BEGIN
  using namespace cpp11::literals;
  const amp::GradScaler& s = scaler_of(ptr);
  const amp::GradScalerState st = s.state_dict();
  return cpp11::writable::list({"scale"_nm = st.scale, "growth_factor"_nm = st.growth_factor,
                                "backoff_factor"_nm = st.backoff_factor,
                                "growth_interval"_nm = static_cast<double>(st.growth_interval),
                                "growth_tracker"_nm = static_cast<double>(st.growth_tracker),
                                "enabled"_nm = s.is_enabled()});
  RCUDA_END
}

extern "C" SEXP rc_scaler_load_state(SEXP ptr, SEXP scale, SEXP growth_factor, SEXP backoff_factor,
                                     SEXP growth_interval, SEXP growth_tracker) {
  RCUDA_BEGIN
  amp::GradScalerState st;
  st.scale = number_arg(scale, "scale");
  st.growth_factor = number_arg(growth_factor, "growth_factor");
  st.backoff_factor = number_arg(backoff_factor, "backoff_factor");
  st.growth_interval = static_cast<int64_t>(number_arg(growth_interval, "growth_interval"));
  st.growth_tracker = static_cast<int64_t>(number_arg(growth_tracker, "growth_tracker"));
  scaler_of(ptr).load_state_dict(st);
  return R_NilValue;
  RCUDA_END
}
