// Tensors with strides given by the user: torch_empty_strided() and torch_as_strided(). Sizes,
// strides and the offset count elements, as torch's; R/ has checked that they are whole numbers
// and that sizes and strides have the same length.
//
// Note [Strided extent]
// ~~~~~~~~~~~~~~~~~~~~~
// A view of `size` and `stride` from `offset` reaches storage elements offset up to offset +
// sum((size - 1) * stride), so it needs 1 + that many elements (none when a size is 0). The
// engine's as_strided does not check a view against its storage (its own callers derive the
// strides from a tensor they hold), so the glue does, before anything is made: a view past the
// end would read or write memory the tensor does not own.
#include "rcuda_r.h"

using namespace rcuda;
using namespace rcuda::r;

namespace {

// Note [Strided extent]. Overflow past int64 is an error naming `fn`, not a wrapped count.
int64_t strided_extent(const Shape& size, const Strides& stride, int64_t offset, const char* fn) {
  for (int64_t s : size)
    if (s == 0) return 0;
  int64_t last = offset;
  for (size_t d = 0; d < size.size(); ++d) {
    int64_t step = 0;
    const bool overflow = __builtin_mul_overflow(size[d] - 1, stride[d], &step) ||
                          __builtin_add_overflow(last, step, &last);
    RCUDA_CHECK(!overflow, ValueError, fn, ": size ", shape_str(size), " with stride ",
                shape_str(stride), " reaches past 2^63 elements");
  }
  return last + 1;
}

}  // namespace

// An uninitialised tensor of `size` and `stride` over a storage of its extent alone.
extern "C" SEXP rc_empty_strided(SEXP size, SEXP stride, SEXP dtype, SEXP device) {
  RCUDA_BEGIN
  const Shape shape = shape_arg(size);
  const Strides strides = shape_arg(stride);
  checked_numel(shape, "torch_empty_strided");
  const int64_t extent = strided_extent(shape, strides, 0, "torch_empty_strided");
  const TensorOptions options(dtype_arg(dtype).value_or(default_float_dtype()), device_arg(device));
  return wrap(empty({extent}, options).as_strided(shape, strides, 0));
  RCUDA_END
}

// A view of x's storage. The engine's AsStridedBackward writes the gradient through the view,
// which loses the sums where strides overlap and assumes a contiguous base, so a view that
// autograd would record is refused rather than given a gradient that may be wrong.
extern "C" SEXP rc_as_strided(SEXP x, SEXP size, SEXP stride, SEXP storage_offset) {
  RCUDA_BEGIN
  const Tensor& t = unwrap(x);
  RCUDA_CHECK(!(GradMode::is_enabled() && t.requires_grad()), ValueError,
              "torch_as_strided: input requires grad, and rcuda does not differentiate "
              "as_strided views (their gradient is wrong where strides overlap); call it on "
              "input$detach() or inside with_no_grad()");
  const Shape shape = shape_arg(size);
  const Strides strides = shape_arg(stride);
  const int64_t offset = static_cast<int64_t>(Rf_asReal(storage_offset));
  checked_numel(shape, "torch_as_strided");
  const int64_t extent = strided_extent(shape, strides, offset, "torch_as_strided");
  const auto available = static_cast<int64_t>(t.storage()->nbytes() / t.element_size());
  RCUDA_CHECK(extent <= available, ValueError, "torch_as_strided: size ", shape_str(shape),
              " with stride ", shape_str(strides), " and storage_offset ", offset, " reaches ",
              extent, " storage elements, but input's storage holds ", available);
  return wrap(t.as_strided(shape, strides, offset));
  RCUDA_END
}
