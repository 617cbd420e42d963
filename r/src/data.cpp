// The engine side of datasets and data loaders: batches gathered with one index_select per
// tensor, the shuffling order, pinned host memory, and idx image bytes as tensors.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "rcuda/core/philox.h"
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

// 1-based R positions (integer or double) checked against `n` samples, as 0-based int64.
std::vector<int64_t> sample_positions(SEXP index, int64_t n, const char* caller) {
  RCUDA_CHECK(TYPEOF(index) == INTSXP || TYPEOF(index) == REALSXP, ValueError, caller,
              ": index must be numbers, got an R ", Rf_type2char(TYPEOF(index)));
  const R_xlen_t count = Rf_xlength(index);
  std::vector<int64_t> positions(static_cast<size_t>(count));
  for (R_xlen_t i = 0; i < count; ++i) {
    const double v = TYPEOF(index) == INTSXP
                         ? (INTEGER(index)[i] == NA_INTEGER ? NAN : INTEGER(index)[i])
                         : REAL(index)[i];
    RCUDA_CHECK(v == std::floor(v) && v >= 1 && v <= static_cast<double>(n), IndexError, caller,
                ": index ", v, " is out of range for ", n, " samples (indices start at 1)");
    positions[static_cast<size_t>(i)] = static_cast<int64_t>(v) - 1;
  }
  return positions;
}

}  // namespace

// The samples at `index` of every tensor in the list `tensors` (all with the same first size),
// as a list with the same names: one index_select per tensor, or with drop and a single index,
// one select (the sample without its batch dim, as .getitem gives it).
extern "C" SEXP rc_index_batch(SEXP tensors, SEXP index, SEXP drop, SEXP caller) {
  RCUDA_BEGIN
  const char* op = CHAR(STRING_ELT(caller, 0));
  const R_xlen_t count = Rf_xlength(tensors);
  cpp11::writable::list out(count);
  if (count == 0) return out;
  std::vector<int64_t> positions;
  std::vector<Tensor> index_on;  // the index tensor on each device it is needed on
  for (R_xlen_t k = 0; k < count; ++k) {
    const Tensor& t = unwrap(VECTOR_ELT(tensors, k));
    RCUDA_CHECK(t.dim() >= 1, ShapeError, op, ": tensor ", k + 1,
                " is 0-d; samples are taken along a first dim");
    if (k == 0) positions = sample_positions(index, t.size(0), op);
    RCUDA_CHECK(t.size(0) == unwrap(VECTOR_ELT(tensors, 0)).size(0), ShapeError, op, ": tensor ",
                k + 1, " has ", t.size(0), " samples but tensor 1 has ",
                unwrap(VECTOR_ELT(tensors, 0)).size(0));
    if (Rf_asLogical(drop) == TRUE && positions.size() == 1) {
      out[k] = wrap(t.select(0, positions[0]));
      continue;
    }
    Tensor idx;
    for (const Tensor& candidate : index_on)
      if (candidate.device() == t.device()) idx = candidate;
    if (!idx.defined()) {
      idx = from_data(positions.data(), {static_cast<int64_t>(positions.size())}, DType::Int64,
                      t.device());
      index_on.push_back(idx);
    }
    out[k] = wrap(rcuda::index_select(t, 0, idx));
  }
  out.names() = Rf_getAttrib(tensors, R_NamesSymbol);
  return out;
  RCUDA_END
}

// A random order of 1..n from Philox bits: with `seed` NULL the default generator's next
// (seed, offset), so torch_manual_seed() fixes it; else seed = c(seed, offset), a loader's own.
extern "C" SEXP rc_randperm(SEXP n, SEXP seed) {
  RCUDA_BEGIN
  const double count = Rf_asReal(n);
  RCUDA_CHECK(count >= 0 && count <= 2147483647.0 && count == std::floor(count), ValueError,
              "randperm: n must be a whole number in [0, 2^31), got ", count);
  uint64_t s = 0, offset = 0;
  if (Rf_isNull(seed)) {
    std::tie(s, offset) = default_generator().next();
  } else {
    RCUDA_CHECK(Rf_xlength(seed) == 2, ValueError, "randperm: seed must be c(seed, offset)");
    s = static_cast<uint64_t>(REAL(seed)[0]);
    offset = static_cast<uint64_t>(REAL(seed)[1]);
  }
  // Sorting by random 64-bit keys gives a uniform permutation (ties, at odds 2^-64 per pair,
  // fall back to position, so the order is still a function of the seed).
  std::vector<std::pair<uint64_t, int>> keys(static_cast<size_t>(count));
  for (size_t i = 0; i < keys.size(); ++i)
    keys[i] = {philox::random_bits64(s, offset, i), static_cast<int>(i)};
  std::sort(keys.begin(), keys.end());
  cpp11::writable::integers out(static_cast<R_xlen_t>(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) out[static_cast<R_xlen_t>(i)] = keys[i].second + 1;
  return out;
  RCUDA_END
}

// A copy of a CPU tensor in page-locked memory (Note [Pinned host cache] in the engine), whose
// copies to a GPU run asynchronously.
extern "C" SEXP rc_pin_memory(SEXP x) {
  RCUDA_BEGIN
  return wrap(cuda::pin_memory(unwrap(x)));
  RCUDA_END
}

extern "C" SEXP rc_is_pinned(SEXP x) {
  RCUDA_BEGIN
  return Rf_ScalarLogical(cuda::is_pinned(unwrap(x)));
  RCUDA_END
}

// Bytes as a uint8 tensor of `shape`, row-major: the pixel order of idx files.
extern "C" SEXP rc_uint8_from_raw(SEXP bytes, SEXP shape) {
  RCUDA_BEGIN
  RCUDA_CHECK(TYPEOF(bytes) == RAWSXP, ValueError, "uint8_from_raw: expected a raw vector");
  const Shape s = shape_arg(shape);
  RCUDA_CHECK(numel(s) == Rf_xlength(bytes), ShapeError, "uint8_from_raw: ", Rf_xlength(bytes),
              " bytes do not fill shape ", shape_str(s));
  return wrap(from_data(RAW(bytes), s, DType::UInt8));
  RCUDA_END
}

namespace {

// fit()'s rule for a batch's input and target: its elements x and y, else its first two. False
// for anything but a list of at least two elements.
bool batch_parts(SEXP batch, SEXP* x, SEXP* y) {
  if (TYPEOF(batch) != VECSXP || Rf_xlength(batch) < 2) return false;
  *x = *y = R_NilValue;
  SEXP names = Rf_getAttrib(batch, R_NamesSymbol);
  if (names != R_NilValue) {
    for (R_xlen_t i = 0; i < Rf_xlength(batch); ++i) {
      const char* name = CHAR(STRING_ELT(names, i));
      if (*x == R_NilValue && std::strcmp(name, "x") == 0) *x = VECTOR_ELT(batch, i);
      if (*y == R_NilValue && std::strcmp(name, "y") == 0) *y = VECTOR_ELT(batch, i);
    }
  }
  if (*x == R_NilValue || *y == R_NilValue) {
    *x = VECTOR_ELT(batch, 0);
    *y = VECTOR_ELT(batch, 1);
  }
  return true;
}

}  // namespace

// list(x, y) of a batch by batch_parts(), or NULL for a batch it does not take (split_batch()
// in R/fit.R then says why).
extern "C" SEXP rc_batch_parts(SEXP batch) {
  RCUDA_BEGIN
  SEXP x, y;
  if (!batch_parts(batch, &x, &y)) return R_NilValue;
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 2));
  SET_VECTOR_ELT(out, 0, x);
  SET_VECTOR_ELT(out, 1, y);
  UNPROTECT(1);
  return out;
  RCUDA_END
}

// fit()'s batch of tensors on `device` (its string, as fit_device() gives it): list(x, y, n)
// with n the samples (y's first dim, 1 for a 0-d y); NULL for a batch that is not a plain list
// of two tensors by batch_parts(), which the R code then takes apart itself. One call and one
// list per batch instead of a dozen R calls and their allocations (Note [fit is the
// hand-written loop] in R/fit.R: nothing else changes).
extern "C" SEXP rc_fit_batch(SEXP batch, SEXP device) {
  RCUDA_BEGIN
  SEXP x, y;
  if (OBJECT(batch) || !batch_parts(batch, &x, &y)) return R_NilValue;
  if (!is_tensor(x) || !is_tensor(y) || is_undefined(x) || is_undefined(y)) return R_NilValue;
  const Device dev = device_arg(device);
  SEXP out = PROTECT(Rf_allocVector(VECSXP, 3));
  const Tensor& tx = unwrap(x);
  SET_VECTOR_ELT(out, 0, tx.device() == dev ? x : wrap(to(tx, dev, tx.dtype())));
  const Tensor& ty = unwrap(y);
  SET_VECTOR_ELT(out, 1, ty.device() == dev ? y : wrap(to(ty, dev, ty.dtype())));
  SET_VECTOR_ELT(out, 2, Rf_ScalarReal(ty.dim() == 0 ? 1.0 : static_cast<double>(ty.size(0))));
  UNPROTECT(1);
  return out;
  RCUDA_END
}

// fit()'s running training loss (Note [One read-back per phase] in R/fit.R). Each batch's loss
// is kept, detached, with its batch size: no launch and no handle for R per batch. Every
// kFoldEvery losses, and when the sum is read, they are folded into a float64 sum on their
// device with one stack, one product and one sum.
struct LossSum {
  static constexpr size_t kFoldEvery = 64;
  Tensor total;  // float64, 0-d, on the losses' device; undefined before the first fold
  std::vector<Tensor> held;
  std::vector<double> sizes;

  void fold() {
    if (held.empty()) return;
    NoGradGuard no_grad;
    const Tensor stacked = to(stack(held), DType::Float64);
    const bool same =
        std::all_of(sizes.begin(), sizes.end(), [&](double n) { return n == sizes[0]; });
    const Tensor weighted =
        same ? mul(sum(stacked), Scalar(sizes[0]))
             : sum(mul(stacked, to(from_data(sizes.data(), {static_cast<int64_t>(sizes.size())},
                                             DType::Float64),
                                   stacked.device())));
    total = total.defined() ? add(total, weighted) : weighted;
    held.clear();
    sizes.clear();
  }
};

extern "C" SEXP rc_loss_sum_new() {
  RCUDA_BEGIN
  return external_pointer(std::make_unique<LossSum>());
  RCUDA_END
}

extern "C" SEXP rc_loss_sum_add(SEXP ptr, SEXP loss, SEXP n) {
  RCUDA_BEGIN
  auto& s = external_object<LossSum>(ptr, "fit: the loss sum is gone");
  const Tensor& l = unwrap(loss);
  RCUDA_CHECK(l.numel() == 1, ValueError,
              "fit: loss_fn must return one value per batch (a mean or a sum), got a tensor of "
              "shape ",
              shape_str(l.shape()));
  s.held.push_back(reshape(autograd::detach(l), {}));
  s.sizes.push_back(Rf_asReal(n));
  if (s.held.size() >= LossSum::kFoldEvery) s.fold();
  return R_NilValue;
  RCUDA_END
}

// The sum so far as a 0-d float64 tensor on the losses' device (on `device` when none came).
extern "C" SEXP rc_loss_sum_value(SEXP ptr, SEXP device) {
  RCUDA_BEGIN
  auto& s = external_object<LossSum>(ptr, "fit: the loss sum is gone");
  s.fold();
  if (!s.total.defined()) return wrap(zeros({}, TensorOptions(DType::Float64, device_arg(device))));
  return wrap(s.total);  // later folds make a new total; this one stays as it is
  RCUDA_END
}

// metric_accuracy()'s update in place: correct (an int64 0-d tensor on pred's device) += the
// samples whose largest score sits at their 1-based class. One call and no handle per batch,
// where argmax, ==, reshape and sum from R cost a fit() on the GPU as much as its step.
extern "C" SEXP rc_accuracy_update(SEXP correct, SEXP pred, SEXP target) {
  RCUDA_BEGIN
  NoGradGuard no_grad;
  const Tensor& scores = unwrap(pred);
  const Tensor predicted = add(argmax(scores, 1), Scalar(1));
  add_(unwrap(correct), sum(eq(predicted, reshape(unwrap(target), {scores.size(0)}))));
  return R_NilValue;
  RCUDA_END
}

// The end of one of fit()'s evaluation batches: like an optimizer's step boundary, it releases
// the batch's activations that nothing references any more (Note [Unreferenced tensors are
// released at step boundaries]), which would otherwise wait for a collection.
extern "C" SEXP rc_release_point() {
  RCUDA_BEGIN
  gc_safe_point(kReleaseOnly);
  return R_NilValue;
  RCUDA_END
}
