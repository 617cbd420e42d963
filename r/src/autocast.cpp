// Autocast from R: torch for R's set_autocast() and unset_autocast() (R/autocast.R) over the
// engine's AutocastGuard (rcuda/autograd/autocast.h).
//
// Note [Autocast guards on a stack]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// AutocastGuard switches autocast for one device type and restores the previous state when it
// is destroyed: a C++ scope, which R code cannot hold across calls. rc_autocast_push makes a
// guard on the heap and returns a token (a number); rc_autocast_pop(token) destroys that guard.
// Each guard restores what the one before it set, so the guards of one device type must end in
// the reverse order they began: each device type keeps its guards on a stack, and popping any
// but the innermost is an R error that leaves the stack as it is. with_autocast() and
// local_autocast() pop through on.exit, which keeps that order; guards of different device types
// are independent and may end in any order. The stacks are never destroyed: at process exit the
// engine's thread-local autocast state is gone before static objects are, and a guard ending
// then would write into it.
#include "rcuda/autograd/autocast.h"

#include <cstring>
#include <memory>
#include <vector>

#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

struct OpenGuard {
  double token;
  std::unique_ptr<AutocastGuard> guard;
};

std::vector<OpenGuard>& guards(DeviceType t) {
  static auto* stacks = new std::vector<OpenGuard>[kNumDeviceTypes];
  return stacks[static_cast<int>(t)];
}

double next_token = 1;

// R/autocast.R has checked the arguments and named its caller; these checks keep the glue safe
// when it is called directly.
DeviceType device_type_arg(SEXP x) {
  RCUDA_CHECK(Rf_isString(x) && Rf_length(x) == 1 && STRING_ELT(x, 0) != NA_STRING, ValueError,
              "autocast: device_type must be \"cuda\" or \"cpu\"");
  const char* s = CHAR(STRING_ELT(x, 0));
  if (std::strcmp(s, "cpu") == 0) return DeviceType::CPU;
  RCUDA_CHECK(std::strcmp(s, "cuda") == 0, ValueError,
              "autocast: device_type must be \"cuda\" or \"cpu\", got \"", s, "\"");
  return DeviceType::CUDA;
}

const char* device_type_name(DeviceType t) { return t == DeviceType::CUDA ? "cuda" : "cpu"; }

}  // namespace

// Opens an autocast region for device_type ("cuda" or "cpu"); dtype NULL keeps the device
// type's current autocast dtype (float16 on CUDA, bfloat16 on the CPU unless a region set
// another). Returns the token that rc_autocast_pop takes.
extern "C" SEXP rc_autocast_push(SEXP device_type, SEXP dtype, SEXP enabled) {
  RCUDA_BEGIN
  const DeviceType type = device_type_arg(device_type);
  const DType low = dtype_arg(dtype).value_or(autocast_dtype(type));
  RCUDA_CHECK(
      TYPEOF(enabled) == LGLSXP && Rf_length(enabled) == 1 && LOGICAL(enabled)[0] != NA_LOGICAL,
      ValueError, "autocast: enabled must be TRUE or FALSE");
  std::vector<OpenGuard>& stack = guards(type);
  stack.reserve(stack.size() + 1);  // so that push_back cannot throw once the guard exists
  const double token = next_token++;
  stack.push_back({token, std::make_unique<AutocastGuard>(type, low, LOGICAL(enabled)[0] != 0)});
  return Rf_ScalarReal(token);
  RCUDA_END
}

// Ends the region of `token`, which must be the innermost open one of its device type (Note
// [Autocast guards on a stack]).
extern "C" SEXP rc_autocast_pop(SEXP token) {
  RCUDA_BEGIN
  RCUDA_CHECK(TYPEOF(token) == REALSXP && Rf_length(token) == 1, ValueError,
              "unset_autocast: context must be what set_autocast() returned");
  const double wanted = REAL(token)[0];
  for (const DeviceType type : {DeviceType::CPU, DeviceType::CUDA}) {
    std::vector<OpenGuard>& stack = guards(type);
    for (size_t i = 0; i < stack.size(); ++i) {
      if (stack[i].token != wanted) continue;
      const size_t later = stack.size() - 1 - i;
      RCUDA_CHECK(later == 0, ValueError, "unset_autocast: this \"", device_type_name(type),
                  "\" autocast context is not the innermost one: ", later,
                  later == 1 ? " context" : " contexts", " set after it on \"",
                  device_type_name(type), "\" must be unset first (contexts end in the reverse ",
                  "order they were set)");
      stack.pop_back();  // the guard's destructor restores the previous state
      return R_NilValue;
    }
  }
  RCUDA_CHECK(false, ValueError,
              "unset_autocast: this autocast context was already unset (or never set)");
  return R_NilValue;
  RCUDA_END
}

// Whether autocast is on for device_type on this thread, its dtype there, and how many regions
// R holds open for it: list(enabled, dtype, open).
extern "C" SEXP rc_autocast_state(SEXP device_type) {
  RCUDA_BEGIN
  using namespace cpp11::literals;
  const DeviceType type = device_type_arg(device_type);
  return cpp11::writable::list({"enabled"_nm = is_autocast_enabled(type),
                                "dtype"_nm = dtype_name(autocast_dtype(type)),
                                "open"_nm = static_cast<double>(guards(type).size())});
  RCUDA_END
}
