#include "rcuda/core/shape.h"

#include <limits>

#include "rcuda/core/error.h"

namespace rcuda {

int64_t checked_numel(const Shape& shape, const char* op) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : shape) {
    RCUDA_CHECK(s >= 0, ShapeError, op, ": negative size ", s, " in shape ", shape_str(shape));
    if (s != 0 && n > std::numeric_limits<int64_t>::max() / s) overflow = true;
    n = overflow ? n : n * s;
  }
  for (int64_t s : shape)
    if (s == 0) return 0;
  RCUDA_CHECK(!overflow, ShapeError, op, ": shape ", shape_str(shape),
              " has more elements than int64 can count");
  return n;
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i] > 1 ? shape[i] : 1;
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  // A 0-dim tensor accepts dims 0 and -1, as torch.
  const int64_t n = ndim > 0 ? ndim : 1;
  RCUDA_CHECK(dim >= -n && dim < n, IndexError, op, ": dim ", dim, " out of range for a tensor of ",
              ndim, " dims (expected ", -n, " to ", n - 1, ")");
  return dim < 0 ? dim + n : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
    RCUDA_CHECK(sa == sb || sa == 1 || sb == 1, ShapeError, op, ": shapes ", shape_str(a), " and ",
                shape_str(b), " cannot be broadcast (", sa, " vs ", sb, " at dim ", i, ")");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

}  // namespace rcuda
