// The sort family and the cumulative ops, as torch: sort, argsort, topk, kthvalue, median, mode,
// unique, randperm, bucketize, histc; cumprod, cummax, cummin, logcumsumexp. Dims are 0-based
// (negative from the end); indices are Int64 positions along the dim. Everything sorts through
// one backend primitive (Backend::sort, Note [Row primitives] in rcuda/backend/backend.h):
// stable, NaN above +inf. quantile, which torch differentiates through its sort, is in
// rcuda/autograd/api.h only (it composes the recording ops).
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "rcuda/ops/creation.h"
#include "rcuda/tensor/tensor.h"

namespace rcuda::ops {

// Sorted values and their indices along dim; always stable (stable = false is accepted, as torch
// allows any order of ties then). Half types sort through float32, bool through uint8.
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                               bool stable = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
// The k largest (or smallest) along dim, in order (sorted = false gives them sorted too);
// 0 <= k <= size.
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                               bool sorted = true);
// The k-th smallest along dim, k from 1 as torch; NaN counts as the largest.
std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim = -1,
                                   bool keepdim = false);
// The lower median along dim (the ((n - 1) / 2)-th smallest, 0-based); a slice with NaN gives NaN
// and the index of its first NaN, as torch. Without dim: over every element, values only.
std::pair<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor median(const Tensor& x);
// The most frequent value along dim (the smallest of equally frequent ones) and the index of
// its last occurrence.
std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t dim = -1, bool keepdim = false);

// The distinct elements of x (flattened), ascending; inverse (x's shape) maps each element to its
// position in values, counts (values' length) counts each. NaNs are all distinct, as torch. The
// output size is read on the host (a synchronisation on CUDA).
struct UniqueResult {
  Tensor values, inverse, counts;
};
UniqueResult unique(const Tensor& x);

// A random permutation of 0..n-1 (Int64 unless options say otherwise): the argsort of n draws
// from the default generator's Philox stream, so a seed gives the same permutation on every
// device.
Tensor randperm(int64_t n, TensorOptions options = TensorOptions(DType::Int64));

// For each element of x, the index of the bucket of the sorted 1-D boundaries it falls in:
// boundaries[i-1] < x <= boundaries[i] (right = false) or boundaries[i-1] <= x < boundaries[i]
// (right = true); Int64, or Int32 with out_int32. Computed as a count of boundaries below x
// (memory: x.numel() * boundaries.numel() flags).
Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool out_int32 = false,
                 bool right = false);
// Histogram of x (floating) in `bins` equal bins over [min, max]; min == max takes x's own
// range; elements outside, and NaN, are not counted; the last bin includes max.
Tensor histc(const Tensor& x, int64_t bins = 100, double min = 0, double max = 0);

// Running product, extremes and log-sum-exp along dim (keepdim shape = x's shape).
// cumprod: integral and bool input give int64, as torch. cummax/cummin: the indices of the
// running extreme (the latest on ties; NaN is sticky). logcumsumexp: floating.
Tensor cumprod(const Tensor& x, int64_t dim);
std::pair<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
std::pair<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);
Tensor logcumsumexp(const Tensor& x, int64_t dim);
// The gradients of cumprod and logcumsumexp from the forward's input and output
// (Backend::cumulative_backward): the backward nodes call these.
Tensor cumprod_backward(const Tensor& grad, const Tensor& x, const Tensor& out, int64_t dim);
Tensor logcumsumexp_backward(const Tensor& grad, const Tensor& x, const Tensor& out, int64_t dim);

}  // namespace rcuda::ops
