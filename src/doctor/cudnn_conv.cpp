// A tiny convolution through cuDNN's legacy API, loaded with dlopen so that librcuda does not
// depend on cuDNN (the doctor must run, and say so, where cuDNN is missing). cudnn.h gives
// the types and signatures only; no cuDNN symbol is linked.
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdio>

#include "doctor_internal.h"
#include "rcuda/autograd/api.h"
#include "rcuda/backend/backend.h"
#include "rcuda/backend/cuda.h"
#include "rcuda/core/error.h"

namespace rcuda::doctor::detail {
namespace {

// Resolves each function from libcudnn (cuDNN 9's libcudnn.so forwards the legacy API to
// libcudnn_ops/libcudnn_cnn; older versions export it directly).
struct CudnnApi {
  decltype(&cudnnCreate) create;
  decltype(&cudnnDestroy) destroy;
  decltype(&cudnnGetErrorString) error_string;
  decltype(&cudnnCreateTensorDescriptor) create_tensor;
  decltype(&cudnnSetTensor4dDescriptor) set_tensor;
  decltype(&cudnnDestroyTensorDescriptor) destroy_tensor;
  decltype(&cudnnCreateFilterDescriptor) create_filter;
  decltype(&cudnnSetFilter4dDescriptor) set_filter;
  decltype(&cudnnDestroyFilterDescriptor) destroy_filter;
  decltype(&cudnnCreateConvolutionDescriptor) create_conv;
  decltype(&cudnnSetConvolution2dDescriptor) set_conv;
  decltype(&cudnnDestroyConvolutionDescriptor) destroy_conv;
  decltype(&cudnnSetConvolutionMathType) set_math;
  decltype(&cudnnConvolutionForward) forward;
};

template <typename F>
bool resolve(void* h, const char* name, F* fn, std::string* missing) {
  *fn = reinterpret_cast<F>(dlsym(h, name));
  if (!*fn) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *fn != nullptr;
}

std::string check(const CudnnApi& api, cudnnStatus_t st, const char* call) {
  return st == CUDNN_STATUS_SUCCESS ? "" : std::string(call) + ": " + api.error_string(st);
}

}  // namespace

Check cudnn_conv_check(int device, const Library& cudnn) {
  const std::string id = "cudnn_conv", title = check_title(id);
  void* h = dlopen(cudnn.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return make_check(id, title, Status::Fail, "cannot reopen " + cudnn.path, "reinstall cuDNN",
                      device);
  CudnnApi api{};
  std::string missing;
  resolve(h, "cudnnCreate", &api.create, &missing);
  resolve(h, "cudnnDestroy", &api.destroy, &missing);
  resolve(h, "cudnnGetErrorString", &api.error_string, &missing);
  resolve(h, "cudnnCreateTensorDescriptor", &api.create_tensor, &missing);
  resolve(h, "cudnnSetTensor4dDescriptor", &api.set_tensor, &missing);
  resolve(h, "cudnnDestroyTensorDescriptor", &api.destroy_tensor, &missing);
  resolve(h, "cudnnCreateFilterDescriptor", &api.create_filter, &missing);
  resolve(h, "cudnnSetFilter4dDescriptor", &api.set_filter, &missing);
  resolve(h, "cudnnDestroyFilterDescriptor", &api.destroy_filter, &missing);
  resolve(h, "cudnnCreateConvolutionDescriptor", &api.create_conv, &missing);
  resolve(h, "cudnnSetConvolution2dDescriptor", &api.set_conv, &missing);
  resolve(h, "cudnnDestroyConvolutionDescriptor", &api.destroy_conv, &missing);
  resolve(h, "cudnnSetConvolutionMathType", &api.set_math, &missing);
  resolve(h, "cudnnConvolutionForward", &api.forward, &missing);
  if (!missing.empty())
    return make_check(id, title, Status::Warn, cudnn.path + " lacks " + missing,
                      "cuDNN convolution check not available with this cuDNN", device);

  // N=2, C=3, 9x7 input, K=4 filters 3x3, padding 1, stride 1: output 2x4x9x7.
  const int n = 2, c = 3, hgt = 9, wid = 7, k = 4, r = 3;
  manual_seed(99);
  const Tensor x = randn({n, c, hgt, wid}), w = randn({k, c, r, r});
  const Device dev(DeviceType::CUDA, device);
  const Tensor xd = contiguous(to(x, dev)), wd = contiguous(to(w, dev));
  const Tensor yd = empty({n, k, hgt, wid}, {DType::Float32, dev});
  cuda::synchronize(device);  // rcuda's stream; cuDNN runs on the legacy default stream

  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t xdesc = nullptr, ydesc = nullptr;
  cudnnFilterDescriptor_t wdesc = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  std::string err;
  cudaSetDevice(device);
  err = check(api, api.create(&handle), "cudnnCreate");
  if (err.empty()) err = check(api, api.create_tensor(&xdesc), "cudnnCreateTensorDescriptor");
  if (err.empty()) err = check(api, api.create_tensor(&ydesc), "cudnnCreateTensorDescriptor");
  if (err.empty()) err = check(api, api.create_filter(&wdesc), "cudnnCreateFilterDescriptor");
  if (err.empty()) err = check(api, api.create_conv(&conv), "cudnnCreateConvolutionDescriptor");
  if (err.empty())
    err = check(api, api.set_tensor(xdesc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, hgt, wid),
                "cudnnSetTensor4dDescriptor");
  if (err.empty())
    err = check(api, api.set_tensor(ydesc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, k, hgt, wid),
                "cudnnSetTensor4dDescriptor");
  if (err.empty())
    err = check(api, api.set_filter(wdesc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, r, r),
                "cudnnSetFilter4dDescriptor");
  if (err.empty())
    err =
        check(api, api.set_conv(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              "cudnnSetConvolution2dDescriptor");
  if (err.empty())  // plain FMA: cuDNN's default allows TF32 on Ampere and newer
    err = check(api, api.set_math(conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
  const float alpha = 1, beta = 0;
  if (err.empty())
    // IMPLICIT_GEMM needs no workspace and exists in every cuDNN version.
    err = check(api,
                api.forward(handle, &alpha, xdesc, xd.data_ptr(), wdesc, wd.data_ptr(), conv,
                            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &beta, ydesc,
                            yd.data_ptr()),
                "cudnnConvolutionForward");
  const cudaError_t sync = cudaDeviceSynchronize();
  if (err.empty() && sync != cudaSuccess)
    err = std::string("after cudnnConvolutionForward: ") + cudaGetErrorString(sync);
  if (conv) api.destroy_conv(conv);
  if (wdesc) api.destroy_filter(wdesc);
  if (ydesc) api.destroy_tensor(ydesc);
  if (xdesc) api.destroy_tensor(xdesc);
  if (handle) api.destroy(handle);
  if (!err.empty())
    return make_check(
        id, title, Status::Fail, err,
        "check that cuDNN matches the CUDA major version and the driver (see libraries)", device);

  const Tensor y = contiguous(to(yd, Device()));
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
                "2x3x9x7 * 4x3x3x3, pad 1, IMPLICIT_GEMM: worst relative error %.2e (cuDNN %s)",
                worst, cudnn.version.c_str());
  if (worst < 1e-5) return make_check(id, title, Status::Pass, detail, "", device);
  return make_check(
      id, title, Status::Fail, detail,
      "cuDNN gives wrong results: check the cuDNN and driver versions (see libraries)", device);
}

}  // namespace rcuda::doctor::detail
