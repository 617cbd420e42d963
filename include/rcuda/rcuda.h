// Everything a C++ user of rcuda needs.
#pragma once

#include "rcuda/autograd/api.h"
#include "rcuda/backend/backend.h"
#include "rcuda/core/device.h"
#include "rcuda/core/dtype.h"
#include "rcuda/core/error.h"
#include "rcuda/core/scalar.h"
#include "rcuda/core/shape.h"
#include "rcuda/ops/copy.h"
#include "rcuda/ops/creation.h"
#include "rcuda/ops/elementwise.h"
#include "rcuda/ops/indexing.h"
#include "rcuda/ops/linalg.h"
#include "rcuda/ops/random.h"
#include "rcuda/ops/reduction.h"
#include "rcuda/tensor/autograd_meta.h"
#include "rcuda/tensor/tensor.h"
