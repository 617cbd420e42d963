// The CPU backend's names for the shared dtype dispatch (backend/dispatch.h).
#pragma once

#include "backend/dispatch.h"

namespace rcuda::cpu {

using backend::AccumulateType;
using backend::ComputeType;
using backend::convert;
using backend::dispatch_all;
using backend::dispatch_floating;
using backend::dispatch_with_float8;
using backend::kIsFloating;
using backend::kIsReducedFloat;

}  // namespace rcuda::cpu
