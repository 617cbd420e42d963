// pad and interpolate of torch.nn.functional: the recording entry points of
// rcuda/autograd/api.h (one PadBackward or InterpolateBackward node each), which check every
// argument (rcuda/ops/resample.h).
#include "rcuda/nn/resample.h"

#include "rcuda/autograd/api.h"

namespace rcuda::nn {

Tensor pad(const Tensor& input, const std::vector<int64_t>& pad, const std::string& mode,
           std::optional<double> value) {
  return rcuda::pad(input, pad, mode, value);
}

Tensor interpolate(const Tensor& input, const std::vector<int64_t>& size,
                   const std::vector<double>& scale_factor, const std::string& mode,
                   std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor) {
  return rcuda::interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor);
}

}  // namespace rcuda::nn
