// The CUDA solver (rcuda/backend/solver.h): cuSOLVER's dense routines on the current stream.
// Each matrix of a batch is one cuSOLVER call queued on the stream (cuSOLVER's batched variants
// cover only some routines and sizes; docs/linalg.md). Nothing here waits for the GPU: info
// stays on the device for the op to read when it must (Note [Solver errors]).
#include <cusolverDn.h>

#include <algorithm>
#include <mutex>
#include <utility>

#include "backend/cuda/kernels/lu_permutation.h"
#include "backend/cuda/runtime.h"
#include "backend/solver_buffers.h"
#include "rcuda/backend/solver.h"
#include "rcuda/core/error.h"

namespace rcuda::cuda {
namespace {

[[noreturn]] void throw_cusolver_error(cusolverStatus_t status, const char* call, const char* file,
                                       int line) {
  throw CudaError(detail::concat(call, " failed with cuSOLVER status ", static_cast<int>(status),
                                 " at ", file, ":", line));
}

#define RCUDA_CUSOLVER_CHECK(call)                                           \
  do {                                                                       \
    const cusolverStatus_t rcuda_solver_status_ = (call);                    \
    if (rcuda_solver_status_ != CUSOLVER_STATUS_SUCCESS)                     \
      throw_cusolver_error(rcuda_solver_status_, #call, __FILE__, __LINE__); \
  } while (0)

// One handle per device, created on first use. A handle holds one stream at a time, so each
// call takes the device's lock, points the handle at the caller's current stream and queues.
struct Handles {
  cusolverDnHandle_t handle[kMaxDevices] = {};
  std::once_flag once[kMaxDevices];
  std::mutex lock[kMaxDevices];
};
Handles& handles() {
  static Handles* h = new Handles();  // never destroyed: handles outlive statics
  return *h;
}

// The handle of `t`'s device, bound to the current stream, held for the scope.
class HandleScope {
 public:
  explicit HandleScope(const Tensor& t) : device_(t.device().index), guard_(device_) {
    check_device_index(device_, "linalg");
    Handles& h = handles();
    std::call_once(h.once[device_],
                   [&] { RCUDA_CUSOLVER_CHECK(cusolverDnCreate(&h.handle[device_])); });
    lock_ = std::unique_lock<std::mutex>(h.lock[device_]);
    stream_ = current_stream(device_);
    RCUDA_CUSOLVER_CHECK(cusolverDnSetStream(h.handle[device_], stream_));
  }
  cusolverDnHandle_t get() const { return handles().handle[device_]; }
  cudaStream_t stream() const { return stream_; }
  // Stream-ordered scratch memory from the device's pool.
  Tensor scratch(int64_t n, DType dtype) const {
    return Tensor::empty({std::max<int64_t>(n, 1)}, dtype, Device(DeviceType::CUDA, device_));
  }

 private:
  int device_;
  DeviceGuard guard_;
  std::unique_lock<std::mutex> lock_;
  cudaStream_t stream_ = nullptr;
};

// Overloads that pick cuSOLVER's S or D routine by the element type.
#define RCUDA_CUSOLVER_PAIR(name, sig_s, sig_d, args)                   \
  inline cusolverStatus_t name sig_s { return cusolverDnS##name args; } \
  inline cusolverStatus_t name sig_d { return cusolverDnD##name args; }

using H = cusolverDnHandle_t;
RCUDA_CUSOLVER_PAIR(getrf_bufferSize, (H h, int m, int n, float* a, int* lw),
                    (H h, int m, int n, double* a, int* lw), (h, m, n, a, m, lw))
RCUDA_CUSOLVER_PAIR(getrf, (H h, int m, int n, float* a, float* w, int* p, int* i),
                    (H h, int m, int n, double* a, double* w, int* p, int* i),
                    (h, m, n, a, m, w, p, i))
RCUDA_CUSOLVER_PAIR(getrs, (H h, int n, int k, const float* a, const int* p, float* b, int* i),
                    (H h, int n, int k, const double* a, const int* p, double* b, int* i),
                    (h, CUBLAS_OP_N, n, k, a, n, p, b, n, i))
RCUDA_CUSOLVER_PAIR(potrf_bufferSize, (H h, int n, float* a, int* lw),
                    (H h, int n, double* a, int* lw), (h, CUBLAS_FILL_MODE_LOWER, n, a, n, lw))
RCUDA_CUSOLVER_PAIR(potrf, (H h, int n, float* a, float* w, int lw, int* i),
                    (H h, int n, double* a, double* w, int lw, int* i),
                    (h, CUBLAS_FILL_MODE_LOWER, n, a, n, w, lw, i))
RCUDA_CUSOLVER_PAIR(geqrf_bufferSize, (H h, int m, int n, float* a, int* lw),
                    (H h, int m, int n, double* a, int* lw), (h, m, n, a, m, lw))
RCUDA_CUSOLVER_PAIR(geqrf, (H h, int m, int n, float* a, float* t, float* w, int lw, int* i),
                    (H h, int m, int n, double* a, double* t, double* w, int lw, int* i),
                    (h, m, n, a, m, t, w, lw, i))
RCUDA_CUSOLVER_PAIR(orgqr_bufferSize,
                    (H h, int m, int n, int k, const float* a, const float* t, int* lw),
                    (H h, int m, int n, int k, const double* a, const double* t, int* lw),
                    (h, m, n, k, a, m, t, lw))
RCUDA_CUSOLVER_PAIR(orgqr,
                    (H h, int m, int n, int k, float* a, const float* t, float* w, int lw, int* i),
                    (H h, int m, int n, int k, double* a, const double* t, double* w, int lw,
                     int* i),
                    (h, m, n, k, a, m, t, w, lw, i))
RCUDA_CUSOLVER_PAIR(syevd_bufferSize,
                    (H h, cusolverEigMode_t j, cublasFillMode_t u, int n, const float* a,
                     const float* e, int* lw),
                    (H h, cusolverEigMode_t j, cublasFillMode_t u, int n, const double* a,
                     const double* e, int* lw),
                    (h, j, u, n, a, n, e, lw))
RCUDA_CUSOLVER_PAIR(syevd,
                    (H h, cusolverEigMode_t j, cublasFillMode_t u, int n, float* a, float* e,
                     float* w, int lw, int* i),
                    (H h, cusolverEigMode_t j, cublasFillMode_t u, int n, double* a, double* e,
                     double* w, int lw, int* i),
                    (h, j, u, n, a, n, e, w, lw, i))
#undef RCUDA_CUSOLVER_PAIR

template <typename T>
cusolverStatus_t gesvd_bufferSize(H h, int m, int n, int* lw);
template <>
cusolverStatus_t gesvd_bufferSize<float>(H h, int m, int n, int* lw) {
  return cusolverDnSgesvd_bufferSize(h, m, n, lw);
}
template <>
cusolverStatus_t gesvd_bufferSize<double>(H h, int m, int n, int* lw) {
  return cusolverDnDgesvd_bufferSize(h, m, n, lw);
}
cusolverStatus_t gesvd(H h, signed char job, int m, int n, float* a, float* s, float* u, int ldu,
                       float* vt, int ldvt, float* w, int lw, int* i) {
  return cusolverDnSgesvd(h, job, job, m, n, a, m, s, u, ldu, vt, ldvt, w, lw, nullptr, i);
}
cusolverStatus_t gesvd(H h, signed char job, int m, int n, double* a, double* s, double* u, int ldu,
                       double* vt, int ldvt, double* w, int lw, int* i) {
  return cusolverDnDgesvd(h, job, job, m, n, a, m, s, u, ldu, vt, ldvt, w, lw, nullptr, i);
}

using Batch = backend::SolverBatch;
Batch batch_of(const Tensor& a) { return backend::solver_batch(a, "cuSOLVER"); }
template <typename F>
void for_dtype(const Tensor& a, F&& f) {
  backend::for_solver_dtype(a, std::forward<F>(f));
}

class CusolverSolver final : public Solver {
 public:
  void lu_factor(Tensor& a, Tensor& pivots, Tensor& info) override {
    const Batch b = batch_of(a);
    const int k = std::min(b.rows, b.cols);
    HandleScope h(a);
    for_dtype(a, [&](auto zero) {
      using T = decltype(zero);
      int lwork = 0;
      RCUDA_CUSOLVER_CHECK(getrf_bufferSize(h.get(), b.rows, b.cols, a.data<T>(), &lwork));
      Tensor work = h.scratch(lwork, a.dtype());
      for (int64_t i = 0; i < b.count; ++i)
        RCUDA_CUSOLVER_CHECK(getrf(h.get(), b.rows, b.cols, a.data<T>() + i * b.stride,
                                   work.data<T>(), pivots.data<int32_t>() + i * k,
                                   info.data<int32_t>() + i));
    });
  }

  void lu_solve(const Tensor& lu, const Tensor& pivots, Tensor& rhs) override {
    const Batch b = batch_of(lu);
    const Batch r = batch_of(rhs);
    HandleScope h(lu);
    Tensor info = h.scratch(b.count, DType::Int32);  // getrs reports only invalid arguments
    for_dtype(lu, [&](auto zero) {
      using T = decltype(zero);
      for (int64_t i = 0; i < b.count; ++i)
        RCUDA_CUSOLVER_CHECK(getrs(h.get(), b.rows, r.cols, lu.data<T>() + i * b.stride,
                                   pivots.data<int32_t>() + i * b.rows,
                                   rhs.data<T>() + i * r.stride, info.data<int32_t>() + i));
    });
  }

  void cholesky(Tensor& a, Tensor& info) override {
    const Batch b = batch_of(a);
    HandleScope h(a);
    for_dtype(a, [&](auto zero) {
      using T = decltype(zero);
      int lwork = 0;
      RCUDA_CUSOLVER_CHECK(potrf_bufferSize(h.get(), b.rows, a.data<T>(), &lwork));
      Tensor work = h.scratch(lwork, a.dtype());
      for (int64_t i = 0; i < b.count; ++i)
        RCUDA_CUSOLVER_CHECK(potrf(h.get(), b.rows, a.data<T>() + i * b.stride, work.data<T>(),
                                   lwork, info.data<int32_t>() + i));
    });
  }

  void qr_factor(Tensor& a, Tensor& tau) override {
    const Batch b = batch_of(a);
    const int k = std::min(b.rows, b.cols);
    HandleScope h(a);
    Tensor info = h.scratch(b.count, DType::Int32);  // geqrf reports only invalid arguments
    for_dtype(a, [&](auto zero) {
      using T = decltype(zero);
      int lwork = 0;
      RCUDA_CUSOLVER_CHECK(geqrf_bufferSize(h.get(), b.rows, b.cols, a.data<T>(), &lwork));
      Tensor work = h.scratch(lwork, a.dtype());
      for (int64_t i = 0; i < b.count; ++i)
        RCUDA_CUSOLVER_CHECK(geqrf(h.get(), b.rows, b.cols, a.data<T>() + i * b.stride,
                                   tau.data<T>() + i * k, work.data<T>(), lwork,
                                   info.data<int32_t>() + i));
    });
  }

  void householder_product(Tensor& a, const Tensor& tau) override {
    const Batch b = batch_of(a);
    const int k = backend::solver_int(tau.shape()[1], "reflectors", "cuSOLVER");
    HandleScope h(a);
    Tensor info = h.scratch(b.count, DType::Int32);
    for_dtype(a, [&](auto zero) {
      using T = decltype(zero);
      int lwork = 0;
      RCUDA_CUSOLVER_CHECK(
          orgqr_bufferSize(h.get(), b.rows, b.cols, k, a.data<T>(), tau.data<T>(), &lwork));
      Tensor work = h.scratch(lwork, a.dtype());
      for (int64_t i = 0; i < b.count; ++i)
        RCUDA_CUSOLVER_CHECK(orgqr(h.get(), b.rows, b.cols, k, a.data<T>() + i * b.stride,
                                   tau.data<T>() + i * k, work.data<T>(), lwork,
                                   info.data<int32_t>() + i));
    });
  }

  void svd(Tensor& a, Tensor& s, Tensor& u, Tensor& vt, SvdJob job, Tensor& info) override {
    const Batch b = batch_of(a);
    const int m = b.rows, n = b.cols;
    const signed char jobc = job == SvdJob::ValuesOnly ? 'N' : job == SvdJob::Reduced ? 'S' : 'A';
    const int ucols = job == SvdJob::Full ? m : n;
    HandleScope h(a);
    for_dtype(a, [&](auto zero) {
      using T = decltype(zero);
      int lwork = 0;
      RCUDA_CUSOLVER_CHECK(gesvd_bufferSize<T>(h.get(), m, n, &lwork));
      Tensor work = h.scratch(lwork, a.dtype());
      const bool values_only = job == SvdJob::ValuesOnly;
      for (int64_t i = 0; i < b.count; ++i) {
        T* up = values_only ? nullptr : u.data<T>() + i * int64_t{m} * ucols;
        T* vp = values_only ? nullptr : vt.data<T>() + i * int64_t{n} * n;
        RCUDA_CUSOLVER_CHECK(gesvd(h.get(), jobc, m, n, a.data<T>() + i * b.stride,
                                   s.data<T>() + i * n, up, values_only ? 1 : m, vp,
                                   values_only ? 1 : n, work.data<T>(), lwork,
                                   info.data<int32_t>() + i));
      }
    });
  }

  void eigh(Tensor& a, Tensor& w, bool vectors, bool lower, Tensor& info) override {
    const Batch b = batch_of(a);
    const int n = b.rows;
    const cusolverEigMode_t job = vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    const cublasFillMode_t uplo = lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
    HandleScope h(a);
    for_dtype(a, [&](auto zero) {
      using T = decltype(zero);
      int lwork = 0;
      RCUDA_CUSOLVER_CHECK(
          syevd_bufferSize(h.get(), job, uplo, n, a.data<T>(), w.data<T>(), &lwork));
      Tensor work = h.scratch(lwork, a.dtype());
      for (int64_t i = 0; i < b.count; ++i)
        RCUDA_CUSOLVER_CHECK(syevd(h.get(), job, uplo, n, a.data<T>() + i * b.stride,
                                   w.data<T>() + i * n, work.data<T>(), lwork,
                                   info.data<int32_t>() + i));
    });
  }

  void pivots_to_permutation(const Tensor& pivots, Tensor& perm) override {
    DeviceGuard guard(perm.device().index);
    launch_lu_permutation(pivots.data<int32_t>(), perm.data<int64_t>(), pivots.shape()[0],
                          pivots.shape()[1], perm.shape()[1], current_stream(perm.device().index));
  }
};

Solver* make_cusolver_solver() { return new CusolverSolver(); }  // lives for the process

const bool cusolver_solver_registered = [] {
  register_solver(DeviceType::CUDA, &make_cusolver_solver);
  return true;
}();

}  // namespace
}  // namespace rcuda::cuda
