// A small convolution through rcuda's own conv2d on the GPU (cuDNN's graph API, as users run
// it) against plain loops in double: it exercises the runtime version check, plan building and
// execution on the cuDNN actually loaded. Built with CUDA only.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "doctor_internal.h"
#include "rcuda/autograd/api.h"
#include "rcuda/backend/backend.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/core/error.h"

namespace rcuda::doctor::detail {
namespace {

// Sets float32 convolutions' TF32 switch for a scope (the check wants float32 products).
class ConvTf32Scope {
 public:
  explicit ConvTf32Scope(bool allow) : previous_(cuda::allow_conv_tf32()) {
    cuda::set_allow_conv_tf32(allow);
  }
  ~ConvTf32Scope() { cuda::set_allow_conv_tf32(previous_); }
  ConvTf32Scope(const ConvTf32Scope&) = delete;
  ConvTf32Scope& operator=(const ConvTf32Scope&) = delete;

 private:
  bool previous_;
};

}  // namespace

Check cudnn_conv_check(int device, const Library& cudnn) {
  const std::string id = "cudnn_conv", title = check_title(id);
  // N=2, C=3, 9x7 input, K=4 filters 3x3, padding 1: output 2x4x9x7.
  const int n = 2, c = 3, hgt = 9, wid = 7, k = 4, r = 3;
  manual_seed(99);
  const Tensor x = randn({n, c, hgt, wid}), w = randn({k, c, r, r});
  const Device dev(DeviceType::CUDA, device);
  ConvParams params;
  params.padding = {1, 1};
  Tensor y;
  {
    const ConvTf32Scope no_tf32(false);
    y = contiguous(to(conv2d(to(x, dev), to(w, dev), Tensor(), params), Device()));
  }
  const float *px = x.data<float>(), *pw = w.data<float>(), *py = y.data<float>();
  double worst = 0;
  for (int b = 0; b < n; ++b)
    for (int o = 0; o < k; ++o)
      for (int i = 0; i < hgt; ++i)
        for (int j = 0; j < wid; ++j) {
          double ref = 0, scale = 0;
          for (int ci = 0; ci < c; ++ci)
            for (int di = 0; di < r; ++di)
              for (int dj = 0; dj < r; ++dj) {
                const int ii = i + di - 1, jj = j + dj - 1;
                if (ii < 0 || ii >= hgt || jj < 0 || jj >= wid) continue;
                const double t = double(px[((b * c + ci) * hgt + ii) * wid + jj]) *
                                 pw[((o * c + ci) * r + di) * r + dj];
                ref += t;
                scale += std::fabs(t);
              }
          const double got = py[((b * k + o) * hgt + i) * wid + j];
          worst = std::max(worst, std::fabs(got - ref) / std::max(scale, 1e-30));
        }
  char detail[200];
  std::snprintf(detail, sizeof detail,
                "2x3x9x7 * 4x3x3x3, padding 1, float32 without TF32: worst relative error %.2e "
                "(cuDNN %s)",
                worst, cudnn.version.c_str());
  if (worst < 1e-5) return make_check(id, title, Status::Pass, detail, "", device);
  return make_check(
      id, title, Status::Fail, detail,
      "cuDNN gives wrong results: check the cuDNN and driver versions (see libraries)", device);
}

}  // namespace rcuda::doctor::detail
