// The dense linear-algebra backend: LAPACK on the CPU (OpenBLAS carries it), cuSOLVER on CUDA.
// A second small interface beside Backend (backend.h) rather than more methods of it: backend.h
// is included by nearly every file, so growing it rebuilds the whole engine, while these few
// factorisations are called only from src/ops/linalg_*.cpp (docs/linalg.md).
//
// Note [Solver layout]
// Every matrix argument is a contiguous tensor of shape [batch, cols, rows]: a batch of
// rows x cols matrices in LAPACK's column-major order, which is the row-major tensor of the
// transposes. The ops make one with clone(A.transpose(-2, -1)) and read a result back as
// buffer.transpose(-2, -1), so no primitive here knows about strides. Primitives overwrite their
// inputs where LAPACK does; each buffer belongs to the op that made it.
// - float32 and float64 only (eig also complex64 and complex128); all tensors on the solver's
// device; batch >= 1, rows, cols >= 1
//   (the ops handle empty batches and empty matrices before calling).
// - `info` is int32 [batch], LAPACK's info per matrix (0: success; > 0: the op's failure, e.g.
//   a singular U or a leading minor that is not positive-definite). Primitives never read it on
//   the host: CUDA leaves it on the device, and the op decides whether to check it (Note
//   [Solver errors] in src/ops/linalg_util.h).
// - Pivots are int32 [batch, min(rows, cols)], 1-based, as LAPACK's.
#pragma once

#include "rcuda/tensor/tensor.h"

namespace rcuda {

enum class SvdJob : uint8_t { ValuesOnly, Reduced, Full };

class Solver {
 public:
  virtual ~Solver() = default;

  // getrf: a [B, cols, rows] becomes L (unit diagonal, below) and U (on and above) in place.
  virtual void lu_factor(Tensor& a, Tensor& pivots, Tensor& info) = 0;
  // getrs: b [B, k, n] becomes A^-1 b for the square A whose getrf output is `lu` [B, n, n].
  virtual void lu_solve(const Tensor& lu, const Tensor& pivots, Tensor& b) = 0;
  // potrf with uplo 'L': the lower triangle of a [B, n, n] becomes L (A = L L^T); the strict
  // upper triangle is left as it was.
  virtual void cholesky(Tensor& a, Tensor& info) = 0;
  // geqrf: a [B, cols, rows] becomes R (on and above the diagonal) and the Householder vectors
  // (below); tau [B, min(rows, cols)].
  virtual void qr_factor(Tensor& a, Tensor& tau) = 0;
  // orgqr: a [B, cols, rows] with cols <= rows, holding k = tau.size(1) <= cols reflectors in its
  // first k columns, becomes the first `cols` columns of H_1 ... H_k.
  virtual void householder_product(Tensor& a, const Tensor& tau) = 0;
  // gesdd/gesvd of a [B, n, m] with m >= n (rows >= cols; the ops transpose wide matrices).
  // a is destroyed. s [B, n]; u [B, n, m] (Reduced) or [B, m, m] (Full); vt [B, n, n]; u and vt
  // are untouched for ValuesOnly. Singular values in descending order.
  virtual void svd(Tensor& a, Tensor& s, Tensor& u, Tensor& vt, SvdJob job, Tensor& info) = 0;
  // syevd: eigenvalues of the symmetric a [B, n, n] read from its lower (`lower`) or upper
  // triangle into w [B, n], ascending; with `vectors` a becomes the eigenvectors (columns).
  virtual void eigh(Tensor& a, Tensor& w, bool vectors, bool lower, Tensor& info) = 0;
  // geev: eigenvalues w [B, n] (complex) of the general a [B, n, n] (float32, float64 or their
  // complex types; destroyed), and with `vectors` the right eigenvectors v [B, n, n] (complex,
  // columns of unit 2-norm, the largest component real, as LAPACK's). w and v have a's complex
  // dtype. Only the CPU solver has it (the ops copy to the host: Note [General eigenproblems]
  // in src/ops/linalg_spectral.cpp); this default is a DeviceError.
  virtual void eig(Tensor& a, Tensor& w, Tensor& v, bool vectors, Tensor& info);
  // The permutation that getrf's pivots [B, k] apply to rows 0..rows-1: perm int64 [B, rows],
  // with (P^T A)[i] = A[perm[i]], so A = P L U for P[perm[i], i] = 1.
  virtual void pivots_to_permutation(const Tensor& pivots, Tensor& perm) = 0;
};

// The solver of `device`'s backend: DeviceError when rcuda was built without it.
Solver& solver_for(Device device);

// Called once per solver by its own translation unit.
void register_solver(DeviceType type, Solver* (*factory)());

}  // namespace rcuda
