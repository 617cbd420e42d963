// The public op API: rcuda::add, rcuda::matmul, ... Each function records a node for backward
// when grad mode is on and an input requires grad, then runs the no-grad op of rcuda::ops.
#pragma once

#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/indexing.h"
#include "rcuda/ops/linalg.h"
#include "rcuda/ops/random.h"
#include "rcuda/ops/reduction.h"

namespace rcuda {
// Transitional: the recording functions replace this directive family by family.
using namespace ::rcuda::ops;  // NOLINT
}  // namespace rcuda
