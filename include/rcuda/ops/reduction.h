// Reductions over any set of dims (negative dims allowed), with keepdim, plus softmax and cumsum.
// An empty `dims` list means every dim. Integral and bool sums give int64, as torch.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "rcuda/tensor/tensor.h"

namespace rcuda {
using Dims = std::vector<int64_t>;
}  // namespace rcuda

namespace rcuda::ops {

Tensor sum(const Tensor& x, const Dims& dims = {}, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& x, const Dims& dims = {}, bool keepdim = false);  // floating only
Tensor prod(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
// Over all elements (ValueError when empty).
Tensor max(const Tensor& x);
Tensor min(const Tensor& x);
// Along one dim: (values, int64 indices).
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
// Without dim: index into the flattened tensor.
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// correction 1 is Bessel's (torch's default unbiased); floating only.
Tensor var(const Tensor& x, const Dims& dims = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, const Dims& dims = {}, double correction = 1, bool keepdim = false);
// p-norm: p = 2 by default; inf, 0 and any p > 0 accepted.
Tensor norm(const Tensor& x, double p = 2, const Dims& dims = {}, bool keepdim = false);
Tensor logsumexp(const Tensor& x, const Dims& dims, bool keepdim = false);
Tensor all(const Tensor& x, const Dims& dims = {}, bool keepdim = false);
Tensor any(const Tensor& x, const Dims& dims = {}, bool keepdim = false);

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);
Tensor cumsum(const Tensor& x, int64_t dim);

}  // namespace rcuda::ops
