// Argument checks and small compositions shared by the functions of src/nn/. Every message
// names the function, the argument and the values (rcuda/core/error.h).
//
// Note [Safe branches of where]
// where(c, f(x), g(x)) sends a zero gradient to the branch it did not pick, and that zero then
// meets the branch's own derivative: 0 * inf is NaN where exp overflows or log meets 0. So a
// branch that can blow up is fed only the elements it is picked for, the others replaced by a
// harmless value first (binary_cross_entropy's clamped logs, kl_div's xlogy).
#pragma once

#include <optional>
#include <string>

#include "rcuda/autograd/api.h"
#include "rcuda/core/error.h"
#include "rcuda/tensor/autograd_meta.h"

namespace rcuda::nn::detail {

enum class Reduction { None, Mean, Sum, BatchMean };

// "none" | "mean" | "sum" (and "batchmean" where allow_batchmean); ValueError otherwise.
Reduction parse_reduction(const char* op, const std::string& reduction,
                          bool allow_batchmean = false);
// mean or sum of all elements, or the losses themselves for Reduction::None.
Tensor reduce(const Tensor& losses, Reduction reduction);

// DTypeError unless t is float16/bfloat16/float32/float64.
void check_floating(const char* op, const char* arg, const Tensor& t);
// DeviceError unless `t` is on `reference`'s device.
void check_same_device(const char* op, const char* arg, const Tensor& t, const char* reference_arg,
                       const Tensor& reference);
// ShapeError unless `t` broadcasts to exactly `shape` (the op's output must not grow).
void check_broadcasts_to(const char* op, const char* arg, const Tensor& t, const Shape& shape);

// IndexError unless every element of the int64 tensor `indices` other than `ignore` lies in
// [0, size) (`size` counts `what`: "classes", "embeddings"). Reads the values only on the CPU: on
// the GPU it would synchronise, and the indexing kernels check their indices there anyway (Note
// [Index bounds on the GPU]).
void check_index_range(const char* op, const char* arg, const Tensor& indices, int64_t size,
                       const char* what, std::optional<int64_t> ignore = std::nullopt);

// 1 - x, differentiable through binary ops with a number.
inline Tensor one_minus(const Tensor& x) { return add(mul(x, -1.0), 1.0); }

// Shape [1, ..., n, ..., 1] of `ndim` dims with n at `dim`: a per-class vector seen along dim.
Shape along_dim(int64_t n, int64_t dim, int64_t ndim);

}  // namespace rcuda::nn::detail
