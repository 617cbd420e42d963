// x[...] <- value through the engine's index_put_ (Note [Index lists] in rcuda/ops/indexing.h),
// for indices that are not all views (indexing.R's put_indices).
//
// Note [R indices as an index list]
// R selects on each dim independently (x[c(1, 3), c(2, 4)] is a 2 x 2 block, base R's rule),
// while the engine's int64 indices broadcast together (numpy's pairing). So each R index gets
// dims of its own in the engine's broadcast shape: the k-th, of shape S_k, is reshaped to
// [1, ..] + S_k + [.., 1] with as many ones before (after) it as the indices before (after) it
// have dims. A whole dim between two indices becomes an arange in its own dim, so the indexed
// dims stay adjacent and the selection keeps R's order: whole dims before the first index,
// S_1, S_2, ..., whole dims after the last, exactly the shape x[...] reads.
#include <algorithm>

#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

// One R index: the int64 tensors of the dims it covers and the shape they stand for in the
// selection (none for a whole dim), or a bool mask over `dims` dims, which stands for [count].
struct RIndex {
  std::vector<Tensor> per_dim;
  Shape shape;
  Tensor mask;
  int64_t dims = 1;
};

// 1-based positions (checked by indexing.R) as a 0-based int64 tensor; the "shape" attribute is
// the selection's shape for them (integer(0): one position, its dim dropped).
RIndex positions_index(SEXP at, const Device& device) {
  const R_xlen_t n = Rf_xlength(at);
  std::vector<int64_t> zero_based(static_cast<size_t>(n));
  for (R_xlen_t i = 0; i < n; ++i) {
    const double v = TYPEOF(at) == INTSXP ? INTEGER(at)[i] : REAL(at)[i];
    zero_based[i] = static_cast<int64_t>(v) - 1;
  }
  SEXP shape_attr = Rf_getAttrib(at, Rf_install("shape"));
  RIndex out;
  out.shape = Rf_isNull(shape_attr) ? Shape{static_cast<int64_t>(n)} : shape_arg(shape_attr);
  out.per_dim.push_back(from_data(zero_based.data(), out.shape, DType::Int64, device));
  return out;
}

RIndex mask_index(const Tensor& mask) {
  RIndex out;
  out.mask = mask;
  out.dims = mask.dim();
  return out;
}

// A mask followed by other indices: the coordinates of its true elements, one int64 column per
// dim it covers, so that they can be placed like the other indices. (The last index may stay a
// mask: the engine's own expansion puts its count last, where it belongs.)
void expand_mask(RIndex& e) {
  const Tensor coords = nonzero(e.mask);
  e.shape = {coords.size(0)};
  for (int64_t j = 0; j < e.mask.dim(); ++j) e.per_dim.push_back(coords.select(1, j));
  e.mask = Tensor();
}

Shape padded(const Shape& shape, size_t before, size_t after) {
  Shape out(before, 1);
  out.insert(out.end(), shape.begin(), shape.end());
  out.insert(out.end(), after, 1);
  return out;
}

// value as index_put_ takes it: x's dtype and device, and (as torch for R) without the leading
// size-1 dims that the selection lacks, checked against the selection with R's message.
// (A number fits any selection.)
Tensor fitted_value(SEXP value, const Tensor& x, const Shape& selection) {
  if (!is_tensor(value)) return scalar_tensor(scalar_arg(value, "[<-"), x.dtype(), x.device());
  const Tensor& v = unwrap(value);
  Shape shape = v.shape();
  size_t lead = 0;
  while (shape.size() - lead > selection.size() && shape[lead] == 1) ++lead;
  shape.erase(shape.begin(), shape.begin() + static_cast<int64_t>(lead));
  bool fits = shape.size() <= selection.size();
  for (size_t i = 0; fits && i < shape.size(); ++i) {
    const int64_t want = selection[selection.size() - shape.size() + i];
    fits = shape[i] == 1 || shape[i] == want;
  }
  RCUDA_CHECK(fits, ShapeError, "`[<-`: a value of shape ", shape_str(v.shape()),
              " cannot be assigned to a selection of shape ", shape_str(selection));
  Tensor out =
      v.device() == x.device() && v.dtype() == x.dtype() ? v : to(v, x.device(), x.dtype());
  return lead == 0 ? out : reshape(out, shape);
}

}  // namespace

// In place: x[indices] <- value, where indices has one entry per dim of x: NULL (the whole dim),
// 1-based positions (see positions_index) or a bool tensor over as many dims as it has; value is
// a tensor or a number. Returns x.
extern "C" SEXP rc_index_put(SEXP x, SEXP indices, SEXP value) {
  RCUDA_BEGIN
  const Tensor& t = unwrap(x);
  std::vector<std::optional<RIndex>> entries;  // nullopt: a whole dim
  for (R_xlen_t i = 0; i < Rf_xlength(indices); ++i) {
    SEXP e = VECTOR_ELT(indices, i);
    if (Rf_isNull(e)) {
      entries.emplace_back(std::nullopt);
    } else if (is_tensor(e)) {
      entries.emplace_back(mask_index(unwrap(e)));
    } else {
      entries.emplace_back(positions_index(e, t.device()));
    }
  }
  size_t first = entries.size(), last = 0;  // the first and last entries that index
  for (size_t k = 0; k < entries.size(); ++k) {
    if (!entries[k]) continue;
    first = std::min(first, k);
    last = k;
  }
  // Note [R indices as an index list]: the whole dims before the first index stay whole
  // (nullopt), those between indices become aranges, those after the last are left out.
  IndexList list(std::min(first, entries.size()), std::nullopt);
  Shape selection(t.shape().begin(), t.shape().begin() + static_cast<int64_t>(list.size()));
  int64_t dim = static_cast<int64_t>(list.size());
  std::vector<RIndex*> indexed;
  for (size_t k = first; k < entries.size() && k <= last; ++k) {
    if (!entries[k]) {
      RIndex whole;
      whole.shape = {t.size(dim)};
      whole.per_dim.push_back(arange(0, t.size(dim), 1, DType::Int64, t.device()));
      entries[k] = std::move(whole);
    }
    indexed.push_back(&*entries[k]);
    dim += entries[k]->dims;
  }
  RCUDA_CHECK(dim <= t.dim(), ValueError, "`[<-`: ", dim, " indexed dims for a ", t.dim(),
              "-d tensor");
  const bool value_is_tensor = is_tensor(value);
  for (size_t k = 0; k + 1 < indexed.size(); ++k)
    if (indexed[k]->mask.defined()) expand_mask(*indexed[k]);
  if (!indexed.empty() && indexed.back()->mask.defined())  // its count, for the value's check
    indexed.back()->shape = {value_is_tensor ? item(sum(indexed.back()->mask)).to_int() : 0};
  size_t rank = 0;
  for (const RIndex* e : indexed) rank += e->shape.size();
  size_t before = 0;
  for (const RIndex* e : indexed) {
    const Shape shape = padded(e->shape, before, rank - before - e->shape.size());
    if (e->mask.defined()) list.emplace_back(e->mask);
    for (const Tensor& index : e->per_dim) list.emplace_back(reshape(index, shape));
    before += e->shape.size();
    selection.insert(selection.end(), e->shape.begin(), e->shape.end());
  }
  selection.insert(selection.end(), t.shape().begin() + dim, t.shape().end());
  index_put_(t, list, fitted_value(value, t, selection));
  return x;
  RCUDA_END
}
