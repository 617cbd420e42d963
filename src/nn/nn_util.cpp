#include "nn_util.h"

namespace rcuda::nn::detail {

Reduction parse_reduction(const char* op, const std::string& reduction, bool allow_batchmean) {
  if (reduction == "none") return Reduction::None;
  if (reduction == "mean") return Reduction::Mean;
  if (reduction == "sum") return Reduction::Sum;
  if (allow_batchmean && reduction == "batchmean") return Reduction::BatchMean;
  throw ValueError(rcuda::detail::concat(
      op, ": reduction must be \"none\", \"mean\"",
      allow_batchmean ? ", \"sum\" or \"batchmean\"" : " or \"sum\"", ", got \"", reduction, "\""));
}

Tensor reduce(const Tensor& losses, Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return losses;
    case Reduction::Mean:
      return mean(losses);
    case Reduction::Sum:
      return sum(losses);
    case Reduction::BatchMean:
      break;
  }
  throw InternalError("reduce: batchmean is kl_div's own and handled there");
}

void check_floating(const char* op, const char* arg, const Tensor& t) {
  RCUDA_CHECK(t.defined(), ValueError, op, ": ", arg, " is undefined");
  RCUDA_CHECK(is_floating(t.dtype()) && !is_float8(t.dtype()), DTypeError, op, ": ", arg,
              " must be a floating tensor (float16, bfloat16, float32 or float64), got ",
              dtype_name(t.dtype()));
}

void check_same_device(const char* op, const char* arg, const Tensor& t, const char* reference_arg,
                       const Tensor& reference) {
  RCUDA_CHECK(t.device() == reference.device(), DeviceError, op, ": ", arg, " is on ",
              t.device().str(), " but ", reference_arg, " is on ", reference.device().str());
}

void check_broadcasts_to(const char* op, const char* arg, const Tensor& t, const Shape& shape) {
  bool fits = t.dim() <= static_cast<int64_t>(shape.size());
  for (int64_t i = 1; fits && i <= t.dim(); ++i) {
    const int64_t have = t.shape()[t.dim() - i], want = shape[shape.size() - i];
    fits = have == want || have == 1;
  }
  RCUDA_CHECK(fits, ShapeError, op, ": ", arg, " of shape ", shape_str(t.shape()),
              " does not broadcast to the input's shape ", shape_str(shape));
}

void check_index_range(const char* op, const char* arg, const Tensor& indices, int64_t size,
                       const char* what, std::optional<int64_t> ignore) {
  if (!indices.device().is_cpu() || indices.numel() == 0) return;
  NoGradGuard no_grad;
  const Tensor counted = ignore ? ops::masked_select(indices, ops::ne(indices, *ignore)) : indices;
  if (counted.numel() == 0) return;
  const int64_t smallest = ops::item(ops::min(counted)).to_int();
  const int64_t largest = ops::item(ops::max(counted)).to_int();
  const int64_t bad = smallest < 0 ? smallest : largest;
  RCUDA_CHECK(smallest >= 0 && largest < size, IndexError, op, ": ", arg, " ", bad,
              " is out of range for ", size, " ", what, " (expected 0 to ", size - 1,
              ignore ? rcuda::detail::concat(", or ignore_index ", *ignore) : std::string(), ")");
}

Shape along_dim(int64_t n, int64_t dim, int64_t ndim) {
  Shape shape(static_cast<size_t>(ndim), 1);
  shape[static_cast<size_t>(dim)] = n;
  return shape;
}

}  // namespace rcuda::nn::detail
