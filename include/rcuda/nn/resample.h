// torch.nn.functional.pad and interpolate, differentiable with respect to the input. Arguments,
// defaults and errors are rcuda/ops/resample.h's: pad lists (before, after) pairs from the last
// dim backwards; modes "constant" (value, default 0; negative padding crops), "reflect",
// "replicate" and "circular" (1-3 trailing dims); interpolate takes exactly one of size and
// scale_factor (one value or one per spatial dim) and modes "nearest", "nearest-exact",
// "linear" (3-D input), "bilinear" (4-D) and "area". Outputs keep a channels-last 4-D input's
// memory format. docs/resample-pad.md has the formulas and what is left out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda::nn {

Tensor pad(const Tensor& input, const std::vector<int64_t>& pad,
           const std::string& mode = "constant", std::optional<double> value = std::nullopt);

Tensor interpolate(const Tensor& input, const std::vector<int64_t>& size = {},
                   const std::vector<double>& scale_factor = {},
                   const std::string& mode = "nearest",
                   std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt);

}  // namespace rcuda::nn
