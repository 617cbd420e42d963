// The CPU solver (rcuda/backend/solver.h): LAPACK through OpenBLAS, which exports the Fortran
// symbols. One LAPACK call per matrix of the batch; OpenBLAS threads inside each call.
#include <algorithm>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "backend/solver_buffers.h"
#include "rcuda/backend/solver.h"
#include "rcuda/core/error.h"

// Fortran LAPACK, LP64 (32-bit integers) as Debian's OpenBLAS builds it; character arguments
// carry a hidden length after the others, passed explicitly as gfortran expects.
extern "C" {
void sgetrf_(const int*, const int*, float*, const int*, int*, int*);
void dgetrf_(const int*, const int*, double*, const int*, int*, int*);
void sgetrs_(const char*, const int*, const int*, const float*, const int*, const int*, float*,
             const int*, int*, size_t);
void dgetrs_(const char*, const int*, const int*, const double*, const int*, const int*, double*,
             const int*, int*, size_t);
void spotrf_(const char*, const int*, float*, const int*, int*, size_t);
void dpotrf_(const char*, const int*, double*, const int*, int*, size_t);
void sgeqrf_(const int*, const int*, float*, const int*, float*, float*, const int*, int*);
void dgeqrf_(const int*, const int*, double*, const int*, double*, double*, const int*, int*);
void sorgqr_(const int*, const int*, const int*, float*, const int*, const float*, float*,
             const int*, int*);
void dorgqr_(const int*, const int*, const int*, double*, const int*, const double*, double*,
             const int*, int*);
void sgesdd_(const char*, const int*, const int*, float*, const int*, float*, float*, const int*,
             float*, const int*, float*, const int*, int*, int*, size_t);
void dgesdd_(const char*, const int*, const int*, double*, const int*, double*, double*, const int*,
             double*, const int*, double*, const int*, int*, int*, size_t);
void ssyevd_(const char*, const char*, const int*, float*, const int*, float*, float*, const int*,
             int*, const int*, int*, size_t, size_t);
void dsyevd_(const char*, const char*, const int*, double*, const int*, double*, double*,
             const int*, int*, const int*, int*, size_t, size_t);
void sgeev_(const char*, const char*, const int*, float*, const int*, float*, float*, float*,
            const int*, float*, const int*, float*, const int*, int*, size_t, size_t);
void dgeev_(const char*, const char*, const int*, double*, const int*, double*, double*, double*,
            const int*, double*, const int*, double*, const int*, int*, size_t, size_t);
// Complex arguments are std::complex<T>, laid out as Fortran's COMPLEX (two reals).
void cgeev_(const char*, const char*, const int*, std::complex<float>*, const int*,
            std::complex<float>*, std::complex<float>*, const int*, std::complex<float>*,
            const int*, std::complex<float>*, const int*, float*, int*, size_t, size_t);
void zgeev_(const char*, const char*, const int*, std::complex<double>*, const int*,
            std::complex<double>*, std::complex<double>*, const int*, std::complex<double>*,
            const int*, std::complex<double>*, const int*, double*, int*, size_t, size_t);
}

namespace rcuda {
namespace {

// Overloads that pick the s- or d- routine by the element type.
void getrf(int m, int n, float* a, int* piv, int* info) { sgetrf_(&m, &n, a, &m, piv, info); }
void getrf(int m, int n, double* a, int* piv, int* info) { dgetrf_(&m, &n, a, &m, piv, info); }
void getrs(int n, int k, const float* a, const int* piv, float* b, int* info) {
  sgetrs_("N", &n, &k, a, &n, piv, b, &n, info, 1);
}
void getrs(int n, int k, const double* a, const int* piv, double* b, int* info) {
  dgetrs_("N", &n, &k, a, &n, piv, b, &n, info, 1);
}
void potrf(int n, float* a, int* info) { spotrf_("L", &n, a, &n, info, 1); }
void potrf(int n, double* a, int* info) { dpotrf_("L", &n, a, &n, info, 1); }
void geqrf(int m, int n, float* a, float* tau, float* work, int lwork, int* info) {
  sgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
void geqrf(int m, int n, double* a, double* tau, double* work, int lwork, int* info) {
  dgeqrf_(&m, &n, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, float* a, const float* tau, float* work, int lwork, int* info) {
  sorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, double* a, const double* tau, double* work, int lwork, int* info) {
  dorgqr_(&m, &n, &k, a, &m, tau, work, &lwork, info);
}
void gesdd(char job, int m, int n, float* a, float* s, float* u, int ldu, float* vt, int ldvt,
           float* work, int lwork, int* iwork, int* info) {
  sgesdd_(&job, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
void gesdd(char job, int m, int n, double* a, double* s, double* u, int ldu, double* vt, int ldvt,
           double* work, int lwork, int* iwork, int* info) {
  dgesdd_(&job, &m, &n, a, &m, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
void syevd(char job, char uplo, int n, float* a, float* w, float* work, int lwork, int* iwork,
           int liwork, int* info) {
  ssyevd_(&job, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
void syevd(char job, char uplo, int n, double* a, double* w, double* work, int lwork, int* iwork,
           int liwork, int* info) {
  dsyevd_(&job, &uplo, &n, a, &n, w, work, &lwork, iwork, &liwork, info, 1, 1);
}

// geev without left eigenvectors; vr is ignored (and ldvr 1) without right ones.
void geev(char jobvr, int n, float* a, float* wr, float* wi, float* vr, float* work, int lwork,
          int* info) {
  const int ldvr = jobvr == 'V' ? n : 1, one = 1;
  sgeev_("N", &jobvr, &n, a, &n, wr, wi, nullptr, &one, vr, &ldvr, work, &lwork, info, 1, 1);
}
void geev(char jobvr, int n, double* a, double* wr, double* wi, double* vr, double* work, int lwork,
          int* info) {
  const int ldvr = jobvr == 'V' ? n : 1, one = 1;
  dgeev_("N", &jobvr, &n, a, &n, wr, wi, nullptr, &one, vr, &ldvr, work, &lwork, info, 1, 1);
}
void geev(char jobvr, int n, std::complex<float>* a, std::complex<float>* w,
          std::complex<float>* vr, std::complex<float>* work, int lwork, float* rwork, int* info) {
  const int ldvr = jobvr == 'V' ? n : 1, one = 1;
  cgeev_("N", &jobvr, &n, a, &n, w, nullptr, &one, vr, &ldvr, work, &lwork, rwork, info, 1, 1);
}
void geev(char jobvr, int n, std::complex<double>* a, std::complex<double>* w,
          std::complex<double>* vr, std::complex<double>* work, int lwork, double* rwork,
          int* info) {
  const int ldvr = jobvr == 'V' ? n : 1, one = 1;
  zgeev_("N", &jobvr, &n, a, &n, w, nullptr, &one, vr, &ldvr, work, &lwork, rwork, info, 1, 1);
}

// Real geev: eigenvalues wr + i wi; a conjugate pair's vectors share two columns of vr, the
// real part in the first and the imaginary part in the second (LAPACK's packed form), unpacked
// here into complex columns v_j = re + i im and v_{j+1} = re - i im.
template <typename T>
void real_eig(int64_t count, int n, T* a, std::complex<T>* w, std::complex<T>* v, bool vectors,
              int32_t* info) {
  const char job = vectors ? 'V' : 'N';
  const size_t nn = static_cast<size_t>(n) * n;
  std::vector<T> wr(n), wi(n), vr(vectors ? nn : 1);
  T query{};
  int status = 0;
  geev(job, n, a, wr.data(), wi.data(), vr.data(), &query, -1, &status);
  std::vector<T> work(std::max(1, static_cast<int>(query)));
  for (int64_t b = 0; b < count; ++b) {
    geev(job, n, a + b * nn, wr.data(), wi.data(), vr.data(), work.data(),
         static_cast<int>(work.size()), info + b);
    for (int j = 0; j < n; ++j) w[b * n + j] = {wr[j], wi[j]};
    if (!vectors) continue;
    std::complex<T>* out = v + b * nn;
    for (int j = 0; j < n; ++j) {
      const T* re = vr.data() + static_cast<size_t>(j) * n;
      if (wi[j] == 0 || j + 1 == n) {
        for (int r = 0; r < n; ++r) out[static_cast<size_t>(j) * n + r] = {re[r], T(0)};
        continue;
      }
      const T* im = re + n;
      for (int r = 0; r < n; ++r) {
        out[static_cast<size_t>(j) * n + r] = {re[r], im[r]};
        out[static_cast<size_t>(j + 1) * n + r] = {re[r], -im[r]};
      }
      ++j;
    }
  }
}

template <typename T>
void complex_eig(int64_t count, int n, std::complex<T>* a, std::complex<T>* w, std::complex<T>* v,
                 bool vectors, int32_t* info) {
  const char job = vectors ? 'V' : 'N';
  const size_t nn = static_cast<size_t>(n) * n;
  std::vector<T> rwork(2 * static_cast<size_t>(n));
  std::complex<T> query{}, dummy{};
  int status = 0;
  geev(job, n, a, w, vectors ? v : &dummy, &query, -1, rwork.data(), &status);
  std::vector<std::complex<T>> work(std::max(1, static_cast<int>(query.real())));
  for (int64_t b = 0; b < count; ++b)
    geev(job, n, a + b * nn, w + b * n, vectors ? v + b * nn : &dummy, work.data(),
         static_cast<int>(work.size()), rwork.data(), info + b);
}

using Batch = backend::SolverBatch;
Batch batch_of(const Tensor& a) { return backend::solver_batch(a, "LAPACK"); }
template <typename F>
void for_dtype(const Tensor& a, F&& f) {
  backend::for_solver_dtype(a, std::forward<F>(f));
}

// LAPACK's workspace query (lwork = -1) returns the optimal size as a floating value.
template <typename T>
int work_size(T query) {
  return std::max(1, static_cast<int>(query));
}

class LapackSolver final : public Solver {
 public:
  void lu_factor(Tensor& a, Tensor& pivots, Tensor& info) override {
    const Batch b = batch_of(a);
    const int k = std::min(b.rows, b.cols);
    for_dtype(a, [&](auto zero) {
      using T = decltype(zero);
      for (int64_t i = 0; i < b.count; ++i)
        getrf(b.rows, b.cols, a.data<T>() + i * b.stride, pivots.data<int32_t>() + i * k,
              info.data<int32_t>() + i);
    });
  }

  void lu_solve(const Tensor& lu, const Tensor& pivots, Tensor& rhs) override {
    const Batch b = batch_of(lu);
    const Batch r = batch_of(rhs);
    for_dtype(lu, [&](auto zero) {
      using T = decltype(zero);
      for (int64_t i = 0; i < b.count; ++i) {
        int info = 0;
        getrs(b.rows, r.cols, lu.data<T>() + i * b.stride, pivots.data<int32_t>() + i * b.rows,
              rhs.data<T>() + i * r.stride, &info);
      }
    });
  }

  void cholesky(Tensor& a, Tensor& info) override {
    const Batch b = batch_of(a);
    for_dtype(a, [&](auto zero) {
      using T = decltype(zero);
      for (int64_t i = 0; i < b.count; ++i)
        potrf(b.rows, a.data<T>() + i * b.stride, info.data<int32_t>() + i);
    });
  }

  void qr_factor(Tensor& a, Tensor& tau) override {
    const Batch b = batch_of(a);
    const int k = std::min(b.rows, b.cols);
    for_dtype(a, [&](auto zero) {
      using T = decltype(zero);
      int info = 0;
      T query{};
      geqrf(b.rows, b.cols, a.data<T>(), tau.data<T>(), &query, -1, &info);
      std::vector<T> work(work_size(query));
      for (int64_t i = 0; i < b.count; ++i)
        geqrf(b.rows, b.cols, a.data<T>() + i * b.stride, tau.data<T>() + i * k, work.data(),
              static_cast<int>(work.size()), &info);
    });
  }

  void householder_product(Tensor& a, const Tensor& tau) override {
    const Batch b = batch_of(a);
    const int k = static_cast<int>(tau.shape()[1]);
    for_dtype(a, [&](auto zero) {
      using T = decltype(zero);
      int info = 0;
      T query{};
      orgqr(b.rows, b.cols, k, a.data<T>(), tau.data<T>(), &query, -1, &info);
      std::vector<T> work(work_size(query));
      for (int64_t i = 0; i < b.count; ++i)
        orgqr(b.rows, b.cols, k, a.data<T>() + i * b.stride, tau.data<T>() + i * k, work.data(),
              static_cast<int>(work.size()), &info);
    });
  }

  void svd(Tensor& a, Tensor& s, Tensor& u, Tensor& vt, SvdJob job, Tensor& info) override {
    const Batch b = batch_of(a);
    const int m = b.rows, n = b.cols;
    const char jobz = job == SvdJob::ValuesOnly ? 'N' : job == SvdJob::Reduced ? 'S' : 'A';
    const int ucols = job == SvdJob::Full ? m : n;
    const int ldu = job == SvdJob::ValuesOnly ? 1 : m, ldvt = job == SvdJob::ValuesOnly ? 1 : n;
    for_dtype(a, [&](auto zero) {
      using T = decltype(zero);
      std::vector<int> iwork(8 * static_cast<size_t>(std::min(m, n)));
      T query{}, dummy_u{}, dummy_vt{};
      int status = 0;
      gesdd(jobz, m, n, a.data<T>(), s.data<T>(), &dummy_u, ldu, &dummy_vt, ldvt, &query, -1,
            iwork.data(), &status);
      std::vector<T> work(work_size(query));
      for (int64_t i = 0; i < b.count; ++i) {
        T* up = job == SvdJob::ValuesOnly ? &dummy_u : u.data<T>() + i * int64_t{m} * ucols;
        T* vp = job == SvdJob::ValuesOnly ? &dummy_vt : vt.data<T>() + i * int64_t{n} * n;
        gesdd(jobz, m, n, a.data<T>() + i * b.stride, s.data<T>() + i * n, up, ldu, vp, ldvt,
              work.data(), static_cast<int>(work.size()), iwork.data(), info.data<int32_t>() + i);
      }
    });
  }

  void eigh(Tensor& a, Tensor& w, bool vectors, bool lower, Tensor& info) override {
    const Batch b = batch_of(a);
    const int n = b.rows;
    const char job = vectors ? 'V' : 'N', uplo = lower ? 'L' : 'U';
    for_dtype(a, [&](auto zero) {
      using T = decltype(zero);
      T query{};
      int iquery = 0, status = 0;
      syevd(job, uplo, n, a.data<T>(), w.data<T>(), &query, -1, &iquery, -1, &status);
      std::vector<T> work(work_size(query));
      std::vector<int> iwork(std::max(1, iquery));
      for (int64_t i = 0; i < b.count; ++i)
        syevd(job, uplo, n, a.data<T>() + i * b.stride, w.data<T>() + i * n, work.data(),
              static_cast<int>(work.size()), iwork.data(), static_cast<int>(iwork.size()),
              info.data<int32_t>() + i);
    });
  }

  // a, w and v are contiguous host tensors (the op copies there: Note [General eigenproblems]).
  void eig(Tensor& a, Tensor& w, Tensor& v, bool vectors, Tensor& info) override {
    const int64_t count = a.shape()[0];
    const int n = static_cast<int>(a.shape()[1]);
    int32_t* status = info.data<int32_t>();
    const auto out = [&](auto zero) {
      using C = std::complex<decltype(zero)>;
      return std::make_pair(w.data<C>(), vectors ? v.data<C>() : nullptr);
    };
    switch (a.dtype()) {
      case DType::Float32: {
        const auto [wp, vp] = out(float{});
        return real_eig(count, n, a.data<float>(), wp, vp, vectors, status);
      }
      case DType::Float64: {
        const auto [wp, vp] = out(double{});
        return real_eig(count, n, a.data<double>(), wp, vp, vectors, status);
      }
      case DType::Complex64: {
        const auto [wp, vp] = out(float{});
        return complex_eig(count, n, a.data<std::complex<float>>(), wp, vp, vectors, status);
      }
      case DType::Complex128: {
        const auto [wp, vp] = out(double{});
        return complex_eig(count, n, a.data<std::complex<double>>(), wp, vp, vectors, status);
      }
      default:
        throw DTypeError(std::string("linalg.eig: LAPACK has no eigensolver for ") +
                         dtype_name(a.dtype()));
    }
  }

  void pivots_to_permutation(const Tensor& pivots, Tensor& perm) override {
    const int64_t count = pivots.shape()[0], k = pivots.shape()[1], rows = perm.shape()[1];
    for (int64_t i = 0; i < count; ++i) {
      int64_t* p = perm.data<int64_t>() + i * rows;
      const int32_t* piv = pivots.data<int32_t>() + i * k;
      for (int64_t r = 0; r < rows; ++r) p[r] = r;
      for (int64_t j = 0; j < k; ++j) std::swap(p[j], p[piv[j] - 1]);
    }
  }
};

Solver* make_lapack_solver() { return new LapackSolver(); }  // lives for the process

const bool lapack_solver_registered = [] {
  register_solver(DeviceType::CPU, &make_lapack_solver);
  return true;
}();

}  // namespace
}  // namespace rcuda
