// torch for R's gather, scatter, scatter_add, index_add and one_hot: dims and index values count
// from 1.
// The engine's ops (rcuda/autograd/api.h) record for autograd; the 1-based index becomes the
// engine's 0-based one with one subtraction on its device, so nothing is read back to the host.
// An index the engine finds out of range is its IndexError, on its device's terms (CUDA reports
// it at the next synchronisation, naming the op).
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

// The engine's 0-based index from torch for R's 1-based int64 one.
Tensor zero_based(SEXP index, const char* op, const char* arg = "index") {
  const Tensor& i = unwrap(index);
  RCUDA_CHECK(i.dtype() == DType::Int64, DTypeError, op, ": ", arg,
              " must be an int64 tensor (dtype = torch_long()), got ", dtype_name(i.dtype()));
  return sub(i, Scalar(int64_t{1}));
}

}  // namespace

// op: "gather" (src unused), "scatter" (src a tensor or a number), "scatter_add" (src a tensor)
// or "index_add" (src the source, index 1-D; alpha scales it).
extern "C" SEXP rc_scatter(SEXP op, SEXP x, SEXP dim, SEXP index, SEXP src, SEXP alpha) {
  RCUDA_BEGIN
  const std::string name = CHAR(STRING_ELT(op, 0));
  const char* fn = name.c_str();
  const Tensor& self = unwrap(x);
  const int64_t d = wrap_dim(dim_arg(dim, fn), std::max<int64_t>(self.dim(), 1), fn);
  const Tensor i = zero_based(index, fn);
  if (name == "gather") return wrap(gather(self, d, i));
  if (name == "scatter" && !is_tensor(src)) return wrap(scatter(self, d, i, scalar_arg(src, fn)));
  RCUDA_CHECK(is_tensor(src), ValueError, fn, ": src must be a tensor");
  const Tensor& s = unwrap(src);
  if (name == "scatter") return wrap(scatter(self, d, i, s));
  if (name == "scatter_add") return wrap(scatter_add(self, d, i, s));
  RCUDA_CHECK(name == "index_add", ValueError, "rc_scatter: unknown op ", name);
  // index_add(dim, index, source): self[..., index[j], ...] += alpha * source[..., j, ...], which
  // is scatter_add with the index laid along dim and expanded to the source's shape.
  RCUDA_CHECK(i.dim() <= 1, ShapeError, fn, ": index must be 1-D, got ", i.dim(), " dims");
  RCUDA_CHECK(s.dim() == self.dim(), ShapeError, fn, ": source must have self's ", self.dim(),
              " dims, got ", s.dim());
  const int64_t n = i.numel();
  RCUDA_CHECK(s.dim() == 0 ? n == 1 : s.size(d) == n, ShapeError, fn, ": the index has ", n,
              " elements but the source has ", s.dim() == 0 ? 1 : s.size(d), " along dim ", d + 1);
  const Scalar a = scalar_arg(alpha, fn);
  const Tensor scaled = a.to_double() == 1 ? s : mul(s, a);
  if (s.dim() == 0) return wrap(scatter_add(self, d, reshape(i, {}), scaled));
  Shape along(s.dim(), 1);
  along[d] = n;
  return wrap(scatter_add(self, d, reshape(i, along).expand(s.shape()), scaled));
  RCUDA_END
}

// torch for R's one_hot: classes 1..num_classes (num_classes -1: the largest class given) become
// int64 rows of num_classes with a 1 at the class.
extern "C" SEXP rc_one_hot(SEXP x, SEXP num_classes) {
  RCUDA_BEGIN
  return wrap(one_hot(zero_based(x, "nnf_one_hot", "tensor"),
                      static_cast<int64_t>(Rf_asReal(num_classes))));
  RCUDA_END
}
